"""Owns the commands ralph.sh did not have (install, status, ctl, report, doctor): the only
library modules that print and return exit codes."""

"""Owns the commands ralph.sh did not have (install, status, ctl): the only library modules
that print and return exit codes."""

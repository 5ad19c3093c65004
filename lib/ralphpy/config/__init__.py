"""Owns the settings of a run: one table of every setting (flag, environment variable,
ralph.yml key, default, check, help), parsing of the command line and ralph.yml, and durations."""

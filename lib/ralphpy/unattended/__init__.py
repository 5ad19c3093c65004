"""Owns what keeps a run safe without a person watching: outcome of each session, usage
limits and their waits, breakers and budgets, log rotation and the ctl sentinels."""

"""Owns notifications: which run events a user is told about (run end, breaker or budget stop,
usage-limit waits, held tasks, scope changes) and their delivery (a command, a webhook, the desktop)
on background threads, so that a failing or hanging notifier never slows the run."""

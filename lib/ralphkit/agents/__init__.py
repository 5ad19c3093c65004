"""Owns the agent CLIs: one adapter per CLI (argv, environment, stdin) and the renderers of
their output streams. Knows nothing of sessions, runs or tasks."""

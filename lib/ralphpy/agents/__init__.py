"""Owns the agent CLIs: one adapter per CLI (argv, environment, stdin), the renderers of their
output streams, the words of a CLI's own refusal of a session, and which release of a CLI ran
a session. Knows nothing of sessions, runs or tasks."""

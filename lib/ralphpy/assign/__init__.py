"""Owns assignment mode: ralph claims the task, renders the anti-drift prompt, keeps the task
files and the inbox, and settles the task after the session."""

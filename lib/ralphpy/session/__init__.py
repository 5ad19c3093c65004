"""Owns one agent session: its process group, the output pump, timeouts, the write-ahead pid
file, respawn safety and fresh context. A single session is a pool of one."""

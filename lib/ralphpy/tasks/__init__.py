"""Owns nothing itself: the package of the embedded task backlog (SQLite store, markdown-KV
rendering, the `task` CLI). Entry point: `ralphpy.tasks.cli.main`. Importing this package
imports nothing else, so the task CLI starts fast ("starts fast")."""

__all__: list[str] = []

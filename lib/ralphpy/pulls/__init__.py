"""Owns `--pr` (docs/github.md): a pull request per finished task, its checks and reviews
waited for between sessions, their word fed back into the task, and the merge."""

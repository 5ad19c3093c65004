"""Owns the task CLI's failure type: one message line, an optional `Usage:` line and the exit
code of docs/contract/task-cli.md s.1 (1 usage/validation/state, 2 not found or nothing eligible).
Does not print; cli.py prints once."""
from __future__ import annotations

from ralphpy.errors import EXIT_USAGE, RalphError

EXIT_NOT_FOUND = 2  # docs/contract/task-cli.md s.1: "not found" and "nothing eligible"


class TaskError(RalphError):
    """A task CLI failure. `plain` drops the `Error: ` prefix (claim's `No eligible tasks`)."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE, *, usage: str | None = None,
                 plain: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.usage = usage
        self.plain = plain

    def lines(self) -> str:
        text = self.message if self.plain else f"Error: {self.message}"
        if self.usage:
            text += f"\nUsage: {self.usage}"
        return text + "\n"


def not_found(what: str) -> TaskError:
    return TaskError(what, EXIT_NOT_FOUND)


__all__ = ["TaskError", "EXIT_NOT_FOUND", "not_found"]

"""Owns the argument rules shared by the commands (docs/contract/task-cli.md s.1 "Arguments"): a
value flag takes the next argument verbatim even when it starts with `-`; a flag without its value
and an unrecognised argument are one-line errors (exit 1). Also the digit checks. Does not own
which flags a command has."""
from __future__ import annotations


from ralphpy.tasks.errors import TaskError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Sequence


def flags(args: Sequence[str], values: Sequence[str] = (), switches: Sequence[str] = ()) -> dict:
    """Parse flags only; returns {flag: value or True}, later occurrences winning."""
    parsed: dict[str, object] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in values:
            if i + 1 >= len(args):
                raise TaskError(f"{arg} requires a value")
            parsed[arg] = args[i + 1]
            i += 2
        elif arg in switches:
            parsed[arg] = True
            i += 1
        else:
            raise TaskError(f"unknown flag '{arg}'")
    return parsed


def optional_id(args: Sequence[str]) -> tuple[str | None, Sequence[str]]:
    """The first argument is the id unless it starts with `--` (claim, renew, s.9.4-9.5)."""
    if args and not args[0].startswith("--"):
        return args[0], args[1:]
    return None, args


def digits(value: str) -> bool:
    return value.isascii() and value.isdigit()


def lease(parsed: dict) -> int:
    value = parsed.get("--lease", "600")
    if not digits(value):
        raise TaskError(f"--lease must be a non-negative integer, got: {value}")
    if int(value) > _MAX_LEASE:  # SQLite's datetime() gives NULL past year 9999: a lost task
        raise TaskError(f"--lease is too large (at most {_MAX_LEASE} seconds), got: {value}")
    return int(value)


_MAX_LEASE = 99_999_999_999


__all__ = ["flags", "optional_id", "digits", "lease"]

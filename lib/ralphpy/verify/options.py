"""Owns reading the verify settings (rows `verify`, `verify_timeout`, `tamper`, `protect` of
config's table, merged there into `Options`) into one value, and a task's own `verify:` line.
Knows nothing of running commands or of the loop."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

DEFAULT_TIMEOUT_S = 600.0
# a task meant to change what the tests say (`/ralph-plan` writes the line): judged by the
# session's tests alone (docs/verify.md)
_MAY_CHANGE = re.compile(r"^[ \t>*-]*tests:[ \t]*may change\b", re.M | re.I)
_TASK_LINE = re.compile(r"^[ \t>*-]*verify:[ \t]*(?P<cmd>\S.*?)[ \t]*$", re.M | re.I)


@dataclass(frozen=True)
class VerifyOptions:
    command: str | None = None          # --verify / ralph.yml `verify:`
    timeout_s: float = DEFAULT_TIMEOUT_S
    tamper: str = "hold"                # hold | warn | off
    protect: tuple[str, ...] = ()

    @property
    def armed(self) -> bool:
        """Configured for every task (a task's own `verify:` line arms it for that task)."""
        return bool(self.command or self.protect)


def read(values: Any) -> VerifyOptions:
    """From config's `Options` or a mapping of the same names; `protect` a list (a resumed
    run's state) or one text of globs separated by spaces or commas."""
    get = values.get if isinstance(values, Mapping) else (lambda name: getattr(values, name, None))
    protect = get("protect") or ()
    if isinstance(protect, str):
        protect = protect.replace(",", " ").split()
    return VerifyOptions(command=(get("verify") or None),
                         timeout_s=float(get("verify_timeout") or DEFAULT_TIMEOUT_S),
                         tamper=str(get("tamper") or "hold"),
                         protect=tuple(protect))


def task_command(description: str | None) -> str | None:
    """The command of a `verify: CMD` line in a task's description (the first one), if any."""
    match = _TASK_LINE.search(description or "")
    return match.group("cmd") if match else None


def tests_may_change(description: str | None) -> bool:
    """A `tests: may change` line in a task's description: a behaviour change."""
    return bool(_MAY_CHANGE.search(description or ""))


__all__ = ["VerifyOptions", "read", "task_command", "tests_may_change"]

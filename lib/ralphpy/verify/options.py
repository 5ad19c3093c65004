"""Owns reading the verify settings (rows `verify`, `verify_timeout`, `tamper`, `protect` of
config's table, merged there into `Options`) into one value, and a task's own `verify:` line.
Knows nothing of running commands or of the loop."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from ralphpy.config.table import BY_NAME

# a task meant to change what the tests say (`/ralph-plan` writes the line): judged by the
# session's tests alone (docs/verify.md)
_MAY_CHANGE = re.compile(r"^[ \t>*-]*tests:[ \t]*may change\b", re.M | re.I)
_TASK_LINE = re.compile(r"^[ \t>*-]*verify:[ \t]*(?P<cmd>\S.*?)[ \t]*$", re.M | re.I)


@dataclass(frozen=True)
class VerifyOptions:
    command: str | None                 # --verify / ralph.yml `verify:`
    timeout_s: float
    tamper: str                         # hold | warn | off
    protect: tuple[str, ...]

    @property
    def armed(self) -> bool:
        """Configured for every task (a task's own `verify:` line arms it for that task)."""
        return bool(self.command or self.protect)


def read(values: Any) -> VerifyOptions:
    """From config's `Options` (its list of globs a list in a resumed run's state), or a
    mapping of some of the same names, the settings table's defaults for the others."""
    def get(name: str) -> Any:
        return values.get(name, BY_NAME[name].default) if isinstance(values, Mapping) \
            else getattr(values, name)
    return VerifyOptions(get("verify") or None, float(get("verify_timeout")), get("tamper"),
                         tuple(get("protect")))


def task_command(description: str | None) -> str | None:
    """The command of a `verify: CMD` line in a task's description (the first one), if any."""
    match = _TASK_LINE.search(description or "")
    return match.group("cmd") if match else None


def tests_may_change(description: str | None) -> bool:
    """A `tests: may change` line in a task's description: a behaviour change."""
    return bool(_MAY_CHANGE.search(description or ""))


__all__ = ["VerifyOptions", "read", "task_command", "tests_may_change"]

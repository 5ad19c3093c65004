"""Owns reading the verify settings (rows `verify`, `verify_timeout`, `tamper`, `protect` of
config's table, merged there) into one value, and a task's own `verify:` line. Knows nothing
of running commands or of the loop."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

DEFAULT_TIMEOUT_S = 600.0
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


def read(values: Mapping[str, Any]) -> VerifyOptions:
    """From the settled options (`Options.extra`: CLI > environment > ralph.yml > default)."""
    protect = str(values.get("protect") or "").replace(",", " ").split()
    timeout = values.get("verify_timeout")
    return VerifyOptions(command=(values.get("verify") or None),
                         timeout_s=float(timeout) if timeout else DEFAULT_TIMEOUT_S,
                         tamper=str(values.get("tamper") or "hold"),
                         protect=tuple(protect))


def task_command(description: str | None) -> str | None:
    """The command of a `verify: CMD` line in a task's description (the first one), if any."""
    match = _TASK_LINE.search(description or "")
    return match.group("cmd") if match else None


__all__ = ["VerifyOptions", "read", "task_command"]

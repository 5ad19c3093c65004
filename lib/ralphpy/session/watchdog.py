"""Owns the two session deadlines (--session-timeout, default 60 min, and --idle-timeout,
default 15 min without agent output) as a pure policy over monotonic times.
Knows nothing of processes or signals: the session pump checks the policy and ends the group
(SIGTERM, a grace period, SIGKILL)."""
from __future__ import annotations

from dataclasses import dataclass

TIMEOUT = "timeout"
IDLE = "idle"


@dataclass(frozen=True)
class SessionTimeouts:
    """Deadlines in seconds; 0 or None turns one off."""

    session_s: float | None = 3600.0
    idle_s: float | None = 900.0

    def check(self, started: float, last_output: float, now: float) -> str | None:
        """TIMEOUT, IDLE or None for times from time.monotonic(). The session timeout wins
        when both are due: it is the harder limit."""
        if self.session_s and now - started >= self.session_s:
            return TIMEOUT
        if self.idle_s and now - last_output >= self.idle_s:
            return IDLE
        return None


__all__ = ["SessionTimeouts", "TIMEOUT", "IDLE"]

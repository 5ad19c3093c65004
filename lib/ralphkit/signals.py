"""Owns what SIGINT and SIGTERM mean to a run (ralph-cli.md s.16): outside an agent session
they raise `Interrupted` (so the run unwinds through its exit cleanup and exits 130); inside
one they are queued for the session, which forwards or escalates them (session.py). Knows
nothing of the agent or the loop, and never prints."""
from __future__ import annotations

import signal


class Interrupted(BaseException):
    """SIGINT or SIGTERM outside a session. A BaseException, like KeyboardInterrupt, so that
    no `except Exception` on the way (the in-process task CLI, say) swallows it."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Guard:
    """The armed handlers. `in_session` is set by session.run while an agent runs; `closing`
    by the exit cleanup, which must run exactly once and to its end (s.17)."""

    def __init__(self) -> None:
        self.pending: list[int] = []
        self.in_session = False
        self.closing = False
        self.interrupted = False       # any SIGINT/SIGTERM seen during this run

    def arm(self) -> None:
        signal.signal(signal.SIGINT, self._handler)
        signal.signal(signal.SIGTERM, self._handler)

    def _handler(self, signum: int, frame) -> None:
        self.interrupted = True
        if self.in_session or self.closing:
            self.pending.append(signum)   # handled by the session loop / ignored while closing
            return
        raise Interrupted(signum)


__all__ = ["Guard", "Interrupted"]

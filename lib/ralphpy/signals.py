"""Owns what SIGINT, SIGTERM and SIGHUP mean to a run. SIGINT/SIGTERM
(docs/contract/ralph-cli.md s.16): outside an agent session they raise `Interrupted` (so the run
unwinds through its exit cleanup and exits 130); inside one they are queued for the session, which
forwards or escalates them (session.py). SIGHUP is a graceful stop request: it only sets `hangup`,
the current session finishes and the loop ends the run cleanly. Knows nothing of the agent or the
loop, and never prints."""
from __future__ import annotations

import contextlib
import os
import signal
import threading
from typing import Iterator


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
        self.deferring = False         # inside deferred(): queue now, raise at its end
        self.interrupted = False       # any SIGINT/SIGTERM seen during this run
        self.hangup = False            # SIGHUP seen: stop gracefully after the current session
        self.terminated = False        # SIGTERM seen (ralph.py says so once, at the end)

    def arm(self) -> None:
        global _armed
        _armed = self
        signal.signal(signal.SIGINT, self._handler)
        signal.signal(signal.SIGTERM, self._handler)
        # SIGHUP = graceful stop (docs/decisions/0004), the session finishes and the run
        # exits cleanly; under `nohup` (SIGHUP ignored at start) it stays ignored.
        if signal.getsignal(signal.SIGHUP) is signal.SIG_DFL:
            signal.signal(signal.SIGHUP, self._hangup)
        # The agent runs in a process group of its own, i.e. in the background of the terminal:
        # an agent that sets terminal modes would be stopped by SIGTTOU and the run would hang.
        # An ignored signal stays ignored across exec, so every child inherits this.
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)

    def raise_pending(self) -> None:
        """Raise Interrupted for a signal that arrived inside a deferred() section."""
        if self.pending and not self.closing:
            raise Interrupted(self.pending[-1])

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """A short critical section (an in-process task call holding a database transaction):
        a signal inside it is queued, and raised at the next deferred() or session start, so
        the section's result (an agent id, say) is kept and cleaned up after."""
        if self.closing or self.in_session or self.deferring:
            yield
            return
        self.raise_pending()
        self.deferring = True
        try:
            yield
        finally:
            self.deferring = False

    def _hangup(self, signum: int, frame) -> None:
        self.hangup = True
        # The terminal is gone: writes to it would fail with EIO and cut the session short.
        # Output that goes to a terminal goes to /dev/null from here (a file or pipe, as
        # under nohup or CI, is kept).
        for fd in (1, 2):
            try:
                if os.isatty(fd):
                    null = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(null, fd)
                    os.close(null)
            except OSError:
                pass

    def _handler(self, signum: int, frame) -> None:
        self.interrupt(signum)

    def interrupt(self, signum: int) -> None:
        """What SIGINT or SIGTERM means now; also called for an interrupt that is no signal
        (closed_stdout: the reader of stdout went away). Another thread only queues it."""
        self.interrupted = True
        self.terminated = self.terminated or signum == signal.SIGTERM
        if self.in_session or self.closing or self.deferring or \
                threading.current_thread() is not threading.main_thread():
            self.pending.append(signum)   # handled by the session loop / ignored while closing
            return
        raise Interrupted(signum)


_armed: Guard | None = None          # the run's guard, once armed (safe_point finds it)


def terminated() -> bool:
    """Whether the run's guard saw SIGTERM (its one line is ralph.py's, at the end)."""
    return _armed is not None and _armed.terminated


@contextlib.contextmanager
def safe_point() -> Iterator[None]:
    """A wait inside a deferred() section that holds nothing (the task store's pause between
    two attempts to reach a lost server, no transaction open): a queued SIGINT/SIGTERM, or one
    arriving during the wait, interrupts it at once, as Ctrl+C stops the run's own store waits.
    Outside a run (the task CLI as a process), or in another thread (a heartbeat: the main
    thread may hold a transaction then), nothing changes."""
    guard = _armed
    if guard is None or not guard.deferring or \
            threading.current_thread() is not threading.main_thread():
        yield
        return
    guard.deferring = False
    try:
        guard.raise_pending()
        yield
    finally:
        guard.deferring = True


__all__ = ["Guard", "Interrupted", "safe_point", "terminated"]

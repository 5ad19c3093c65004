"""Owns running several agent sessions at once from one pump in the main thread (issue 8,
`--parallel N`): each session is started as session.py starts one (no shell, a process group
of its own, stdin /dev/null or bytes, explicit env and cwd, its own log, its own renderer),
and one poll loop reads every session's stdout pipe and the signal wakeup fd. Signals keep
s.16's meaning for all sessions together: the first SIGINT is forwarded once to every group
(the caller's callback prints the waiting message), a second SIGINT or a SIGTERM SIGKILLs
every group; no process of a group outlives its session. Issue 7's deadlines apply to each
session as in session.py: when its session or idle timeout runs out, its group alone gets
SIGTERM, then SIGKILL after the grace, checked in the same poll loop (the others run on).

Does not own choosing tasks, worktrees, prompts or printing (renderers write to the stream
the caller gives them). `signal.set_wakeup_fd` only works in the main thread, hence one pump.
"""
from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Callable, Mapping

from ralphkit.session import run as session
from ralphkit.session import watchdog
from ralphkit.session.run import (DRAIN_SECONDS, SessionResult, _has_exited, _killpg, _preexec,
                              _write_all)
from ralphkit.signals import Guard

_CHUNK = 65536


@dataclass
class _Running:
    key: str
    proc: subprocess.Popen
    log: BinaryIO
    renderer: Any
    result: SessionResult = field(default_factory=lambda: SessionResult(started=True))
    reading: bool = True
    exited_at: float | None = None
    killed_at: float | None = None
    started_at: float = field(default_factory=time.monotonic)
    last_output: float = field(default_factory=time.monotonic)
    term_at: float | None = None      # SIGTERM sent for a timeout; SIGKILL after the grace


class Pool:
    """Sessions by key. Use as a context manager: signals are queued on the guard (not
    raised) while the pool is open, and the wakeup fd is restored at the end."""

    def __init__(self, guard: Guard, on_first_interrupt: Callable[[], None], *,
                 timeouts: watchdog.SessionTimeouts | None = None,
                 kill_grace_s: float = 10.0) -> None:
        """timeouts: issue 7's per-session deadlines (None: none); kill_grace_s: SIGTERM to
        SIGKILL."""
        self.guard = guard
        self._on_first = on_first_interrupt
        self._timeouts = timeouts or watchdog.SessionTimeouts(None, None)
        self._grace = kill_grace_s
        self._running: dict[str, _Running] = {}
        self.interrupted = False         # a first SIGINT arrived: start nothing new
        self.forced = False              # every group was SIGKILLed

    def __enter__(self) -> "Pool":
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._old_wakeup = signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)
        self.guard.in_session = True
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill_all()
        self.guard.in_session = False
        signal.set_wakeup_fd(self._old_wakeup)
        os.close(self._wake_r)
        os.close(self._wake_w)

    def __len__(self) -> int:
        return len(self._running)

    def pids(self) -> dict[str, int]:
        return {key: run.proc.pid for key, run in self._running.items()}

    def start(self, key: str, argv: list[str], *, env: Mapping[str, str], cwd: Path,
              log_path: Path, renderer: Any, stdin: bytes | None = None,
              pidfile: Path | None = None) -> SessionResult | None:
        """Start one session; None when started, else the failed SessionResult (no log).
        pidfile: the agent records its pid there before exec (session_pidfile's handshake)."""
        log = open(log_path, "wb", buffering=0)
        try:
            with session.stdin_file(stdin) as agent_stdin:
                proc = subprocess.Popen(argv, stdin=agent_stdin, stdout=subprocess.PIPE,
                                        stderr=None, env=dict(env), process_group=0,
                                        bufsize=0, cwd=cwd, preexec_fn=_preexec(pidfile))
        except OSError as exc:
            log.close()
            log_path.unlink(missing_ok=True)
            return SessionResult(started=False, error=exc.strerror or str(exc))
        os.set_blocking(proc.stdout.fileno(), False)
        self._running[key] = _Running(key, proc, log, renderer)
        return None

    def handle_signals(self) -> None:
        while self.guard.pending:                               # s.16, for every session
            signum = self.guard.pending.pop(0)
            if signum == signal.SIGINT and not self.interrupted:
                self.interrupted = True
                self._on_first()
                for run in self._running.values():
                    run.result.interrupted = True
                    _killpg(run.proc.pid, signal.SIGINT)        # exactly one SIGINT each
            elif not self.forced:
                self.interrupted = self.forced = True
                for run in self._running.values():
                    run.result.interrupted = run.result.forced = True
                    _killpg(run.proc.pid, signal.SIGKILL)
                    run.killed_at = run.killed_at or time.monotonic()

    def wait(self) -> list[tuple[str, SessionResult]]:
        """Pump until at least one session has ended (or a signal arrived with nothing
        running); returns the ended sessions, each reaped, its log closed."""
        while True:
            self.handle_signals()
            if not self._running:
                return []
            fds = {run.proc.stdout.fileno(): run for run in self._running.values() if run.reading}
            poller = select.poll()
            for fd in fds:
                poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
            poller.register(self._wake_r, select.POLLIN)
            for fd, _ in poller.poll(50):
                if fd == self._wake_r:
                    try:
                        os.read(self._wake_r, 512)
                    except BlockingIOError:
                        pass
                    continue
                run = fds[fd]
                try:
                    chunk = os.read(fd, _CHUNK)
                except BlockingIOError:
                    continue
                if chunk:
                    run.last_output = time.monotonic()
                    _write_all(run.log, chunk)
                    run.renderer.feed(chunk)
                else:
                    run.reading = False
            now = time.monotonic()
            self._deadlines(now)
            ended = self._reap(now)
            if ended:
                return ended

    def _deadlines(self, now: float) -> None:
        """Issue 7, per session, as session._pump does it (not watchdog.terminate_group: it
        blocks for the grace, and the other sessions' pipes must be read meanwhile)."""
        for run in self._running.values():
            if run.exited_at is not None or run.result.forced:
                continue
            if run.term_at is None:
                due = self._timeouts.check(run.started_at, run.last_output, now)
                if due is not None:
                    run.result.timed_out = due == watchdog.TIMEOUT
                    run.result.idle_out = due == watchdog.IDLE
                    _killpg(run.proc.pid, signal.SIGTERM)
                    run.term_at = now
            elif run.killed_at is None and now - run.term_at >= self._grace:
                _killpg(run.proc.pid, signal.SIGKILL)           # the grace ran out
                run.killed_at = now

    def _reap(self, now: float) -> list[tuple[str, SessionResult]]:
        ended = []
        for key, run in list(self._running.items()):
            if run.exited_at is None and _has_exited(run.proc.pid):
                run.exited_at = now
            done = run.exited_at is not None and not run.reading
            if run.exited_at is not None and run.killed_at is None and \
                    now - run.exited_at > DRAIN_SECONDS:
                _killpg(run.proc.pid, signal.SIGKILL)           # a grandchild holds the pipe
                run.killed_at = now
            if run.killed_at is not None and run.reading and now - run.killed_at > DRAIN_SECONDS:
                done = True                                     # held from outside the group
            if done:
                ended.append((key, self._finish(run)))
        return ended

    def _finish(self, run: _Running) -> SessionResult:
        del self._running[run.key]
        _killpg(run.proc.pid, signal.SIGKILL)                   # nothing of the group outlives it
        run.result.returncode = run.proc.wait()
        run.proc.stdout.close()
        run.log.close()
        run.renderer.close()
        run.result.summary = run.renderer.summary
        return run.result

    def kill_all(self) -> list[tuple[str, SessionResult]]:
        """SIGKILL every group and reap (an error or the end of the run)."""
        for run in self._running.values():
            _killpg(run.proc.pid, signal.SIGKILL)
        return [(run.key, self._finish(run)) for run in list(self._running.values())]


class PrefixWriter:
    """A binary stream that writes complete lines to `out` as `[<name>] line`, so several
    sessions' renderings interleave line by line and stay readable."""

    def __init__(self, out: BinaryIO, name: str) -> None:
        self._out = out
        self._prefix = f"[{name}] ".encode()
        self._partial = b""

    def write(self, data: bytes) -> int:
        lines = (self._partial + bytes(data)).split(b"\n")
        self._partial = lines.pop()
        if lines:
            self._out.write(b"".join(self._prefix + line + b"\n" for line in lines))
        return len(data)

    def flush(self) -> None:
        self._out.flush()

    def close(self) -> None:
        if self._partial:
            self._out.write(self._prefix + self._partial + b"\n")
            self._partial = b""
        self._out.flush()


__all__ = ["Pool", "PrefixWriter"]

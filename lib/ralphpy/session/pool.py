"""Owns the session pump (docs/contract/ralph-cli.md s.11, s.12, s.16): one or several agent
sessions at once (`--parallel N`; a single session is a pool of one), each started by
session/group.py with its own log and renderer, and one poll loop in the main thread that copies
every byte of each agent's stdout to its log and renderer as it arrives (an agent's stderr too when
its adapter reads it: session/stderr_tee.py) and watches the signal wakeup fd.
Signals keep s.16's meaning for all sessions together: the first SIGINT is forwarded once to
every group (the caller's callback prints the waiting message), a second SIGINT or a SIGTERM
SIGKILLs every group. When a session's --session-timeout or --idle-timeout runs out, its group
alone gets SIGTERM, then SIGKILL after the grace (the others run on). No process of a group
outlives its session, nor does one that left the group (strays.py). A session's
heartbeat (fleet stores) is ticked on each turn.

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

from ralphpy import strays
from ralphpy.errors import EnvironmentFailure
from ralphpy.session import group
from ralphpy.session import watchdog
from ralphpy.session.stderr_tee import StderrTee
from ralphpy.signals import Guard

# After the agent exits, a grandchild may still hold its stdout open: read on for this long,
# then SIGKILL the group; if the pipe is still open after as long again (a process that left
# the group), stop reading. Keeps a session from hanging past its agent.
DRAIN_SECONDS = 1.0
_CHUNK = 65536


@dataclass
class SessionResult:
    started: bool                     # False: the agent could not be started (error says why)
    interrupted: bool = False         # a SIGINT or SIGTERM arrived during the session (exit 130)
    forced: bool = False              # the group was SIGKILLed (second SIGINT, SIGTERM)
    returncode: int | None = None     # ignored by the loop (s.11)
    summary: object | None = None     # the renderer's summary
    error: str = ""
    timed_out: bool = False           # --session-timeout ran out, the group was ended
    idle_out: bool = False            # no output for --idle-timeout, the group was ended
    heartbeat: Any = None             # session.heartbeat.Heartbeat: ticked while the agent runs
    strays: list[str] = field(default_factory=list)   # killed outside the group (strays.py)
    stderr_tail: str = ""             # the agent's last stderr lines, when they were read


def _write_all(log: BinaryIO, data: bytes) -> None:
    """Unbuffered, so each chunk is on disk as it arrives; a raw write may be partial."""
    view = memoryview(data)
    try:
        while view:
            view = view[log.write(view):]
    except OSError as exc:            # disk full, quota: the agent is killed and we stop
        raise EnvironmentFailure(f"cannot write the session log {log.name}: {exc.strerror}; "
                                 "free space or check that .ralph/ is writable") from None


@dataclass
class _Running:
    key: str
    proc: subprocess.Popen
    log: BinaryIO
    renderer: Any
    pidfd: int | None = None
    result: SessionResult = field(default_factory=lambda: SessionResult(started=True))
    reading: bool = True
    exited_at: float | None = None
    killed_at: float | None = None
    started_at: float = 0.0
    last_output: float = 0.0          # the start, until the agent prints
    term_at: float | None = None      # SIGTERM sent for a timeout; SIGKILL after the grace
    tag: str = ""                     # the session's strays.ENV
    err: StderrTee | None = None      # the agent's stderr, when it is read

    @property
    def pipes_open(self) -> bool:
        return self.reading or bool(self.err and self.err.open)


class Pool:
    """Sessions by key. Use as a context manager: signals are queued on the guard (not
    raised) while the pool is open, and the wakeup fd is restored at the end."""

    def __init__(self, guard: Guard, on_first_interrupt: Callable[[], None], *,
                 timeouts: watchdog.SessionTimeouts | None = None,
                 kill_grace_s: float = 10.0, stderr_to: int = 2) -> None:
        """timeouts: the per-session deadlines (None: none); kill_grace_s: SIGTERM to SIGKILL;
        stderr_to: where an agent's stderr that is read goes on to (ralph's own)."""
        self.guard = guard
        self._stderr_to = stderr_to
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
        try:
            self.kill_all()
        finally:
            self.guard.in_session = False
            signal.set_wakeup_fd(self._old_wakeup)
            os.close(self._wake_r)
            os.close(self._wake_w)

    def __len__(self) -> int:
        return len(self._running)

    def pids(self) -> dict[str, int]:
        return {key: run.proc.pid for key, run in self._running.items()}

    def start(self, key: str, argv: list[str], *, env: Mapping[str, str], cwd: Path | None,
              log_path: Path, renderer: Any, stdin: bytes | None = None,
              pidfile: Path | None = None, heartbeat: Any = None,
              read_stderr: bool = False) -> SessionResult | None:
        """Start one session; None when started, else the failed SessionResult (no log).
        pidfile: the agent records its pid there before exec (session/pidfile.py).
        read_stderr: its stderr is passed on and its tail kept (result.stderr_tail)."""
        try:
            log = open(log_path, "wb", buffering=0)
        except OSError as exc:
            raise EnvironmentFailure(f"cannot write the session log {log_path}: {exc.strerror}; "
                                     "check that .ralph/ is writable") from None
        try:
            tag = strays.new_tag()
            proc = group.spawn(argv, env=env, cwd=cwd, stdin=stdin, pidfile=pidfile, tag=tag,
                               read_stderr=read_stderr)
        except OSError as exc:
            log.close()
            log_path.unlink(missing_ok=True)            # no session, no log
            return SessionResult(started=False, error=exc.strerror or str(exc))
        now = time.monotonic()
        err = StderrTee(proc.stderr.fileno(), self._stderr_to) if read_stderr else None
        self._running[key] = _Running(key, proc, log, renderer, group.pidfd(proc.pid),
                                      SessionResult(True, heartbeat=heartbeat),
                                      started_at=now, last_output=now, tag=tag, err=err)
        return None

    def handle_signals(self) -> None:
        while self.guard.pending:                               # s.16, in arrival order
            signum = self.guard.pending.pop(0)
            if signum == signal.SIGINT and not self.interrupted:
                self.interrupted = True
                self._on_first()                                # the waiting message
                for run in self._running.values():
                    run.result.interrupted = True
                    group.signal_group(run.proc.pid, signal.SIGINT)     # exactly one SIGINT
            elif not self.forced:                               # second SIGINT, or SIGTERM
                self.interrupted = self.forced = True
                for run in self._running.values():
                    run.result.interrupted = run.result.forced = True
                    group.signal_group(run.proc.pid, signal.SIGKILL)
                    run.killed_at = run.killed_at or time.monotonic()

    def wait(self) -> list[tuple[str, SessionResult]]:
        """Pump until at least one session has ended (or a signal arrived with nothing
        running); returns the ended sessions, each reaped, its log closed."""
        while True:
            self.handle_signals()
            if not self._running:
                return []
            self._poll()
            now = time.monotonic()
            self._deadlines(now)
            ended = self._reap(now)
            if ended:
                return ended

    def _poll(self) -> None:
        """Wait up to 50 ms for output, an exit or a signal; copy what arrived."""
        pipes = {run.proc.stdout.fileno(): run for run in self._running.values() if run.reading}
        # stderr is no output for --idle-timeout: a CLI that only logs there is idle
        errs = {r.err.source: r.err for r in self._running.values() if r.err and r.err.open}
        exits = {run.pidfd for run in self._running.values()
                 if run.pidfd is not None and run.exited_at is None}
        poller = select.poll()
        for fd in (*pipes, *errs):
            poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        for fd in (*exits, self._wake_r):
            poller.register(fd, select.POLLIN)
        for fd, _ in poller.poll(50):
            if fd == self._wake_r:
                try:
                    os.read(self._wake_r, 512)
                except BlockingIOError:
                    pass
            elif fd in errs:
                errs[fd].pump()
            elif fd in pipes:
                run = pipes[fd]
                try:
                    chunk = os.read(fd, _CHUNK)
                except BlockingIOError:
                    continue
                if chunk:
                    run.last_output = time.monotonic()
                    _write_all(run.log, chunk)
                    run.renderer.feed(chunk)
                else:
                    run.reading = False                 # EOF; a pidfd needs nothing: see _reap

    def _deadlines(self, now: float) -> None:
        """Per session: SIGTERM when a deadline passed or the renderer asks to stop (`abort`:
        the agent retries a failed login), SIGKILL once the grace ran out. Never
        blocks for the grace: every pipe must be read meanwhile (an agent may be blocked
        writing) and s.16's signals honoured."""
        for run in self._running.values():
            if run.exited_at is not None or run.result.forced:
                continue
            if run.result.heartbeat is not None:
                run.result.heartbeat.tick(now)          # starts or reaps a beat, never waits
            if run.term_at is None and getattr(run.renderer, "abort", None):
                group.signal_group(run.proc.pid, signal.SIGTERM)    # e.g. retrying a bad key
                run.term_at = now
            if run.term_at is None:
                due = self._timeouts.check(run.started_at, run.last_output, now)
                if due is not None:
                    run.result.timed_out = due == watchdog.TIMEOUT
                    run.result.idle_out = due == watchdog.IDLE
                    group.signal_group(run.proc.pid, signal.SIGTERM)
                    run.term_at = now
            if run.term_at is not None and run.killed_at is None \
                    and now - run.term_at >= self._grace:
                group.signal_group(run.proc.pid, signal.SIGKILL)        # the grace ran out
                run.killed_at = now

    def _reap(self, now: float) -> list[tuple[str, SessionResult]]:
        ended = []
        for key, run in list(self._running.items()):
            if run.exited_at is None and group.has_exited(run.proc.pid):
                run.exited_at = now
            done = run.exited_at is not None and not run.pipes_open
            if run.exited_at is not None and run.killed_at is None and \
                    now - run.exited_at > DRAIN_SECONDS:
                group.signal_group(run.proc.pid, signal.SIGKILL)    # a grandchild holds the pipe
                run.killed_at = now
            if run.killed_at is not None and run.pipes_open and \
                    now - run.killed_at > DRAIN_SECONDS:
                done = True                                     # held from outside the group
            if done:
                ended.append((key, self._finish(run)))
        return ended

    def _finish(self, run: _Running, *, render: bool = True) -> SessionResult:
        del self._running[run.key]
        group.signal_group(run.proc.pid, signal.SIGKILL)        # nothing of the group outlives it
        run.result.strays = strays.kill(run.tag, run.proc.pid)  # nor what left the group
        if run.result.heartbeat is not None:                    # a beat in flight is killed
            run.result.heartbeat.stop()
        try:
            run.result.returncode = run.proc.wait()
        finally:
            if run.pidfd is not None:
                os.close(run.pidfd)
            run.proc.stdout.close()
            if run.err is not None:
                run.proc.stderr.close()
                run.result.stderr_tail = run.err.tail()
            run.log.close()
        if render:
            run.renderer.close()
            run.result.summary = run.renderer.summary
        return run.result

    def abandon(self, key: str) -> None:
        """SIGKILL one session's group and reap it, rendering nothing more (its start could
        not be recorded: it must not run unwatched)."""
        self._finish(self._running[key], render=False)

    def kill_all(self) -> list[tuple[str, SessionResult]]:
        """SIGKILL every group and reap (an error or the end of the run)."""
        for run in self._running.values():
            group.signal_group(run.proc.pid, signal.SIGKILL)
        return [(run.key, self._finish(run)) for run in list(self._running.values())]


__all__ = ["Pool", "SessionResult", "DRAIN_SECONDS"]

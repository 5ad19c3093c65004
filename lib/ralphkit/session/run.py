"""Owns one agent session (ralph-cli.md s.11, s.12, s.16): start the agent without a shell in
a process group of its own (stdin /dev/null, stderr inherited, explicit environment), copy
every byte of its stdout to the session log and to the stream renderer as it arrives,
forward the first SIGINT to the group, SIGKILL the group on a second SIGINT or a SIGTERM,
end the group (SIGTERM, a grace period, SIGKILL) when a session or idle timeout
runs out or the renderer asks to stop (`abort`: the agent retries a failed login), and leave
no process of the group behind once the session is over. Knows nothing of prompts,
task calls or the loop; never prints (the waiting message is the caller's callback)."""
from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator, Mapping

from ralphkit.agents import claude_render as render
from ralphkit.session import pidfile as session_pidfile
from ralphkit.session import watchdog
from ralphkit.errors import EnvironmentFailure
from ralphkit.signals import Guard

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
    returncode: int | None = None     # ignored by the loop (s.11); kept for later features
    summary: object | None = None     # render.SessionSummary
    error: str = ""
    timed_out: bool = False           # --session-timeout ran out, the group was ended
    idle_out: bool = False            # no output for --idle-timeout, the group was ended


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass                          # the group is already gone


def _has_exited(pid: int) -> bool:
    # WNOWAIT: the leader stays a zombie, so its pgid cannot be reused before we kill the group.
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _write_all(log: BinaryIO, data: bytes) -> None:
    """Unbuffered, so each chunk is on disk as it arrives; a raw write may be partial."""
    view = memoryview(data)
    try:
        while view:
            view = view[log.write(view):]
    except OSError as exc:            # disk full, quota: the agent is killed (finally) and we stop
        raise EnvironmentFailure(f"cannot write the session log {log.name}: {exc.strerror}; "
                                 "free space or check that .ralph/ is writable") from None


def _die_with_parent() -> Callable[[], None] | None:
    """A preexec_fn asking Linux to SIGKILL the agent when ralph.py dies (PR_SET_PDEATHSIG), so
    a `kill -9` of ralph.py does not leave its agent working on a task nobody watches.
    Best effort: None where prctl is not available. The agent's own children are not covered;
    a resumed run kills the dead run's agent group (run_control)."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(1, signal.SIGKILL, 0, 0, 0)          # PR_SET_PDEATHSIG = 1
        if os.getppid() != parent:                 # ralph.py died before the call: go too
            os._exit(1)
    return preexec


def _preexec(pidfile: Path | None) -> Callable[[], None] | None:
    """The agent's preexec_fn: die with ralph.py, then (with a pid file) record its pid there
    before exec, or exit at once when a recovery came first (session_pidfile's handshake: a
    resumed run then knows the group even if ralph.py died before it saved the pid)."""
    steps = [step for step in (_die_with_parent(),
                               pidfile and session_pidfile.child_claim(pidfile)) if step]
    if not steps:
        return None

    def preexec() -> None:
        for step in steps:
            step()
    return preexec


def run(argv: list[str], *, env: Mapping[str, str], log_path: Path, out: BinaryIO,
        guard: Guard, on_first_interrupt: Callable[[], None], renderer: Any = None,
        stdin: bytes | None = None, cwd: Path | None = None,
        on_start: Callable[[int], None] | None = None,
        timeouts: watchdog.SessionTimeouts | None = None,
        kill_grace_s: float = 10.0, pidfile: Path | None = None) -> SessionResult:
    """Run one session to its end and return how it ended. `out` gets the rendering, through
    `renderer` (feed/close/summary; default s.12's StreamRenderer). `stdin`: bytes the agent
    reads on its stdin (issue 8 `command` backend), else /dev/null (s.11).
    on_start(pid) is called once the agent runs (the run state records it, issue 4).
    pidfile: the agent links "<pid> <start time>" there before exec (session_pidfile), for the
    window between its start and on_start.
    `timeouts`: when one runs out, the group gets SIGTERM, then SIGKILL after
    kill_grace_s; the result says timed_out or idle_out."""
    guard.raise_pending()             # a signal during the last task call: no new session (s.16)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    old_wakeup = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    guard.in_session = True
    try:
        try:
            log = open(log_path, "wb", buffering=0)
        except OSError as exc:
            raise EnvironmentFailure(f"cannot write the session log {log_path}: {exc.strerror}; "
                                     "check that .ralph/ is writable") from None
        with log:
            try:
                with stdin_file(stdin) as agent_stdin:
                    proc = subprocess.Popen(argv, stdin=agent_stdin, stdout=subprocess.PIPE,
                                            stderr=None, env=dict(env), process_group=0,
                                            bufsize=0, cwd=cwd, preexec_fn=_preexec(pidfile))
            except OSError as exc:
                log.close()
                log_path.unlink(missing_ok=True)      # no session, no log
                return SessionResult(started=False, error=exc.strerror or str(exc))
            if on_start is not None:
                try:
                    on_start(proc.pid)
                except BaseException:              # e.g. the state cannot be saved: no orphan
                    _killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    proc.stdout.close()
                    raise
            if renderer is None:
                renderer = render.StreamRenderer(out)
            result = _pump(proc, log, renderer, guard, on_first_interrupt, wake_r,
                           timeouts or watchdog.SessionTimeouts(None, None), kill_grace_s)
        if guard.pending:              # arrived as the agent ended: still this session's interrupt
            result.interrupted = True
        return result
    finally:
        guard.in_session = False
        signal.set_wakeup_fd(old_wakeup)
        os.close(wake_r)
        os.close(wake_w)


@contextlib.contextmanager
def stdin_file(data: bytes | None) -> Iterator[int]:
    """The agent's stdin: /dev/null (s.11), or `data` in an unlinked temp file (any size,
    no pipe to feed while we pump the agent's stdout, so no deadlock)."""
    if data is None:
        yield subprocess.DEVNULL
        return
    with tempfile.TemporaryFile() as fh:
        fh.write(data)
        fh.seek(0)
        yield fh.fileno()


def _pump(proc: subprocess.Popen, log: BinaryIO, renderer: Any, guard: Guard,
          on_first_interrupt: Callable[[], None], wake_r: int,
          timeouts: watchdog.SessionTimeouts, kill_grace_s: float) -> SessionResult:
    result = SessionResult(started=True)
    pgid = proc.pid                   # process_group=0: the agent leads its own group
    fd = proc.stdout.fileno()
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    poller.register(wake_r, select.POLLIN)
    try:                              # readable when the agent exits: no polling delay after EOF
        pidfd = os.pidfd_open(proc.pid)
        poller.register(pidfd, select.POLLIN)
    except (AttributeError, OSError):
        pidfd = None                  # older kernel: the 50 ms poll timeout notices the exit
    reading, exited_at, killed_at = True, None, None
    started = last_output = time.monotonic()
    term_at = None                    # SIGTERM sent for a timeout; SIGKILL after the grace
    try:
        while True:
            while guard.pending:                                  # s.16, in arrival order
                signum = guard.pending.pop(0)
                if signum == signal.SIGINT and not result.interrupted:
                    result.interrupted = True
                    on_first_interrupt()                          # the waiting message
                    _killpg(pgid, signal.SIGINT)                  # exactly one SIGINT to the agent
                elif not result.forced:                           # second SIGINT, or SIGTERM
                    result.interrupted = result.forced = True
                    _killpg(pgid, signal.SIGKILL)
                    killed_at = killed_at or time.monotonic()
            for ready, _ in poller.poll(50):
                if ready == wake_r:
                    try:
                        os.read(wake_r, 512)
                    except BlockingIOError:
                        pass
                elif ready == pidfd:
                    poller.unregister(pidfd)      # exited: checked below
                elif reading:
                    chunk = os.read(fd, _CHUNK)
                    if chunk:
                        last_output = time.monotonic()
                        _write_all(log, chunk)
                        renderer.feed(chunk)
                        if term_at is None and getattr(renderer, "abort", None):
                            _killpg(pgid, signal.SIGTERM)         # e.g. retrying a bad key
                            term_at = time.monotonic()
                    else:
                        reading = False
                        poller.unregister(fd)
            now = time.monotonic()
            if term_at is None and exited_at is None and not result.forced:
                # Not watchdog.terminate_group: it blocks for the grace period, and the pipe
                # must be read (the agent may be blocked writing) and s.16 signals honoured.
                due = timeouts.check(started, last_output, now)
                if due is not None:
                    result.timed_out, result.idle_out = due == watchdog.TIMEOUT, due == watchdog.IDLE
                    _killpg(pgid, signal.SIGTERM)
                    term_at = now
            if (term_at is not None and killed_at is None and exited_at is None
                    and now - term_at >= kill_grace_s):
                _killpg(pgid, signal.SIGKILL)                     # the grace ran out
                killed_at = now
            if exited_at is None and _has_exited(proc.pid):
                exited_at = now
            if exited_at is not None and not reading:
                break
            if exited_at is not None and killed_at is None and now - exited_at > DRAIN_SECONDS:
                _killpg(pgid, signal.SIGKILL)                     # a grandchild holds the pipe
                killed_at = now
            if killed_at is not None and reading and now - killed_at > DRAIN_SECONDS:
                break                                             # held from outside the group
    finally:
        if pidfd is not None:
            os.close(pidfd)
        _killpg(pgid, signal.SIGKILL)                             # nothing of the group outlives it
        result.returncode = proc.wait()
        proc.stdout.close()
        renderer.close()
    result.summary = renderer.summary
    return result


__all__ = ["SessionResult", "run", "stdin_file", "DRAIN_SECONDS"]

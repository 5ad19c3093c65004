"""Owns an agent's process group (docs/contract/ralph-cli.md s.11): starting the agent without a
shell as the leader of a group of its own (stdin /dev/null or given bytes, stdout a pipe, stderr
inherited or a pipe the pool reads, explicit environment), tied to ralph.py's life and, with a
pid file, recorded before exec; signalling the group; telling that the leader exited without
reaping it (and a pidfd to poll for it). Knows nothing of reading the output, deadlines or
what the signals mean (the pool owns those)."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Iterator, Mapping

from ralphpy import strays
from ralphpy.session import pidfile as session_pidfile


def signal_group(pgid: int, sig: int) -> bool:
    """killpg; False when the group is already gone (or no longer ours): nothing to do."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def has_exited(pid: int) -> bool:
    """True once our child pid has exited. WNOWAIT: the leader stays a zombie, so its pgid
    cannot be reused before the group is killed."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def pidfd(pid: int) -> int | None:
    """A descriptor readable once pid exits: no polling delay after the agent ends."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None                   # older kernel: the pool's 50 ms poll notices the exit


def _die_with_parent() -> Callable[[], None] | None:
    """A preexec_fn asking Linux to SIGKILL the agent when ralph.py dies (PR_SET_PDEATHSIG), so
    a `kill -9` of ralph.py does not leave its agent working on a task nobody watches.
    Best effort: None where prctl is not available. The agent's own children are not covered;
    a resumed run kills the dead run's agent group (session/dead.py)."""
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


def _preexec(pidfile: Path | None, tag: str) -> Callable[[], None] | None:
    """The agent's preexec_fn: die with ralph.py, then (with a pid file) record its pid there
    before exec, or exit at once when a recovery came first (session/pidfile.py's handshake: a
    resumed run then knows the group even if ralph.py died before it saved the pid)."""
    steps = [step for step in (_die_with_parent(),
                               pidfile and session_pidfile.child_claim(pidfile, tag)) if step]
    if not steps:
        return None

    def preexec() -> None:
        for step in steps:
            step()
    return preexec


@contextlib.contextmanager
def _stdin_file(data: bytes | None) -> Iterator[int]:
    """The agent's stdin: /dev/null (s.11), or `data` in an unlinked temp file (any size,
    no pipe to feed while the agent's stdout is pumped, so no deadlock)."""
    if data is None:
        yield subprocess.DEVNULL
        return
    with tempfile.TemporaryFile() as fh:
        fh.write(data)
        fh.seek(0)
        yield fh.fileno()


def spawn(argv: list[str], *, env: Mapping[str, str], cwd: Path | None,
          stdin: bytes | None = None, pidfile: Path | None = None,
          tag: str = "", read_stderr: bool = False) -> subprocess.Popen:
    """Start the agent as the leader of a new process group (pgid = its pid); its stdout (and
    with read_stderr its stderr, else inherited) is a non-blocking pipe. tag: the session's
    (strays.py), in its environment and pid file. Raises OSError when it cannot be started."""
    env = {**env, strays.ENV: tag} if tag else dict(env)
    if cwd is not None:        # as a shell's cd would: opencode takes its project from $PWD,
        env["PWD"] = str(cwd)  # so a --parallel session would work in the main checkout
    with _stdin_file(stdin) as agent_stdin:
        proc = subprocess.Popen(argv, stdin=agent_stdin, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE if read_stderr else None,
                                env=env, process_group=0, bufsize=0, cwd=cwd,
                                preexec_fn=_preexec(pidfile, tag))
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            os.set_blocking(pipe.fileno(), False)
    return proc


__all__ = ["spawn", "signal_group", "has_exited", "pidfd"]

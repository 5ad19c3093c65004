"""Owns running a program that is not an agent (git, an external task command): an argv list,
no shell, stdin from /dev/null, and the environment and working directory given by the
caller, so a call sees the run's exports (docs/contract/ralph-cli.md s.9) wherever it runs. The exit
code is data for the caller; a program that cannot be started raises OSError. A program that may
start children of its own (a user's test command) runs in a process group of its own
(`run_group`), which goes with it, as does what it started outside that group (strays.py).
Knows nothing of what the programs are. Agents run in session/ (process groups, pumps,
timeouts)."""
from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Mapping, Sequence

from ralphpy import strays

# Where a program's stdout or stderr goes.
CAPTURE = subprocess.PIPE       # read into the result
DISCARD = subprocess.DEVNULL    # thrown away (a program that daemonises cannot hold us up)
INHERIT = None                  # ralph.py's own stdout or stderr
TimeoutExpired = subprocess.TimeoutExpired
# ralph's own git calls (verify's diff, --sync's rebase, --parallel's merges) run nothing a
# session could have written into the repository: no hook, no fsmonitor command
# (docs/sandbox.md). The agent's own git calls keep the user's hooks.
GIT = ("git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")


@dataclass(frozen=True)
class Result:
    code: int
    stdout: bytes           # b"" unless captured
    stderr: bytes

    @property
    def out(self) -> str:
        """stdout as text (undecodable bytes kept as surrogate escapes)."""
        return self.stdout.decode("utf-8", "surrogateescape")

    @property
    def err(self) -> str:
        return self.stderr.decode("utf-8", "surrogateescape")


def run(argv: Sequence[str], *, cwd: Path | str, env: Mapping[str, str],
        stdout: int | None = CAPTURE, stderr: int | None = CAPTURE,
        timeout: float | None = None) -> Result:
    """Run argv to its end in cwd with exactly env (its PATH finds argv[0]). A timeout, or an
    exception such as KeyboardInterrupt while waiting, kills the program before it propagates
    (subprocess.TimeoutExpired for the timeout): nothing outlives the call."""
    proc = subprocess.run(list(argv), cwd=str(cwd), env=dict(env), stdin=subprocess.DEVNULL,
                          stdout=stdout, stderr=stderr, timeout=timeout, check=False)
    return Result(proc.returncode, proc.stdout or b"", proc.stderr or b"")


def _stop_group(proc: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM to the whole group, SIGKILL after the grace: a test runner's own children
    (workers, servers) go with it."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    _kill_group(proc.pid)              # the leader is gone; its group may linger (nohup, &)


def _kill_group(pgid: int) -> None:
    """What a program left running in its group (a server started with `&`) goes too."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_group(argv: Sequence[str], *, cwd: Path | str, env: Mapping[str, str],
              output: BinaryIO, timeout: float, kill_grace: float) -> int | None:
    """Run argv in a process group of its own (never ralph.py's or an agent's), its stdout
    and stderr into output, for at most timeout seconds; then SIGTERM to the group and
    SIGKILL after kill_grace. Whatever it left running in its group is killed when it ends,
    and so is what it left outside the group (named in a last line of output); an exception
    while waiting (a signal to ralph.py) stops the group first. The exit code; None when the
    timeout ended it."""
    tag = strays.new_tag()
    proc = subprocess.Popen(list(argv), cwd=str(cwd), env={**env, strays.ENV: tag},
                            stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                            start_new_session=True)
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        if timed_out or proc.returncode is None:
            _stop_group(proc, kill_grace)
        else:
            _kill_group(proc.pid)
        if left := strays.kill(tag, proc.pid):
            output.write(f"\nralph: {strays.line(left, 'the command')}\n".encode())
    return None if timed_out else proc.returncode


__all__ = ["GIT", "Result", "run", "run_group", "CAPTURE", "DISCARD", "INHERIT", "TimeoutExpired"]

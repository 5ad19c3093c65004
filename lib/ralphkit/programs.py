"""Owns running a program that is not an agent (git, an external task command): an argv list,
no shell, stdin from /dev/null, and the environment and working directory given by the
caller, so a call sees the run's exports (ralph-cli.md s.9) wherever it runs. The exit code
is data for the caller; a program that cannot be started raises OSError.
Knows nothing of what the programs are. Agents run in session/ (process groups, timeouts)."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

# Where a program's stdout or stderr goes.
CAPTURE = subprocess.PIPE       # read into the result
DISCARD = subprocess.DEVNULL    # thrown away (a program that daemonises cannot hold us up)
INHERIT = None                  # ralph.py's own stdout or stderr
TimeoutExpired = subprocess.TimeoutExpired


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


__all__ = ["Result", "run", "CAPTURE", "DISCARD", "INHERIT", "TimeoutExpired"]

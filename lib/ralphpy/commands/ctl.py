"""Owns `ralph ctl pause|resume|stop|status`: asks a running loop, from another shell, to pause
before its next session, resume, or stop after its current one, and says so truthfully when no
run is going (the run lock tells). Knows nothing of the loop; the sentinel files belong to
unattended.control."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from ralphpy.runs import lock
from ralphpy.unattended import control

_USAGE = "Usage: ralph ctl pause|resume|stop|status"


def main(argv: list[str], *, ralph_dir: Path | None = None, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    """`ralph ctl <command>`: argv is what follows `ctl`. Returns the exit status (0, or 1
    for a usage error with one line on stderr). ralph_dir defaults to ./.ralph."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    ralph_dir = Path(ralph_dir) if ralph_dir is not None else Path.cwd() / ".ralph"
    if len(argv) != 1:
        print(f"Error: ralph ctl takes one command. {_USAGE}", file=err)
        return 1
    command = argv[0]
    if command == "pause":
        control.request(ralph_dir, control.PAUSE)
        print("Pause requested: the run pauses before its next session "
              "(`ralph ctl resume` to continue)" if _run_going(ralph_dir) else
              "Pause requested: no run is going; the next run pauses before its first "
              "session (`ralph ctl resume` to lift it)", file=out)
    elif command == "resume":
        resumed = control.cancel_pause(ralph_dir)
        going = resumed and _run_going(ralph_dir)
        print("Not paused" if not resumed else "Resumed: the run continues with its next "
              "session" if going else "Resumed: the pause is lifted; no run is going", file=out)
    elif command == "stop":
        if not _run_going(ralph_dir):     # a run drops a STOP it finds at its start
            print("No run is going: nothing to stop", file=out)
            return 0
        control.request(ralph_dir, control.STOP)
        print("Stop requested: the run stops after its current session", file=out)
    elif command == "status":
        print(_status(ralph_dir), file=out)
    elif command in ("-h", "--help", "help"):
        print(_USAGE, file=out)
    else:
        print(f"Error: Unknown ctl command '{command}'. {_USAGE}", file=err)
        return 1
    return 0


def _status(ralph_dir: Path) -> str:
    """The request pending, as the run going (or the next one) takes it: a run drops a STOP
    it finds at its start and honours a PAUSE."""
    asked = control.requested(ralph_dir)
    if not asked:
        return "no pause or stop requested"
    if _run_going(ralph_dir):
        return "stop requested" if asked == control.STOP else "paused"
    if control.paused(ralph_dir):
        return ("no run is going; the next run pauses before its first session "
                "(`ralph ctl resume` to lift it)")
    return ("no run is going; the stop request an earlier run left is dropped when the next "
            "run starts")


def _run_going(ralph_dir: Path) -> bool:
    """A run holds the run lock, or may (another host's lock on a shared disk, a lock being
    written): only a free or stale lock says no run is going."""
    return lock.inspect(ralph_dir / "run.lock").state not in ("free", "stale")


__all__ = ["main"]

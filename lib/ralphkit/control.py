"""Owns `ralph ctl pause|resume|stop|status` (issue 7): sentinel files `.ralph/PAUSE` and
`.ralph/STOP` written atomically by the ctl command and read by the loop between sessions.
Knows nothing of the loop itself: the loop asks check_between_sessions() what to do, and
consumes STOP with consume_stop() when the run ends."""
from __future__ import annotations

import json
import os
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, TextIO

PAUSE = "PAUSE"
STOP = "STOP"
CONTINUE = "continue"
STOPPED = "stop"
_USAGE = "Usage: ralph ctl pause|resume|stop|status"


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _stamp(command: str) -> str:
    return json.dumps({"requested": command, "at": datetime.now(timezone.utc).isoformat(),
                       "pid": os.getpid()}) + "\n"


def consume_stop(ralph_dir: Path) -> bool:
    """Remove .ralph/STOP; True when there was one. The loop calls this when the run ends (so
    the next run starts normally) and at run start (a stop requested while no run was going
    is dropped, and the loop says so)."""
    try:
        (Path(ralph_dir) / STOP).unlink()
        return True
    except FileNotFoundError:
        return False


def check_between_sessions(ralph_dir: Path, wait: Callable[[float], bool], *,
                           log: Callable[[str], None] = lambda line: None,
                           poll_s: float = 2.0) -> str:
    """STOPPED when a stop was requested, else CONTINUE. While .ralph/PAUSE exists, waits by
    calling wait(poll_s) (True = stop now, e.g. threading.Event.wait of a SIGHUP/SIGTERM
    handler), logging once when the pause starts and once when it ends. A STOP written
    during a pause ends the pause with STOPPED."""
    ralph_dir = Path(ralph_dir)
    if (ralph_dir / STOP).exists():
        return STOPPED
    if not (ralph_dir / PAUSE).exists():
        return CONTINUE
    log(f"Paused: {ralph_dir / PAUSE} exists; run `ralph ctl resume` to continue")
    while (ralph_dir / PAUSE).exists():
        if wait(poll_s) or (ralph_dir / STOP).exists():
            return STOPPED
    log("Resumed")
    return CONTINUE


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
        _write_atomic(ralph_dir / PAUSE, _stamp(command))
        print("Pause requested: the run pauses before its next session "
              "(`ralph ctl resume` to continue)", file=out)
    elif command == "resume":
        try:
            (ralph_dir / PAUSE).unlink()
            print("Resumed: the run continues with its next session", file=out)
        except FileNotFoundError:
            print("Not paused", file=out)
    elif command == "stop":
        _write_atomic(ralph_dir / STOP, _stamp(command))
        print("Stop requested: the run stops after its current session", file=out)
    elif command == "status":
        stop, pause = (ralph_dir / STOP).exists(), (ralph_dir / PAUSE).exists()
        print("stop requested" if stop else "paused" if pause else "no pause or stop requested",
              file=out)
    elif command in ("-h", "--help", "help"):
        print(_USAGE, file=out)
    else:
        print(f"Error: Unknown ctl command '{command}'. {_USAGE}", file=err)
        return 1
    return 0


__all__ = ["main", "check_between_sessions", "consume_stop", "CONTINUE", "STOPPED"]

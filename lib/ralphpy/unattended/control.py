"""Owns the ctl sentinels: `.ralph/PAUSE` and `.ralph/STOP`, written atomically by `ralph ctl`
and read by the loop between sessions. Knows nothing of the loop itself: the loop asks
check_between_sessions() what to do, and consumes STOP with consume_stop() when the run ends."""
from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from ralphpy import atomic_file, workspace

PAUSE = "PAUSE"
STOP = "STOP"
CONTINUE = "continue"
STOPPED = "stop"


def consume_stop(ralph_dir: Path, strict: bool = True) -> bool:
    """Remove .ralph/STOP; True when there was one. The loop calls this when the run ends (so
    the next run starts normally) and at run start (a stop requested while no run was going
    is dropped, and the loop says so). A STOP that cannot be removed (a directory made there)
    is EnvironmentFailure (exit 8) at the start; at the end (not strict) it is left for the
    next start to name, so the run's own end goes on."""
    return _remove(Path(ralph_dir) / STOP, strict)


def _remove(path: Path, strict: bool = True) -> bool:
    try:
        path.unlink()
        return True
    except FileNotFoundError:
        return False
    except OSError as err:
        if strict:
            raise atomic_file.environment_failure("remove", path, err) from None
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


def request(ralph_dir: Path, sentinel: str) -> None:
    """Write a PAUSE or STOP sentinel saying who asked and when."""
    stamp = {"requested": sentinel.lower(), "at": datetime.now(timezone.utc).isoformat(),
             "pid": os.getpid()}
    workspace.ralph_subdir(Path(ralph_dir).parent)   # a new .ralph/ gets its .gitignore (`*`)
    atomic_file.write_atomic(Path(ralph_dir) / sentinel, (json.dumps(stamp) + "\n").encode())


def cancel_pause(ralph_dir: Path) -> bool:
    """Remove .ralph/PAUSE; True when there was one. EnvironmentFailure (exit 8) when it
    cannot be removed (a directory there, or .ralph itself a file)."""
    return _remove(Path(ralph_dir) / PAUSE)


def paused(ralph_dir: Path) -> bool:
    """A pause is asked for (.ralph/PAUSE), whether or not a stop is too."""
    return (Path(ralph_dir) / PAUSE).exists()


def requested(ralph_dir: Path) -> str:
    """STOP, PAUSE or "" for what is asked of the run now (a stop wins over a pause)."""
    return STOP if (Path(ralph_dir) / STOP).exists() else PAUSE if paused(ralph_dir) else ""


__all__ = ["PAUSE", "STOP", "CONTINUE", "STOPPED", "request", "cancel_pause", "requested",
           "paused", "check_between_sessions", "consume_stop"]

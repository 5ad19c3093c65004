"""Owns what a frozen run may run and when it is done: the frozen ids a snapshot
holds, the file the loop exports as RALPH_FROZEN_IDS_FILE (the task CLI's `peek` and `claim`
then only consider those ids), and the target "every frozen task still present is done".
Knows nothing of how the snapshot is taken or compared (scope.py) nor of the loop."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping

from ralphpy import atomic_file
from ralphpy import errors

IDS_TXT = "scope_task_ids.txt"          # written by scope.freeze: sorted, `comm`-ready
FROZEN_IDS_TXT = "frozen_ids.txt"


def frozen_ids(run_dir: Path) -> list[str]:
    """The frozen ids (tasks not deleted at freeze), sorted."""
    path = Path(run_dir) / IDS_TXT
    try:
        return path.read_text(encoding="utf-8", errors="surrogateescape").splitlines()
    except OSError as err:
        raise errors.EnvironmentFailure(
            f"scope snapshot {path} cannot be read ({err.strerror or err}); start a new run")


def write_frozen_ids_file(run_dir: Path) -> Path:
    """Write the file the loop exports as RALPH_FROZEN_IDS_FILE. An empty frozen scope gives
    an empty file: nothing may be claimed."""
    path = Path(run_dir) / FROZEN_IDS_TXT
    text = "".join(f"{tid}\n" for tid in frozen_ids(run_dir))
    atomic_file.write_atomic(path, text.encode("utf-8", "surrogateescape"))
    return path


def target_done(run_dir: Path, tasks: Iterable[Mapping]) -> bool:
    """True when every frozen task still present is done (removed ones left the target)."""
    frozen = set(frozen_ids(run_dir))
    for task in tasks:
        status = task.get("status")
        if str(task.get("id")) in frozen and status not in ("done", "deleted"):
            return False
    return True



__all__ = ["frozen_ids", "write_frozen_ids_file", "target_done"]

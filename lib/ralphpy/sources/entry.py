"""Owns the task CLI's entry point: `ralph-task` installed, scripts/task in a checkout. The CLI
the `tasks` setting names answers (sources.choice): a store URL in RALPH_TASKS is the embedded
CLI's store (docs/fleet.md), a source's name is that source's CLI (docs/task-sources.md),
anything else the embedded CLI. What answers is imported only once chosen, so the embedded CLI
starts as fast as when it was the entry point itself."""
from __future__ import annotations

import os

from ralphpy.sources import choice

# typing costs the task CLI's start-up a fifth of its imports (re, enum, collections):
# annotations only (docs/decisions/0002).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import MutableMapping


def name_store(environ: MutableMapping[str, str]) -> None:
    """RALPH_TASKS naming a store (`--tasks postgresql://...` as an environment variable)
    becomes RALPH_TASKS_DB, also over one RALPH_TASKS_DB names already: the `tasks` setting
    names the store, RALPH_TASKS_DB only while that setting is sqlite, as in a run."""
    if choice.is_store(environ.get("RALPH_TASKS", "")):
        environ["RALPH_TASKS_DB"] = environ.pop("RALPH_TASKS")


def main() -> None:
    name_store(os.environ)
    if not choice.is_source(os.environ.get("RALPH_TASKS", "")):
        from ralphpy.tasks.cli import console_main
    else:                                            # a task source (docs/task-sources.md)
        from ralphpy.sources.cli import console_main
    console_main()


__all__ = ["name_store", "main"]

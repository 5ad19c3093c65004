"""Owns what the `tasks` setting chooses, with RALPH_TASKS_DB beside it: a task source, or the
store the embedded task CLI opens (docs/fleet.md). The setting is `sqlite` (the default), a
source's name (`tk`, `flowctl`) or a store URL (`scheme://...`). A URL in the setting wins over
RALPH_TASKS_DB, which counts only while the setting is `sqlite`; a source keeps its own backlog,
so no store is opened for it. Every place that asks which store a run or a call uses asks here.
Imports only the store URL parser: the task CLI's entry point asks at every command
(docs/decisions/0002)."""
from __future__ import annotations

from ralphpy.tasks import store_url

# typing costs the task CLI's start-up a fifth of its imports: annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping

DEFAULT = "sqlite"


def is_store(tasks: str | None) -> bool:
    """True when the setting is a store URL (`scheme://...`): the embedded task CLI answers."""
    return bool(tasks) and store_url.scheme(tasks) is not None


def is_source(tasks: str | None) -> bool:
    """True when the setting names a source rather than the embedded store."""
    return bool(tasks) and tasks != DEFAULT and not is_store(tasks)


def store(tasks: str, tasks_db: str) -> str | None:
    """The store the embedded task CLI opens when the setting is `tasks` and RALPH_TASKS_DB is
    `tasks_db`: the setting's URL; else, while the setting is sqlite, `tasks_db` (a file path,
    a URL, or "" for <git root>/.ralph/tasks.db); None when the setting names a source."""
    if is_store(tasks):
        return tasks
    return None if is_source(tasks) else tasks_db


def store_in(environ: Mapping[str, str]) -> str | None:
    """store() for an environment, whose RALPH_TASKS is the setting: a run exports it to its
    children; elsewhere it is the environment's own, without ralph.yml's."""
    return store(environ.get("RALPH_TASKS", ""), environ.get("RALPH_TASKS_DB", ""))


__all__ = ["DEFAULT", "is_store", "is_source", "store", "store_in"]

"""Owns the names of the task sources and opening one: `sqlite` (the embedded store, not a
source here), `tk`, `flowctl`; a `postgresql://` URL is the embedded task CLI on that store
(docs/fleet.md), not a source either; `github:OWNER/REPO?label=X` is the github source
(docs/github.md). A further source (beads, Linear) is one module with the
`Source` methods and one line in SOURCES. Also what choosing one means before any session: the
tool is there (else one line naming what to install, exit 1), the files it will skip, and the
variables every child gets (RALPH_TASKS, and RALPH_TASKS_ROOT so sessions in git worktrees reach
the main checkout's backlog). Knows nothing of the contract's commands; never touches
os.environ."""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Mapping

from ralphpy.errors import UsageError
from ralphpy.sources.base import Source, SourceError
from ralphpy.sources.choice import DEFAULT, is_source, is_store

SOURCES = {"tk": ("ralphpy.sources.tk", "TkSource"),
           "flowctl": ("ralphpy.sources.flowctl", "FlowctlSource"),
           "github": ("ralphpy.sources.github_issues", "GitHubSource")}
NAMES = (DEFAULT, *SOURCES)
NATIVE_CREATE = {"tk": "tk create", "flowctl": "flowctl task create",
                 "github": "a labelled GitHub issue"}


def source_name(setting: str) -> str:
    """The source a `tasks` value names: `github:OWNER/REPO?label=X` is the github source
    (docs/github.md); the others are their own name."""
    head, sep, _ = setting.partition(":")
    return head if sep and head == "github" else setting


def open_source(name: str, environ: Mapping[str, str], cwd: Path) -> Source:
    if source_name(name) not in SOURCES:
        raise SourceError(f"unknown task source '{name}' (known: {', '.join(NAMES)})")
    module, cls = SOURCES[source_name(name)]
    return getattr(importlib.import_module(module), cls)({**environ, "RALPH_TASKS": name}, cwd)


def own_paths(environ: Mapping[str, str]) -> list[str]:
    """The source's own directory (as the tool keeps it in the repository), for git to leave
    aside: its status changes during a run are the tracker's, not the user's edits."""
    name = environ.get("RALPH_TASKS", "")
    if not is_source(name) or source_name(name) not in SOURCES:
        return []
    marker = importlib.import_module(SOURCES[source_name(name)][0]).MARKER
    return [marker] if marker else []


def preflight(name: str, environ: Mapping[str, str], cwd: Path) -> tuple[Path, list[str]]:
    """Before any session: the source's root and the tasks it will skip, read without a write.
    Raises UsageError (exit 1) naming what to install or set when the tool is missing, or
    what is wrong when the tool cannot list the backlog at all (flowctl refuses the whole
    listing over one unreadable task file): no session could do anything."""
    source = open_source(name, {**environ, "RALPH_SOURCE_READONLY": "1"}, cwd)
    if getattr(source, "tool", None) is None:
        raise UsageError(importlib.import_module(SOURCES[source_name(name)][0]).INSTALL)
    try:
        return source.root, source.load().problems
    except SourceError as err:
        raise UsageError(str(err)) from None


def prepare(name: str, mode: str, environ: Mapping[str, str],
            cwd: Path) -> tuple[dict[str, str], list[str]]:
    """(variables to export, notices for stderr). Raises UsageError when the tool is missing.
    A store URL is exported as RALPH_TASKS_DB, the embedded task CLI's store, and as
    RALPH_TASKS, the `tasks` setting, so that a `ralph task` or `ralph status` run inside a
    session takes the run's store over the one ralph.yml names."""
    if is_store(name):
        return {"RALPH_TASKS": name, "RALPH_TASKS_DB": name}, []
    if not is_source(name):
        return ({"RALPH_TASKS": name} if environ.get("RALPH_TASKS") else {}), []
    root, problems = preflight(name, environ, cwd)
    notes = [f"Warning: {name}: {problem}" for problem in problems]
    if source_name(name) == "github":          # resolved once: no `git remote` per task call
        from ralphpy.github import target
        found = target.parse(name, environ, cwd)
        name = f"github:{found.full_name}?label={found.label}"
    if mode == "plan":
        notes.append(f"Note: the {name} task source has no plan-sync: the planner's "
                     f"`task plan-sync` is refused; create tasks with "
                     f"{NATIVE_CREATE.get(source_name(name), 'the tool itself')}")
    return {"RALPH_TASKS": name, "RALPH_TASKS_ROOT": str(root)}, notes


__all__ = ["DEFAULT", "SOURCES", "NAMES", "source_name", "is_source", "is_store", "open_source", "own_paths", "preflight",
           "prepare"]

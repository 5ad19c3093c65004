"""Owns scope freeze as a run uses it: listing the backlog through the task command
(`_export-json` for the embedded task CLI, `list --all --markdown` for any other), taking the
snapshot at run start or keeping the one a resumed run already has, the check before every
session with each distinct set of changes recorded once (an event in events.jsonl and a line
in the run state that progress.md shows), and the "every frozen task is done" target.

Knows nothing of printing, flags or exit codes (ralph.py decides), nor of how a snapshot is
taken or compared (scope.snapshot). Extra task calls happen only through this module, so with
the freeze off the loop's task calls are exactly docs/contract/ralph-cli.md's table.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from ralphpy import errors
from ralphpy.backlog import answers
from ralphpy.runs import progress
from ralphpy.runs import state as run_state
from ralphpy.scope import snapshot as scope_snapshot
from ralphpy.scope import target
from ralphpy.backlog import client
from ralphpy.scope import hashing
from ralphpy.scope.cache import ListingCache
from ralphpy.scope.changes import ScopeReport
from ralphpy.backlog.calls import TaskCommand

_KEPT_CHANGES = 50          # progress.md shows the last 50 change lines of a run


@dataclass
class Freeze:
    """A frozen run: where its snapshot lives and what was recorded so far."""

    ralph_dir: Path
    state: run_state.RunState
    repo_root: Path
    stop_on_change: bool
    snapshot: scope_snapshot.Snapshot
    ids_file: Path                                   # exported as RALPH_FROZEN_IDS_FILE
    logged: list[str] = field(default_factory=list)  # the change lines recorded last
    seen: list[str] = field(default_factory=list)    # ... what each of them changed
    list_failures: int = 0
    just_frozen: list[dict] | None = None            # a new snapshot's listing: the first check's
    frozen_sig: tuple = (None, 0)                    # db signature + clock taken before it
    listing: ListingCache = field(default_factory=ListingCache)   # reused while the db is still
    # the stat cache and the spec watch
    memory: scope_snapshot.Memory = field(default_factory=scope_snapshot.Memory)
    watch_recorded: bool = False                     # the scope_watch event of this process

    @property
    def run_dir(self) -> Path:
        return self.snapshot.run_dir


@dataclass
class Check:
    """One check before a session. report is None when the backlog could not be listed."""

    report: ScopeReport | None
    new_lines: list[str]        # changes to show now: not the same set as recorded last time
    target_done: bool           # build mode: every frozen task still present is done
    stop: bool                  # STOP_ON_SCOPE_CHANGE and the scope changed
    listing_reused: bool = False  # no new listing: the last one still describes the scope
    statuses_refreshed: bool = False  # ... although the database was written (a claim, a
                                      # done): the store's digest matched, statuses read fresh


def list_tasks(task: TaskCommand, env: Mapping[str, str]) -> list[dict] | None:
    """The whole backlog as task dicts, or None when the task call fails."""
    if task.embedded:
        return client.export_tasks(task.bound(env))     # task _export-json
    result = task.call("list", "--all", "--markdown", env=env)   # task list --all --markdown
    return answers.parse_markdown_kv(result.output) if result.ok else None


def _listing(task: TaskCommand) -> str:
    return "task _export-json" if task.embedded else "task list --all --markdown"


def start(task: TaskCommand, env: Mapping[str, str], ralph_dir: Path,
          state: run_state.RunState, repo_root: Path, *, stop_on_change: bool,
          watch_specs: bool = True) -> Freeze:
    """Snapshot the scope into the run directory, or keep the snapshot a resumed run has.
    Raises UsageError when the backlog cannot be listed (nothing to freeze), and
    EnvironmentFailure when the snapshot cannot be written or read."""
    ralph_dir = Path(ralph_dir)
    run_dir = ralph_dir / "runs" / state.run_id
    cache = ListingCache()
    frozen_sig = cache.before_listing(env, task.embedded)   # before the listing (scope_cache)
    tasks = list_tasks(task, env)
    if tasks is None:
        raise errors.UsageError(
            f"cannot freeze the scope: `{_listing(task)}` failed; check the task command"
            " or run without FREEZE_SCOPE")
    # a resumed run keeps its own snapshot
    snapshot = scope_snapshot.load_or_freeze(run_dir, tasks, Path(repo_root))
    ids_file = target.write_frozen_ids_file(run_dir).resolve()   # absolute (task CLI cwd)
    kept = state.extra.get("scope") or {}
    freeze = Freeze(ralph_dir, state, Path(repo_root), stop_on_change, snapshot, ids_file,
                    logged=list(kept.get("last", [])) if not snapshot.created else [],
                    seen=list(kept.get("last_keys", kept.get("last", [])))
                    if not snapshot.created else [],
                    just_frozen=tasks if snapshot.created else None, frozen_sig=frozen_sig,
                    listing=cache, memory=scope_snapshot.Memory(watch_specs=watch_specs))
    state.extra["scope"] = {"frozen_at": snapshot.frozen_at, "tasks": len(snapshot.task_ids),
                            "last": freeze.logged, "last_keys": freeze.seen,
                            "changes": kept.get("changes", [])
                            if not snapshot.created else []}
    progress.append_event(ralph_dir, state.run_id, "scope_frozen",
                          tasks=len(snapshot.task_ids), frozen_at=snapshot.frozen_at,
                          resumed=not snapshot.created, snapshot=str(run_dir),
                          warnings=snapshot.warnings)
    return freeze


def check(freeze: Freeze, task: TaskCommand, env: Mapping[str, str]) -> Check:
    """check_scope_integrity against the live backlog; a new set of changes is recorded in
    events.jsonl and progress.md once. A failed listing is transient: no check this time."""
    # The check right after a new snapshot reuses its listing (no second task call for the
    # same backlog); a resumed run lists again, changes made while it was stopped count.
    # Later checks reuse the last listing while the task database was not written since, or
    # while the store's fingerprint shows the same definitions after a status-only write
    # (scope_cache: embedded task CLI only), so an unchanged check is the spec stats alone,
    # plus one read transaction over the task rows when a session wrote the store.
    cache = freeze.listing
    statuses = None
    if freeze.just_frozen is not None:
        tasks, reused = freeze.just_frozen, False
        cache.remember(tasks, env, task.embedded, *freeze.frozen_sig, critical=task.critical)
    else:
        got = cache.listing(env, task.embedded, lambda: list_tasks(task, env), task.critical)
        tasks, reused, statuses = got.tasks, got.reused, got.statuses
    freeze.just_frozen = None
    if tasks is None:
        freeze.list_failures += 1
        return Check(None, [], False, False)
    derived = cache.derived if cache.tasks is tasks and cache.derived is not None else {}
    if "digest" not in derived:
        derived["digest"] = hashing.rows_digest(tasks)
    report = scope_snapshot.check_scope_integrity(freeze.run_dir, tasks, freeze.repo_root,
                                         digest=derived["digest"], memory=freeze.memory)
    _record_watch(freeze)
    changes = report.changes()
    lines = [line for _, line in changes]
    new_lines: list[str] = []
    if lines != freeze.logged:
        new_lines = [line for key, line in changes if key not in freeze.seen]
        freeze.logged, freeze.seen = lines, [key for key, _ in changes]
        _record(freeze, report, new_lines)
    if statuses is not None:            # the kept listing's statuses are old: the store's
        derived["target_done"] = target.target_done(
            freeze.run_dir, ({"id": slug, "status": st} for slug, st in statuses.items()))
    elif "target_done" not in derived:  # frozen ids never change within a run
        derived["target_done"] = target.target_done(freeze.run_dir, tasks)
    return Check(report, new_lines, derived["target_done"],
                 report.changed and freeze.stop_on_change, reused, statuses is not None)


def target_met(freeze: Freeze, task: TaskCommand, env: Mapping[str, str]) -> bool:
    """Every frozen task still present is done (after a --parallel run's last session, which
    no check follows). False when the backlog cannot be listed."""
    tasks = list_tasks(task, env)
    return tasks is not None and target.target_done(freeze.run_dir, tasks)


def _record_watch(freeze: Freeze) -> None:
    """Once per process, when it is known: is the spec watch on, and how many spec files does
    every check stat (all of them without the watch)."""
    memory = freeze.memory
    if freeze.watch_recorded or not (memory.watch_tried or not memory.watch_specs):
        return
    freeze.watch_recorded = True
    tracked = len(memory.cache.tracked()) if memory.cache is not None else 0
    progress.append_event(freeze.ralph_dir, freeze.state.run_id, "scope_watch",
                          on=memory.watch is not None, spec_files=tracked,
                          stat_each_check=memory.watch.unwatched if memory.watch else tracked)


def _record(freeze: Freeze, report: ScopeReport, new_lines: list[str]) -> None:
    now = run_state.utc_now()
    kept = freeze.state.extra.setdefault("scope", {})
    kept["last"], kept["last_keys"] = freeze.logged, freeze.seen
    if new_lines:
        kept["changes"] = (kept.get("changes", []) + [f"{now} {line}" for line in new_lines]
                           )[-_KEPT_CHANGES:]
    data = report.to_dict()
    progress.append_event(freeze.ralph_dir, freeze.state.run_id, "scope_changed",
                          changes=freeze.logged, new=new_lines, added=data["added"],
                          removed=data["removed"], spec_modified=data["spec_modified"],
                          definition_modified=data["definition_modified"],
                          definition_fields=data["definition_fields"])
    run_state.save(freeze.ralph_dir, freeze.state)
    progress.write_progress(freeze.ralph_dir, freeze.state)


__all__ = ["Freeze", "Check", "list_tasks", "start", "check", "target_met"]

"""Owns scope freeze's snapshot and check: the snapshot of the backlog written into
a run directory at run start, and the check that compares the live backlog with it before
every session (with a Memory kept between checks: the stat cache, and the spec watch that
says which spec files may have changed). The frozen ids and the run's target are
scope.target's. Knows nothing of the loop, flags, config, events.jsonl or printing:
callers pass task dicts (the `_export-json` shape, or `answers.parse_markdown_kv` output
for external backends) and decide what to do with the ScopeReport.

Files in the run directory (docs/scope-freeze.md):
  scope.json             the task list exactly as the backlog reported it (one task a line)
  scope_task_ids.txt     ids of the tasks not deleted, sorted in C byte order, `comm`-ready
  scope_spec_hashes.txt  `<id>:<md5>` of each task's spec file, sorted (the seed's form; no
                         line for a task without a spec or whose spec cannot be hashed)
  scope_def_hashes.txt   `<id>:<md5>` of each task's own definition, sorted
  scope_index.json       private: id -> [def md5, spec path], spec path -> state; written
                         last, so it marks a complete snapshot
  scope_stat_cache.json  private: stat signatures and last report (hashing.StatCache)
  frozen_ids.txt         target.write_frozen_ids_file, for RALPH_FROZEN_IDS_FILE
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping

from ralphpy import atomic_file
from ralphpy import errors
from ralphpy.scope import hashing
from ralphpy.scope import target
from ralphpy.scope.changes import ScopeReport, SpecChange

if TYPE_CHECKING:
    from ralphpy.scope.spec_watch import SpecWatch

SCOPE_JSON = "scope.json"
IDS_TXT = target.IDS_TXT
HASHES_TXT = "scope_spec_hashes.txt"
DEF_HASHES_TXT = "scope_def_hashes.txt"
SPECS_DIR = "specs"
INDEX_JSON = "scope_index.json"
CACHE_JSON = "scope_stat_cache.json"

_DETAIL = {  # what a spec state means when it is the new one
    "missing": "file disappeared", "unreadable": "file is no longer readable",
    "directory": "path is now a directory", "not-a-file": "path is no longer a regular file",
}


@dataclass
class Snapshot:
    run_dir: Path
    frozen_at: str
    task_ids: list[str]
    created: bool                  # False: an existing snapshot was kept (resumed run)
    warnings: list[str] = field(default_factory=list)


def _write(path: Path, text: str) -> None:
    """Atomic (STYLE.md); an EnvironmentFailure naming the file when it cannot be written."""
    atomic_file.write_atomic(path, text.encode("utf-8", "surrogateescape"))


def _present(tasks: Iterable[Mapping]) -> tuple[dict[str, Mapping], list[str]]:
    """Tasks that count as present: every task with an id whose status is not `deleted`."""
    present: dict[str, Mapping] = {}
    skipped = 0
    for task in tasks:
        tid = task.get("id")
        if tid is None or tid == "":
            skipped += 1
        elif task.get("status") != "deleted":
            present[str(tid)] = task
    warnings = [f"{skipped} task(s) without an id were ignored"] if skipped else []
    return present, warnings


def _spec(task: Mapping) -> str | None:
    spec = task.get("spec")
    return str(spec) if spec not in (None, "") else None


def spec_path(spec: str, root: str | Path) -> str:
    """Where a task's spec is, relative to the repo root. A task names it from the root
    (`specs/auth.md`) or, as the /ralph-plan skill and ralph.sh's skills write it, by its name
    under specs/ (`auth.md`): the path from the root wins when it exists, else the one under
    specs/ when that exists, else the path as written (reported missing)."""
    if spec.startswith("/") or os.path.lexists(os.path.join(root, spec)):
        return spec
    under = f"{SPECS_DIR}/{spec}"
    return under if os.path.lexists(os.path.join(root, under)) else spec


def _describe(before: str, now: str) -> str:
    if now in _DETAIL:
        return _DETAIL[now]
    return "file appeared" if before in hashing.PROBLEM_STATES else "content changed"


def _compare(run_dir: Path, index: dict, tasks: list[Mapping], cache: hashing.StatCache,
             now_ns: int, root: str, known_defs: Mapping[str, str] | None = None) -> ScopeReport:
    """The full comparison. known_defs: definition md5s already computed (freeze)."""
    present, warnings = _present(tasks)
    frozen, frozen_specs = index["tasks"], index["specs"]
    report = ScopeReport(warnings=warnings, files_checked=len(frozen_specs))
    report.added = sorted(present.keys() - frozen.keys())
    report.removed = sorted(frozen.keys() - present.keys())
    # Each spec file is looked at once per check, however many tasks share it.
    paths = {spec: spec_path(spec, root) for spec in frozen_specs}
    states = {spec: cache.state(paths[spec], now_ns) for spec in frozen_specs}
    problems: dict[tuple[str, str], list[str]] = {}
    for tid in sorted(present.keys() & frozen.keys()):
        task, (def_md5, spec_then) = present[tid], frozen[tid]
        live_md5 = known_defs[tid] if known_defs else hashing.definition_md5(task)
        if live_md5 != def_md5:
            report.definition_modified.append(tid)
        spec_now = _spec(task)
        if spec_now != spec_then:
            report.spec_modified.append(SpecChange(
                tid, spec_now or spec_then,
                f"spec path changed from {spec_then or '(none)'} to {spec_now or '(none)'}"))
        elif spec_then is not None:
            if states[spec_then] != frozen_specs[spec_then]:
                report.spec_modified.append(SpecChange(
                    tid, paths[spec_then], _describe(frozen_specs[spec_then], states[spec_then])))
            elif states[spec_then] in hashing.PROBLEM_STATES:
                problems.setdefault((paths[spec_then], states[spec_then]), []).append(tid)
    for (spec, state), ids in problems.items():
        report.warnings.append(f"spec file {spec} of task(s) {', '.join(ids[:10])} is {state},"
                               " as it was when the scope was frozen")
    if report.definition_modified:
        report.definition_fields = _changed_fields(run_dir, report.definition_modified, present)
    report.files_hashed = cache.hashed
    return report


def _changed_fields(run_dir: Path, ids: list[str], present: dict[str, Mapping]) -> dict:
    """Names the fields that changed, from scope.json; read only when something did."""
    try:
        frozen = json.loads((run_dir / SCOPE_JSON).read_text(encoding="utf-8"))
        then = {str(t["id"]): t for t in frozen if t.get("status") != "deleted" and t.get("id")}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}   # scope.json gone or edited: the lines then say "definition changed"
    out = {}
    for tid in ids:
        if tid in then:
            old, new = hashing.definition(then[tid]), hashing.definition(present[tid])
            out[tid] = [f for f in hashing.DEF_FIELDS if old[f] != new[f]]
    return out


def _load_cache(run_dir: Path, root: str) -> hashing.StatCache | None:
    try:
        return hashing.StatCache.loads(root, (run_dir / CACHE_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None   # a cache: rebuilt from the snapshot when missing or damaged


def _load_index(run_dir: Path) -> dict:
    path = run_dir / INDEX_JSON
    try:
        index = json.loads(path.read_text(encoding="utf-8"))
        if index.get("version") != 1:
            raise ValueError(f"unknown version {index.get('version')!r}")
        if not isinstance(index.get("tasks"), dict) or not isinstance(index.get("specs"), dict):
            raise ValueError("not a scope index")
        return index
    except (OSError, ValueError, AttributeError) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise errors.EnvironmentFailure(
            f"scope snapshot {path} cannot be read ({why}); start a new run, or delete it to"
            " freeze the scope again") from err


def freeze(run_dir: Path, tasks: list[Mapping], repo_root: Path) -> Snapshot:
    """Snapshot the scope into run_dir. Refuses (FileExistsError, a caller bug) to replace an
    existing snapshot: a resumed run keeps its original one, use load_or_freeze."""
    run_dir = Path(run_dir)
    if (run_dir / INDEX_JSON).exists():
        raise FileExistsError(f"scope snapshot already exists in {run_dir}")
    now_ns = hashing._clock()
    present, _ = _present(tasks)
    cache = hashing.StatCache(str(repo_root))
    index_tasks, specs, spec_lines, def_lines = {}, {}, [], []
    for tid in sorted(present):
        task = present[tid]
        spec, def_md5 = _spec(task), hashing.definition_md5(task)
        index_tasks[tid] = [def_md5, spec]
        def_lines.append(f"{tid}:{def_md5}")
        if spec is not None:
            if spec not in specs:
                specs[spec] = cache.state(spec_path(spec, repo_root), now_ns)
            if specs[spec] not in hashing.PROBLEM_STATES:
                spec_lines.append(f"{tid}:{specs[spec]}")
    frozen_at = datetime.fromtimestamp(now_ns / 1e9, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    index = {"version": 1, "frozen_at": frozen_at, "tasks": index_tasks, "specs": specs}
    atomic_file.ensure_dir(run_dir)
    _write(run_dir / SCOPE_JSON, "[\n" + ",\n".join(
        json.dumps(t, ensure_ascii=False, default=str) for t in tasks) + "\n]\n")
    _write(run_dir / IDS_TXT, "".join(f"{tid}\n" for tid in sorted(present)))
    for name, lines in ((HASHES_TXT, spec_lines), (DEF_HASHES_TXT, def_lines)):
        _write(run_dir / name, "".join(f"{line}\n" for line in sorted(lines)))  # C order
    # The answer a check gives right now, cached for the fast path (states known: no I/O).
    report = _compare(run_dir, index, tasks, cache, now_ns, str(repo_root),
                      {tid: entry[0] for tid, entry in index_tasks.items()})
    cache.rows_digest, cache.report = hashing.rows_digest(tasks), report.to_dict()
    _write(run_dir / CACHE_JSON, cache.dumps())
    _write(run_dir / INDEX_JSON, json.dumps(index, ensure_ascii=False, separators=(",", ":")))
    return Snapshot(run_dir, frozen_at, sorted(present), True, report.warnings)


def load_or_freeze(run_dir: Path, tasks: list[Mapping], repo_root: Path) -> Snapshot:
    """Keep an existing snapshot (resume), else freeze now."""
    run_dir = Path(run_dir)
    if not (run_dir / INDEX_JSON).exists():
        return freeze(run_dir, tasks, repo_root)
    index = _load_index(run_dir)
    return Snapshot(run_dir, index.get("frozen_at", ""), sorted(index["tasks"]), False)


@dataclass
class Memory:
    """What one process keeps between the checks of one snapshot: the stat cache (not read
    from disk again) and the spec watch that says which spec files may have changed since
    the last check (spec_watch; None where inotify is unavailable or `watch` is off)."""

    watch_specs: bool = True
    cache: hashing.StatCache | None = None
    watch: SpecWatch | None = None
    watch_tried: bool = False


def check_scope_integrity(run_dir: Path, tasks: list[Mapping], repo_root: Path, *,
                          digest: str | None = None, memory: Memory | None = None) -> ScopeReport:
    """Compare the live backlog with the snapshot. Statuses are ignored; spec problems are
    reported, never raised. Raises EnvironmentFailure when the snapshot itself is unreadable.
    digest: hashing.rows_digest(tasks) when the caller already has it (a reused
    listing, scope.freeze), so an unchanged check does not walk the task list.
    memory: kept by a caller that checks again and again (the loop): with a spec watch, an
    unchanged check stats only the spec files the watch cannot vouch for."""
    run_dir, root = Path(run_dir), str(repo_root)
    now_ns = hashing._clock()
    digest = digest if digest is not None else hashing.rows_digest(tasks)
    cache = memory.cache if memory is not None and memory.cache is not None \
        else _load_cache(run_dir, root)
    if cache is not None:
        cache.begin()
    # The watch is armed before this check looks at any file; its first answer is None.
    only = _watched_changes(memory, cache) if cache is not None else None
    # Fast path: same task rows as last time and no spec file moved: the last answer holds.
    if cache is not None and cache.report is not None and digest == cache.rows_digest \
            and cache.refresh(now_ns, only):
        report = ScopeReport.from_dict(cache.report)
        report.files_hashed = cache.hashed
        if cache.hashed:
            _save_cache(run_dir, cache, report)
        if memory is not None:
            memory.cache = cache
        return report
    index = _load_index(run_dir)
    cache = cache or hashing.StatCache(root)
    report = _compare(run_dir, index, tasks, cache, now_ns, root)
    cache.rows_digest, cache.report = digest, report.to_dict()
    _save_cache(run_dir, cache, report)
    if memory is not None:
        memory.cache = cache
        if memory.watch is not None:
            memory.watch.track(cache.tracked())   # files new to the cache: dirty next time
    return report


def _watched_changes(memory: Memory | None, cache: hashing.StatCache) -> set[str] | None:
    """The spec paths to stat in this check: None (all of them) without a watch."""
    if memory is None or not memory.watch_specs:
        return None
    if not memory.watch_tried:
        memory.watch_tried = True
        from ralphpy.scope import spec_watch  # ctypes: only frozen runs pay for the import
        memory.watch = spec_watch.start(cache.tracked())
    return memory.watch.changed() if memory.watch is not None else None


def _save_cache(run_dir: Path, cache: hashing.StatCache, report: ScopeReport) -> None:
    try:
        _write(run_dir / CACHE_JSON, cache.dumps())
    except errors.EnvironmentFailure as err:
        report.warnings.append(f"stat cache not saved ({err}); the next check re-hashes")


__all__ = ["Snapshot", "Memory", "ScopeReport", "SpecChange", "freeze", "load_or_freeze",
           "check_scope_integrity", "spec_path"]

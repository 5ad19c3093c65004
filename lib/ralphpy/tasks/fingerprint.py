"""Owns the scope fingerprint (speed after a session wrote the store): one read
transaction on a read-only connection that yields a digest of everything scope freeze tracks
and the slug -> status map the "every frozen task is done" target needs; and whether an
`_export-json` listing shows exactly the definitions a fingerprint was read from, so the two
can be paired (scope.cache). Does not own the listing, snapshots or the comparison
(scope.freeze, scope.snapshot, scope.cache), and never writes: the connection is `mode=ro`, a read
transaction sees one committed state and never blocks writers (it may leave an empty
-wal/-shm behind, as any reader of a WAL database does).

What the digest covers, from the table contents (never updated_at, so a change by any writer
is seen: this CLI, plan-sync, a user with sqlite3):
  - each task of the scope, deleted ones included: uuid, slug, title, description, the stored
    steps text, priority (typed; a REAL exactly), spec, and whether it is deleted;
  - uuid, slug and scope of every other task (a blocker may live in another scope), and
    every (task, blocker) uuid pair of task_deps in key order. Together these decide the
    blocker slugs `_export-json` shows; an edit in another scope only costs a full listing.
Statuses are left out (todo -> done is progress, not a scope change). Rows are digested in
table order, deps in key order: a rewrite that only reorders rows costs a full listing.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass, field
from urllib.parse import quote

from ralphpy.tasks import db, markdown as md, queries as q
from ralphpy.tasks.errors import TaskError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable, Mapping

_BUSY_TIMEOUT_S = 5.0
_IN = f"({q.IN_SCOPE})"
# JSON prints a REAL with 15 digits: two priorities could print alike; 17 are exact.
_PRIORITY = ("typeof(t.priority), CASE WHEN typeof(t.priority) = 'real' "
             "THEN printf('%!.17g', t.priority) ELSE t.priority END")
# One scan of the table, aggregated in C (no Python object per task): faster than the
# scope index, which costs a table seek per row.
_TASKS = (f"SELECT json_group_array(CASE WHEN {_IN} THEN json_array(t.id, t.slug, t.title, "
          f"t.description, t.steps, {_PRIORITY}, t.spec_ref, t.status IS 'deleted') "
          f"ELSE json_array(t.id, t.slug, t.scope_repo, t.scope_branch) END), "
          f"json_group_object(t.slug, t.status) FILTER (WHERE {_IN}) FROM tasks t")
_DEPS = ("SELECT json_group_array(json_array(task_id, blocked_by)) FROM "
         "(SELECT task_id, blocked_by FROM task_deps ORDER BY task_id, blocked_by)")
# Pairing only (a full listing was made anyway): the tracked fields as _export-json has them.
# Blocker slugs are joined in Python: a JOIN costs two index seeks per dependency.
_ROWS = (f"SELECT t.id, t.slug, t.title, t.description, t.steps, t.priority, t.spec_ref, "
         f"t.status = 'deleted' FROM tasks t NOT INDEXED WHERE {q.IN_SCOPE}")
_SLUGS = "SELECT id, slug FROM tasks"
_PAIRS = "SELECT task_id, blocked_by FROM task_deps"


@dataclass
class Fingerprint:
    """What one read transaction saw. tracked: the scope's tracked fields per task, as
    `_export-json` shows them (only when read with tracked=True)."""

    digest: str
    statuses: dict[str, str]
    tracked: list[tuple] | None = field(default=None, repr=False)


def _read(conn: sqlite3.Connection, params: dict, tracked: bool) -> Fingerprint:
    tasks, statuses = conn.execute(_TASKS, params).fetchone()
    (deps,) = conn.execute(_DEPS).fetchone()
    digest = hashlib.sha256(f"{tasks}\n{deps}".encode("utf-8", "surrogatepass")).hexdigest()
    fp = Fingerprint(digest, json.loads(statuses) if statuses else {})
    if tracked:
        fp.tracked = _tracked(conn, params)
    return fp


def _tracked(conn: sqlite3.Connection, params: dict) -> list[tuple]:
    """The scope's tracked fields as `_export-json` shows them: steps parsed, deps the sorted
    slugs of existing blockers (SQLite's BINARY order is Python's str order)."""
    rows = conn.execute(_ROWS, params).fetchall()
    slug_of = dict(conn.execute(_SLUGS).fetchall())
    blockers: dict[str, list[str]] = {row[0]: [] for row in rows}
    for task_id, blocker in conn.execute(_PAIRS).fetchall():
        if task_id in blockers and blocker in slug_of:
            blockers[task_id].append(slug_of[blocker])
    return [_fields(r[1], r[2], r[3], md.steps_list(r[4]) or None, r[5], r[6], r[7],
                    sorted(blockers[r[0]])) for r in rows]


def read(db_path: str, repo: str, branch: str, *, tracked: bool = False) -> Fingerprint | None:
    """The fingerprint of scope (repo, branch) in the database at db_path, or None when it
    cannot be read (missing file, not a task database, locked for 5 s, a value JSON cannot
    hold...): the caller then lists the backlog the ordinary way."""
    try:
        conn = sqlite3.connect(f"file:{quote(db_path)}?mode=ro", uri=True,
                               timeout=_BUSY_TIMEOUT_S, isolation_level=None,
                               check_same_thread=False)
    except sqlite3.Error:
        return None
    try:
        # One snapshot for every query (db.read: BEGIN ... COMMIT, retried when busy).
        return db.read(conn, lambda c: _read(c, {"repo": repo, "branch": branch}, tracked))
    except (sqlite3.Error, TaskError, ValueError, TypeError):   # TypeError: odd steps
        return None
    finally:
        conn.close()


def _fields(slug, title, description, steps, priority, spec, deleted, deps) -> tuple:
    return (slug, title, description, steps, priority, spec, bool(deleted), deps)


def _slug(row: tuple) -> str:
    return repr(row[0])


def describes(fp: Fingerprint, listing: Iterable[Mapping]) -> bool:
    """True when the `_export-json` listing shows, for the same tasks, exactly the tracked
    fields of the store state fp was read from (fp read with tracked=True). Then any later
    fingerprint with fp's digest describes that listing too, whenever each was taken.
    Compared by repr, so 2 and 2.0 or 1 and True differ (safe: no pairing)."""
    if fp.tracked is None:
        return False
    try:
        listed = [_fields(t["id"], t["title"], t["description"], t["steps"], t["priority"],
                          t["spec"], t["status"] == "deleted", t["deps"]) for t in listing]
    except (KeyError, TypeError):   # not an _export-json listing
        return False
    return repr(sorted(fp.tracked, key=_slug)) == repr(sorted(listed, key=_slug))


__all__ = ["Fingerprint", "read", "describes"]

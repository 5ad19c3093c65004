"""Owns reading the embedded backlog without writing anything: the dry run's `peek` and
`list --all --markdown`, the report's `_export-json`, `ralph status`'s `_fleet`, and which
tasks an agent finished or gave up during a session (for the progress record and
--max-attempts, without a task call the spec does not list). Never creates .ralph/, the
database, or its -wal/-shm files: a database without a -wal file is opened `immutable` (no
lock, no -shm), one with a -wal file (a run is using it) `mode=ro`. The store read is the one
the embedded task CLI opens with the same environment (sources.choice); under a task source
there is none, and nothing is read. A PostgreSQL store is read in read-only transactions and
never migrated (a store without ralph's tables reads as not there yet), waiting at most 10 s
for a lost server; its connection is kept for the process's next read, as the task CLI keeps
its own (a runner reads the store after every session). Uses the task CLI's own queries and
rendering; does not own them, nor any write. Never prints."""
from __future__ import annotations

import io
import os
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Mapping, TypeVar
from urllib.parse import quote

T = TypeVar("T")


@dataclass(frozen=True)
class ReadResult:
    ok: bool
    output: str          # stdout of the command, trailing newlines removed (like a task call)
    db_path: Path | None  # None: no database could be located (not a git repository), or a server
    exists: bool          # False: the database does not exist yet (nothing was read)
    where: str = ""       # the store as it may be shown: the file, or the URL without password


# A read (a dry run, a report, a record) waits this long at most for a lost server: the run's
# own task calls are what wait an outage out (fleet.outage).
_READ_RETRY_S = 10.0


def _seconds(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return _READ_RETRY_S                 # the task CLI names a bad value; here: the default


# The git top level of each (directory, process directory, the environment git reads): a run
# reads its store around every session, and finding the repository from its files each time
# was a third of what those reads cost. A repository does not move under a running loop.
_TOPLEVELS: dict[tuple, str] = {}
_GIT_READS = ("PATH", "HOME", "XDG_CONFIG_HOME", "SUDO_UID")


def _db_path(git, explicit: str) -> Path:
    """tasks/db.locate() without its mkdir and .gitignore (docs/contract/task-cli.md s.3); explicit:
    the file RALPH_TASKS_DB names, "" for the default one."""
    if explicit:
        return Path(git.cwd) / explicit
    key = (str(git.cwd), os.getcwd(), tuple(sorted(
        (k, v) for k, v in git.environ.items() if k.startswith("GIT_") or k in _GIT_READS)))
    if key not in _TOPLEVELS:
        _TOPLEVELS[key] = git.toplevel()
    return Path(_TOPLEVELS[key]) / ".ralph" / "tasks.db"


def db_path(environ: Mapping[str, str], cwd: Path) -> Path | None:
    """Where the embedded task CLI run in `cwd` with `environ` keeps its database (s.3), or
    None outside a git repository, for a server (no file) or under a task source (no embedded
    store). Creates nothing (scope.cache stats it)."""
    from ralphpy.sources import choice
    from ralphpy.tasks.errors import TaskError
    from ralphpy.tasks.git_scope import Git
    store = choice.store_in(environ)
    if store is None or choice.is_store(store):
        return None
    try:
        return _db_path(Git(str(cwd), environ), store)
    except TaskError:
        return None


def _connect(path: Path) -> sqlite3.Connection:
    wal = path.with_name(path.name + "-wal")
    mode = "mode=ro" if wal.exists() else "immutable=1"
    return sqlite3.connect(f"file:{quote(str(path))}?{mode}", uri=True, isolation_level=None,
                           check_same_thread=False)


def _open(environ: Mapping[str, str], cwd: Path):
    """(connection or None, ReadResult stub): the store the embedded task CLI opens with this
    environment (sources.choice) opened read-only; None with the result to return when there
    is nothing to read (a task source's backlog, no file, no tables) or it failed."""
    from ralphpy.sources import choice
    from ralphpy.tasks import store_url
    from ralphpy.tasks.errors import TaskError
    from ralphpy.tasks.git_scope import Git
    store = choice.store_in(environ)
    if store is None:                        # a task source keeps its own backlog
        return None, ReadResult(True, "", None, False)
    if choice.is_store(store):
        shown = store_url.redact(store)
        if not store_url.is_postgres(store):
            return None, ReadResult(False, f"Error: {store_url.unknown_scheme_message(store)}",
                                    None, False, shown)
        from ralphpy.tasks import pg, pg_schema
        given = environ.get("RALPH_STORE_RETRY", "")
        retry = given if given and _seconds(given) < _READ_RETRY_S else f"{_READ_RETRY_S:g}"
        try:
            conn = pg.connect(store, {**environ, "RALPH_STORE_RETRY": retry}, lambda line: None,
                              migrate=False)
        except TaskError as err:
            return None, ReadResult(False, err.lines().strip(), None, True, shown)
        if conn.schema < pg_schema.KNOWN:  # new (or older) store: reading it would migrate it
            conn.close()
            return None, ReadResult(True, "", None, False, shown)
        return conn, ReadResult(True, "", None, True, shown)
    try:
        path = _db_path(Git(str(cwd), environ), store)
    except TaskError as err:
        return None, ReadResult(False, err.lines().strip(), None, False)
    if not path.exists():
        return None, ReadResult(True, "", path, False, str(path))
    try:
        return _connect(path), ReadResult(True, "", path, True, str(path))
    except sqlite3.Error as err:
        return None, ReadResult(False, f"Error: database error: {err}", path, True, str(path))


def _failed(err: Exception) -> bool:
    from ralphpy.tasks import pg
    return isinstance(err, sqlite3.Error) or pg.is_error(err)


def call(argv: list[str], *, environ: Mapping[str, str], cwd: Path) -> ReadResult:
    """Run one read-only task command (`peek ...`, `list ...`, `_export-json`, `_fleet`)
    in-process on a read-only connection. ok=False with the error line as output when it
    fails."""
    from ralphpy.tasks import build_cmds, views
    commands = {"peek": build_cmds.peek, "list": views.list_tasks,
                "_export-json": views.export_json}
    if argv[0] == "_fleet":
        from ralphpy.tasks import fleet_cmds
        commands["_fleet"] = fleet_cmds.fleet
    output, found = _read(lambda ctx: commands[argv[0]](ctx, argv[1:]), environ, cwd)
    if output is None:
        return found
    return ReadResult(True, output.rstrip("\n"), found.db_path, True, found.where)


def _in_process(read: Callable[[object], T], environ: Mapping[str, str], cwd: Path) -> T | None:
    """read(ctx) over the embedded store, opened read-only as `call` opens it; None when there
    is no store to read (a task source's backlog) or the read failed."""
    return _read(read, environ, cwd)[0]


def _read(read: Callable[[object], T], environ: Mapping[str, str], cwd: Path
          ) -> tuple[T | None, ReadResult]:
    """read(ctx) over the store opened read-only, and how it went: (its value, where the store
    is); (None, the error line) when there is none or the read failed."""
    from ralphpy.tasks import db
    from ralphpy.tasks.context import Ctx
    from ralphpy.tasks.errors import TaskError
    from ralphpy.tasks.git_scope import Git, resolve_scope
    from ralphpy.tasks.store_url import redact
    conn, found = _open(environ, cwd)
    if conn is None:
        return None, found
    try:
        scope = resolve_scope(Git(str(cwd), environ))
        return read(Ctx(conn, scope, environ, str(cwd), io.StringIO())), found
    except TaskError as err:
        return None, ReadResult(False, err.lines().strip(), found.db_path, True, found.where)
    except Exception as err:
        if not _failed(err):
            raise                                    # a bug: let the traceback show
        return None, ReadResult(False, "Error: database error: "
                                f"{redact(' '.join(str(err).split()))}",
                                found.db_path, True, found.where)
    finally:
        db.release(conn)


def export_records(selection: str, *, environ: Mapping[str, str], cwd: Path,
                   **params: object) -> list[dict] | None:
    """`_export-json`'s records of part of the scope, found by an index (tasks.views'
    SELECTIONS: `touched` since=, `slugs` slugs=[...], `retried`, `verify_line`); None when
    the store cannot be read here (a task source: ask the task command instead)."""
    from ralphpy.tasks import jsontext, views
    if "slugs" in params:
        params["slugs"] = jsontext.dumps(list(params["slugs"]))
    return _in_process(lambda ctx: views.export_records(ctx, selection, **params), environ, cwd)


def any_pending(*, environ: Mapping[str, str], cwd: Path) -> bool | None:
    """Whether a task of the scope could still be started (open or active, not held, its
    blockers done); None when the store cannot be read here."""
    from ralphpy.tasks import views
    return _in_process(views.any_pending, environ, cwd)


def _select(sql: str, params: tuple, environ: Mapping[str, str], cwd: Path) -> list[tuple]:
    """The rows of one read-only query over the store; [] when there is none or it fails."""
    from ralphpy.tasks import db
    from ralphpy.tasks.errors import TaskError
    try:
        conn, _ = _open(environ, cwd)
    except TaskError:
        return []
    if conn is None:
        return []
    try:  # in a transaction: a kept connection the server dropped is opened again
        return db.read(conn, lambda c: c.execute(sql, params).fetchall())
    except TaskError:
        return []
    except Exception as err:
        if not _failed(err):
            raise
        return []
    finally:
        db.release(conn)


def dependency_count(*, environ: Mapping[str, str], cwd: Path) -> int | None:
    """How many dependencies the store holds (`block` and `unblock` stamp no task's
    updated_at); None when unknown. A count of one table's rows, in C."""
    rows = _select("SELECT count(*) FROM task_deps", (), environ, cwd)
    return rows[0][0] if rows else None


def since_now() -> str:
    """Now, as the reads below take their since_utc: SQLite's datetime('now'), which stamps a
    task's updated_at and deleted_at, so a read compares the store's own text."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def finished_by(agent_id: str, since_utc: str, *, environ: Mapping[str, str],
                cwd: Path) -> list[str]:
    """Slugs of the tasks this agent marked done at or after since_utc ('YYYY-mm-dd HH:MM:SS',
    SQLite's datetime('now') format), oldest first; [] when unknown."""
    return [row[0] for row in _select(
        "SELECT slug FROM tasks WHERE status = 'done' AND assignee = ? "
        "AND updated_at >= ? ORDER BY updated_at, slug", (agent_id, since_utc), environ, cwd)]


def deleted_since(since_utc: str, *, environ: Mapping[str, str],
                  cwd: Path) -> list[tuple[str, str | None]]:
    """(slug, assignee) of each task deleted at or after since_utc (a `task delete` keeps the
    assignee: the agent that held it, if any), oldest first; [] when unknown."""
    return [(row[0], row[1]) for row in _select(
        "SELECT slug, assignee FROM tasks WHERE status = 'deleted' AND updated_at >= ? "
        "AND deleted_at >= ? ORDER BY deleted_at, slug", (since_utc, since_utc), environ, cwd)]


def retry_counts(*, environ: Mapping[str, str], cwd: Path) -> dict[str, int]:
    """Each open or active task's retry_count above 0 by its row id (a slug repeats across
    scopes; a task left out had 0): taken before a session, so failed_since can tell the tasks
    a `fail` put back during it. Read from idx_tasks_retried: never failed tasks are not read."""
    return {row[0]: row[1] for row in _select(
        "SELECT id, retry_count FROM tasks WHERE retry_count > 0 "
        "AND status IN ('open', 'active')", (), environ, cwd)}


def failed_since(before: Mapping[str, int], since_utc: str, *, environ: Mapping[str, str],
                 cwd: Path) -> dict[str, str]:
    """slug -> fail reason of each task a `task fail` put back open at or after since_utc,
    its retry_count above what `before` (retry_counts at the session's start) had: the
    agent giving up on its task, as the build skill tells it to. Oldest first."""
    rows = _select("SELECT id, slug, retry_count, fail_reason FROM tasks WHERE status = 'open' "
                   "AND updated_at >= ? ORDER BY updated_at, slug", (since_utc,), environ, cwd)
    return {slug: reason or "failed by the agent" for row_id, slug, retries, reason in rows
            if (retries or 0) > before.get(row_id, 0)}


__all__ = ["ReadResult", "call", "export_records", "any_pending", "dependency_count",
           "deleted_since", "failed_since", "finished_by", "retry_counts",
           "since_now", "db_path"]

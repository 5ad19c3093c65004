"""Owns reading the embedded backlog without writing anything: the dry run's `peek` and
`list --all --markdown`, and which tasks an agent finished during a session (for the progress
record, without a task call the spec does not list). Never creates .ralph/, the database, or its
-wal/-shm files: a database without a -wal file is opened `immutable` (no lock, no -shm), one
with a -wal file (a run is using it) `mode=ro`. Uses the task CLI's own queries and rendering;
does not own them, nor any write. Never prints."""
from __future__ import annotations

import io
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping
from urllib.parse import quote


@dataclass(frozen=True)
class ReadResult:
    ok: bool
    output: str          # stdout of the command, trailing newlines removed (like a task call)
    db_path: Path | None  # None: no database could be located (not a git repository)
    exists: bool          # False: the database does not exist yet (nothing was read)


def _db_path(git) -> Path:
    """tasks/db.locate() without its mkdir and .gitignore (task-cli.md s.3)."""
    explicit = git.environ.get("RALPH_TASKS_DB", "")
    if explicit:
        return Path(git.cwd) / explicit
    return Path(git.toplevel()) / ".ralph" / "tasks.db"


def db_path(environ: Mapping[str, str], cwd: Path) -> Path | None:
    """Where the embedded task CLI run in `cwd` with `environ` keeps its database (s.3), or
    None outside a git repository. Creates nothing (scope.cache stats it)."""
    from ralphkit.tasks.errors import TaskError
    from ralphkit.tasks.git_scope import Git
    try:
        return _db_path(Git(str(cwd), environ))
    except TaskError:
        return None


def _connect(path: Path) -> sqlite3.Connection:
    wal = path.with_name(path.name + "-wal")
    mode = "mode=ro" if wal.exists() else "immutable=1"
    return sqlite3.connect(f"file:{quote(str(path))}?{mode}", uri=True, isolation_level=None,
                           check_same_thread=False)


def call(argv: list[str], *, environ: Mapping[str, str], cwd: Path) -> ReadResult:
    """Run one read-only task command (`peek ...`, `list ...`) in-process on a read-only
    connection. ok=False with the error line as output when it fails."""
    from ralphkit.tasks import build_cmds as backlog, views
    from ralphkit.tasks.context import Ctx
    from ralphkit.tasks.errors import TaskError
    from ralphkit.tasks.git_scope import Git, resolve_scope
    commands = {"peek": backlog.peek, "list": views.list_tasks,
                "_export-json": views.export_json}
    git = Git(str(cwd), environ)
    try:
        path = _db_path(git)
    except TaskError as err:
        return ReadResult(False, err.lines().strip(), None, False)
    if not path.exists():
        return ReadResult(True, "", path, False)
    try:
        conn = _connect(path)
    except sqlite3.Error as err:
        return ReadResult(False, f"Error: database error: {err}", path, True)
    try:
        scope = resolve_scope(git)
        output = commands[argv[0]](Ctx(conn, scope, environ, str(cwd), io.StringIO()), argv[1:])
    except TaskError as err:
        return ReadResult(False, err.lines().strip(), path, True)
    except sqlite3.Error as err:
        return ReadResult(False, f"Error: database error: {err}", path, True)
    finally:
        conn.close()
    return ReadResult(True, output.rstrip("\n"), path, True)


def finished_by(agent_id: str, since_utc: str, *, environ: Mapping[str, str],
                cwd: Path) -> list[str]:
    """Slugs of the tasks this agent marked done at or after since_utc ('YYYY-mm-dd HH:MM:SS',
    SQLite's datetime('now') format), oldest first; [] when unknown."""
    from ralphkit.tasks.errors import TaskError
    from ralphkit.tasks.git_scope import Git
    try:
        path = _db_path(Git(str(cwd), environ))
    except TaskError:
        return []
    if not path.exists():
        return []
    try:
        conn = _connect(path)
        try:
            rows = conn.execute(
                "SELECT slug FROM tasks WHERE status = 'done' AND assignee = ? "
                "AND updated_at >= ? ORDER BY updated_at, slug", (agent_id, since_utc)).fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return []
    return [row[0] for row in rows]


__all__ = ["ReadResult", "call", "finished_by", "db_path"]

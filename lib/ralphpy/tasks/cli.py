"""Owns the `task` command line (docs/contract/task-cli.md): help, dispatch, the order of checks
(open the database, schema, scope, then the command's own arguments, s.1), printing results
and `Error: ` lines, and exit codes. `main()` never exits and keeps no state between calls.
Does not own any command's logic (backlog, plan_sync, views, edit, agent_cmds)."""
from __future__ import annotations

import os
import sys

from ralphpy.tasks.errors import TaskError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Mapping, Sequence, TextIO

HELP = """\
Usage: ralph task <command> [options]

Plan Phase Commands:
  plan-sync             Read JSONL from stdin, upsert tasks into the database
  plan-status           Print summary: N open, N active, N done, N blocked, N deleted

Build Phase Commands:
  peek [-n 5]                Top N claimable + all active tasks (markdown-KV)
  claim [<id>] [--lease N]   Claim task (targeted by id, or highest-priority)
  renew <id> [--lease N]     Extend lease on an active task
  done <id> --result '<json>'  Mark task as done, store result
  fail <id> --reason "<text>"  Release task back to open

Shared Commands:
  list [--all] [--status S] [--markdown] List tasks (default: non-deleted)
  show <id> [--with-deps]      Full detail for one task
  create <id> <title> [opts]   Create a task
  update <id> [opts]           Update fields on a non-done task
  delete <id>                  Soft delete a task
  delete --status <csv> [--spec S] [--category C]  Batch delete by status
  delete --all --confirm [--spec S] [--category C]  Delete all non-deleted tasks
  deps <id>                    Show dependency tree

Dependency Commands:
  block <id> --by <blocker-id>    Add a dependency
  unblock <id> --by <blocker-id>  Remove a dependency

Agent Commands:
  agent register              Register a new agent
  agent list                  Show active agents
  agent deregister <id>       Mark agent as stopped

Database:
  Path is derived from git root: <git-root>/.ralph/tasks.db
"""

# command -> (module, function); modules are imported only for the command that runs.
_COMMANDS = {
    "plan-sync": ("plan_sync", "plan_sync"), "plan-status": ("build_cmds", "plan_status"),
    "peek": ("build_cmds", "peek"), "claim": ("build_cmds", "claim"), "renew": ("build_cmds", "renew"),
    "done": ("build_cmds", "done"), "fail": ("build_cmds", "fail"),
    "_release": ("build_cmds", "release"),
    "list": ("views", "list_tasks"), "show": ("views", "show"), "deps": ("views", "deps"),
    "_export-json": ("views", "export_json"),
    "create": ("edit", "create"), "update": ("edit", "update"), "delete": ("edit", "delete"),
    "block": ("edit", "block"), "unblock": ("edit", "unblock"),
    "_hold": ("run_edits", "hold"), "_unhold": ("run_edits", "unhold"),
    "_reopen": ("run_edits", "reopen"), "_recommit": ("run_edits", "recommit"),
    "agent": ("agent_cmds", "agent"),
    "_heartbeat": ("fleet_cmds", "heartbeat"), "_fleet": ("fleet_cmds", "fleet"),
    "migrate-db": ("migrate_db", "migrate_db"),
    "ask": ("ask", "ask"),
}


def _render_md(argv: Sequence[str]) -> str:
    from ralphpy.tasks import jsontext, markdown
    if not argv:
        raise TaskError("missing JSON argument")
    try:
        obj = jsontext.loads(argv[0])
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        raise TaskError("argument is not a JSON object")
    return markdown.sections([(markdown.json_view(obj), markdown.CLAIM)])


def _run(argv: Sequence[str], stdin: TextIO, environ: Mapping[str, str], cwd: str,
         stderr: TextIO) -> str:
    if not argv:
        raise TaskError("missing command\n\n" + HELP.rstrip("\n"))
    command, rest = argv[0], argv[1:]
    if command in ("--help", "-h"):
        return HELP
    if command == "plan-export":
        raise TaskError("unknown command 'plan-export'. Use 'ralph task list --all' instead.")
    if command == "_render-md":
        return _render_md(rest)
    from ralphpy.tasks.git_scope import Git, resolve_scope
    git = Git(cwd, environ)
    if command == "_get-scope":
        scope = resolve_scope(git)
        return f"repo:{scope.repo}\nbranch:{scope.branch}\n"
    if command not in _COMMANDS:
        raise TaskError(f"unknown command '{command}'")
    from ralphpy.tasks import db
    from ralphpy.tasks.context import Ctx
    conn = db.connect(db.locate(git), environ, stderr.write)  # s.1 order: (1) open, (2) schema,
    try:
        scope = resolve_scope(git)              # (3) scope,
        module_name, function = _COMMANDS[command]
        module = __import__(f"ralphpy.tasks.{module_name}", fromlist=[function])  # no importlib
        return getattr(module, function)(Ctx(conn, scope, environ, cwd, stdin), rest)  # (4), (5)
    finally:
        db.release(conn)


def _shown(text: str) -> str:
    """text as its bytes read, undecodable ones as \\xNN (argv and stdin decode them as
    surrogates), cut to 80 characters."""
    try:
        shown = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:         # a lone surrogate of a JSON "\\ud800" escape
        shown = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return shown if len(shown) <= 80 else shown[:77] + "..."


def main(argv: Sequence[str], *, stdin: TextIO | None = None, stdout: TextIO | None = None,
         stderr: TextIO | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run one task command; returns its exit status (0, 1 or 2), never exits."""
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr if stderr is None else stderr
    environ = os.environ if environ is None else environ
    try:
        output = _run(list(argv), stdin, environ, os.getcwd(), stderr)
    except TaskError as err:
        stderr.write(err.lines())
        stderr.flush()
        return err.exit_code
    except OverflowError:  # a digits-only value beyond SQLite's 64-bit integers
        stderr.write("Error: number out of range\n")
        stderr.flush()
        return 1
    except UnicodeEncodeError as err:  # bytes that are not UTF-8 (an argument, stdin, the
        stderr.write(f"Error: text is not valid UTF-8: {_shown(err.object)}\n")  # agent id)
        stderr.flush()                 # reach the store, which keeps UTF-8: nothing written
        return 1
    except OSError as err:
        stderr.write(f"Error: {err.strerror or err}: {err.filename or ''}".rstrip(": ") + "\n")
        stderr.flush()
        return 1
    except Exception as err:
        import sqlite3  # not imported up front: --help and friends never need it

        from ralphpy.tasks import pg
        from ralphpy.tasks.store_url import redact
        if not isinstance(err, sqlite3.Error) and not pg.is_error(err):
            raise  # a bug: let the traceback show
        if pg.is_out_of_range(err):  # PostgreSQL's word for the OverflowError above
            stderr.write("Error: number out of range\n")
            stderr.flush()
            return 1
        # s.1: a database error (not a database, unwritable, ...) is exit 1 with one line
        stderr.write(f"Error: database error: {redact(' '.join(str(err).split()))}\n")
        stderr.flush()
        return 1
    stdout.write(output)
    stdout.flush()
    return 0


def console_main(run: Callable[[list[str]], int] | None = None) -> None:
    """The embedded task CLI as a program (sources.entry chooses it); `run` answers the
    command instead of the embedded store (a task source's CLI)."""
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        try:  # values are data (s.1): bytes that are not UTF-8 pass through unchanged
            stream.reconfigure(encoding="utf-8", errors="surrogateescape")
        except (AttributeError, ValueError):
            pass
    try:
        code = (run or main)(sys.argv[1:])
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:  # the reader went away (`task list | head`): quiet exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    sys.exit(code)


__all__ = ["main", "console_main", "HELP"]

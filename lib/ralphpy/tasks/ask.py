"""Owns `task ask <id> "<question>" [--default ANSWER] [--timeout 2h]` on the embedded store (a
ralph.py addition, docs/questions.md): the task is held with the question as the hold's reason
(task_holds, decision 0009: no new status in the database ralph.sh shares), given back to
open when the asking session had it active (not a failure: its retry count stays), and the
question recorded with its default and deadline (tasks.questions), all or nothing. Does not
own answering (commands.answer) or what a run does with a question (questions.between)."""
from __future__ import annotations

import time

from ralphpy import durations
from ralphpy.tasks import args as A
from ralphpy.tasks import db, queries as q, question_files as questions
from ralphpy.tasks.context import Ctx
from ralphpy.tasks.errors import TaskError
from ralphpy.tasks.git_scope import Git

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Sequence

USAGE = 'ralph task ask <id> "<question>" [--default ANSWER] [--timeout 2h]'


def parse(argv: Sequence[str]) -> tuple[str, str, str | None, float | None]:
    """(id, question, default, timeout in seconds) of ask's arguments; TaskError (exit 1)
    when one is missing or bad."""
    slug, rest = A.optional_id(argv)
    if not slug:
        raise TaskError("missing task ID", usage=USAGE)
    text = rest[0] if rest and not rest[0].startswith("--") else None
    parsed = A.flags(rest[1:] if text is not None else rest,
                     values=("--default", "--timeout"))
    if text is None:
        raise TaskError("missing question", usage=USAGE)
    if not text.strip():
        raise TaskError("the question is empty: say what the person should decide")
    timeout = parsed.get("--timeout")
    seconds = None
    if timeout is not None:
        try:
            seconds = durations.parse_duration(timeout)
        except ValueError as err:
            raise TaskError(f"--timeout: {err}") from None
        if seconds <= 0:
            raise TaskError(f"--timeout must be more than 0, got: {timeout}")
    return slug, text, parsed.get("--default"), seconds


HELP = f"""Usage: {USAGE}

Ask a person a question about a task: the task is held, with the question as the reason,
until `ralph answer <id> "<answer>"` (or, after --timeout, the --default) answers it; its
next session is given the answer. --timeout takes 90s, 15m, 2h, 1h30m.
"""


def ask(ctx: Ctx, argv: Sequence[str]) -> str:
    if list(argv) in (["--help"], ["-h"]):      # not in `task --help`: that text is s.2's
        return HELP
    slug, text, default, seconds = parse(argv)
    where = questions.folder(ctx.environ, Git(ctx.cwd, ctx.environ).toplevel)

    def act(conn):
        task_id, status = q.task_id_status(conn, ctx.scope, slug)
        if status in ("done", "deleted"):
            raise TaskError(f"task '{slug}' is {status}: there is nothing to ask about")
        conn.execute("INSERT INTO task_holds (task_id, reason) VALUES (?, ?) ON CONFLICT (task_id) "
                     "DO UPDATE SET reason = excluded.reason, created_at = excluded.created_at",
                     (task_id, questions.REASON + text))
        if status == "active":           # the asking session's claim goes back, uncounted
            conn.execute("UPDATE tasks SET status = 'open', assignee = NULL, "
                         "lease_expires_at = NULL, updated_at = datetime('now') WHERE id = ?",
                         (task_id,))
        questions.ask(where, slug, text, default, seconds, time.time())   # before the commit
    db.write(ctx.conn, act)
    return f"asked {slug}: held until a person answers; go on with another task\n"


__all__ = ["ask", "parse", "USAGE", "HELP"]

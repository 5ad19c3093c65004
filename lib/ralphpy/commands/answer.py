"""Owns `ralph answer <id> "<answer>"` (docs/questions.md): the answer to the question an agent
asked on a task (`task ask`) recorded, then the task's hold released (`task _unhold`), so the
next session on it is given the answer. Every check comes before the first write; a release
the task command refuses takes the answer back. Knows nothing of the loop (questions.between
gives the answer to the session) or of how the backlog stores a hold."""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable, Mapping, TextIO

from ralphpy.backlog.calls import TaskCommand
from ralphpy.tasks import question_files as records

USAGE = 'Usage: ralph answer <id> "<answer>"'
HELP = f"""{USAGE}

Answer the question an agent asked on a task (`ralph task ask`): the answer is recorded, the
task is released, and the next session on it is given the answer in its prompt.
'ralph task show <id>' shows the question; docs/questions.md says more.
"""



def main(argv: list[str], *, ralph_dir: Path, task: Callable[[], TaskCommand | None],
         environ: Mapping[str, str], stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    """argv is what follows `answer`; task gives the task command a run here would use (None:
    the settings were bad and said so). Returns 0, or 1 with one `Error:` line."""
    out, err = stdout or sys.stdout, stderr or sys.stderr

    def refuse(message: str) -> int:
        print(f"Error: {message}", file=err)
        return 1
    if argv in (["-h"], ["--help"]):
        print(HELP, end="", file=out)
        return 0
    if len(argv) != 2 or argv[0].startswith("-"):
        return refuse(f"ralph answer takes a task id and the answer. {USAGE}")
    slug, text = argv
    if not text.strip():
        return refuse(f"the answer to {slug}'s question is empty")
    where = records.folder(environ, lambda: str(ralph_dir.parent))
    asked = records.read(where, slug)
    if asked is None:
        return refuse(f"task '{slug}' has no question waiting for an answer "
                      f"('ralph task show {slug}' says why it is held)")
    if asked.answer is not None:
        how = "by its default" if asked.by == records.BY_DEFAULT else "already"
        return refuse(f"the question on {slug} was answered {how}: {asked.answer}")
    command = task()
    if command is None:
        return 1
    if not records.answer(where, slug, text, records.BY_PERSON, time.time()):
        return refuse(f"the question on {slug} was answered meanwhile")
    released = command.call("_unhold", slug, env=dict(environ))
    if not released.ok:                  # still held: the answer is not given either
        records.unanswer(where, slug)
        why = released.error.removeprefix("Error: ") or "the task command failed"
        return refuse(f"cannot release {slug}: {why}")
    print(f"answered {slug}: it can be claimed again; its next session is given the answer",
          file=out)
    return 0


__all__ = ["main", "HELP", "USAGE"]

"""Owns the question records: what an agent asked about a task (`task ask`), its default and
deadline, and its answer (`ralph answer`, or the default once the deadline passed). One JSON
file per task under `.ralph/questions/asked/`, and its answer under `answered/`, created only
if none is there yet, so a person's answer and the run's default never both win. A run's
sessions find the folder in $RALPH_QUESTIONS_DIR (a --parallel worktree's own .ralph/ is not
the run's). The task's hold (task_holds, a source's holds file) is what parks the task; these
files carry what a hold's one reason cannot. Knows nothing of the store, the loop or
notifications."""
from __future__ import annotations

import os
from pathlib import Path

from ralphpy import atomic_file
from ralphpy.tasks import jsontext

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Mapping

DIR_ENV = "RALPH_QUESTIONS_DIR"
REASON = "question: "                    # a question's hold reason starts so (task show, list)
BY_PERSON, BY_DEFAULT = "person", "default"


class Question:
    """A plain record (no dataclass: `task show` imports this module and starts fast)."""

    __slots__ = ("task", "text", "default", "deadline", "asked_at", "answer", "by",
                 "answered_at")

    def __init__(self, task: str, text: str, default: str | None, deadline: float | None,
                 asked_at: float, answer: str | None = None, by: str | None = None,
                 answered_at: float | None = None) -> None:
        self.task, self.text, self.asked_at = task, text, asked_at
        self.default = default                # the answer at the deadline; None: stays held
        self.deadline = deadline              # epoch seconds; None: no timeout
        self.answer, self.answered_at = answer, answered_at
        self.by = by                          # BY_PERSON or BY_DEFAULT, once answered


def release_hint(reason: str, slug: str) -> str:
    """How a person releases a held task (`task show`): a question is answered."""
    if reason.startswith(REASON):
        return f'answer it with: ralph answer {slug} "<answer>"'
    return f"release it with: ralph task _unhold {slug}"


def folder(environ: Mapping[str, str], git_root: Callable[[], str]) -> Path:
    """$RALPH_QUESTIONS_DIR, else <git root>/.ralph/questions (git asked only then)."""
    explicit = environ.get(DIR_ENV)
    return Path(explicit) if explicit else Path(git_root()) / ".ralph" / "questions"


def _name(task: str) -> str:
    from urllib.parse import quote           # only where a question is read or written
    return quote(task, safe="") + ".json"   # a slug may hold `/` (web/01)


def _dump(values: dict) -> bytes:
    return (jsontext.dumps(values) + "\n").encode("utf-8", "surrogateescape")


def ask(where: Path, task: str, text: str, default: str | None, timeout_s: float | None,
        now: float) -> Question:
    """Record a question on `task`, replacing an earlier one and its answer."""
    q = Question(task, text, default, None if timeout_s is None else now + timeout_s, now)
    atomic_file.ensure_dir(where / "asked")
    atomic_file.write_atomic(where / "asked" / _name(task), _dump({
        "task": task, "question": text, "default": default, "deadline": q.deadline,
        "asked_at": now}))
    (where / "answered" / _name(task)).unlink(missing_ok=True)
    return q


def answer(where: Path, task: str, text: str, by: str, now: float) -> bool:
    """Record the answer to `task`'s question; False when it was answered already."""
    atomic_file.ensure_dir(where / "answered")
    path = where / "answered" / _name(task)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    atomic_file.write_atomic(temp, _dump({"task": task, "answer": text, "by": by,
                                          "answered_at": now}))
    try:
        os.link(temp, path)                  # only if none is there: the first answer wins
    except FileExistsError:
        return False
    finally:
        temp.unlink(missing_ok=True)
    return True


def unanswer(where: Path, task: str) -> None:
    """Take back an answer that could not be given (its task stayed held)."""
    (where / "answered" / _name(task)).unlink(missing_ok=True)


def _load(path: Path) -> dict | None:
    try:
        value = jsontext.loads(path.read_text(encoding="utf-8", errors="surrogateescape"))
    except (FileNotFoundError, ValueError):
        return None                          # settled meanwhile, or not ours: no question
    return value if isinstance(value, dict) else None


def read(where: Path, task: str) -> Question | None:
    """`task`'s question with its answer, if it has one."""
    asked = _load(where / "asked" / _name(task))
    if asked is None:
        return None
    got = _load(where / "answered" / _name(task)) or {}
    return Question(task, str(asked.get("question", "")), asked.get("default"),
                    asked.get("deadline"), asked.get("asked_at") or 0.0,
                    got.get("answer"), got.get("by"), got.get("answered_at"))


def every(where: Path) -> list[Question]:
    """Every recorded question, oldest first (one file per question still recorded: the
    cost is the open questions', never the backlog's)."""
    from urllib.parse import unquote
    try:
        names = os.listdir(where / "asked")
    except FileNotFoundError:
        return []
    found = [read(where, unquote(name[:-5])) for name in names
             if name.endswith(".json") and not name.startswith(".")]
    return sorted((q for q in found if q is not None), key=lambda q: q.asked_at)


def forget(where: Path, task: str) -> None:
    """`task` is done: its question and answer are settled."""
    (where / "answered" / _name(task)).unlink(missing_ok=True)
    (where / "asked" / _name(task)).unlink(missing_ok=True)


__all__ = ["Question", "DIR_ENV", "REASON", "BY_PERSON", "BY_DEFAULT", "release_hint", "folder", "ask",
           "answer", "unanswer", "read", "every", "forget"]

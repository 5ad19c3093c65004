"""Owns what a run does with the questions agents asked (docs/questions.md), between sessions,
in both loops: a new question is told once (stderr, the events, so the notify channels carry
it); a question whose deadline passed takes its default as the answer and its task is released
(`task _unhold`), or, with no default, is told once as timed out and stays held; a person's
answer (`ralph answer`) is told once; the answer is put into the prompt of its task's next
session; a task done forgets its question. Its cost is the open questions' (one file each),
never the backlog's. Knows nothing of the loops, the store or delivery."""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ralphpy.durations import format_duration
from ralphpy.tasks import question_files as records

TaskCall = Callable[[list[str]], "tuple[bool, str]"]


@dataclass(frozen=True)
class Note:
    kind: str                            # question, question_answered, question_default,
    task: str                            # question_timeout, question_unsettled
    message: str
    fields: dict = field(default_factory=dict)


class Waiting:
    """The questions of one backlog's `.ralph/questions/`, as a run sees them."""

    def __init__(self, where: Path, call: TaskCall, clock: Callable[[], float] = time.time):
        self.where, self.call, self.clock = where, call, clock
        self.told: set[tuple[str, str, float]] = set()      # (kind, task, asked_at)

    def _once(self, kind: str, q: records.Question, message: str, **fields) -> list[Note]:
        key = (kind, q.task, q.asked_at)
        if key in self.told:
            return []
        self.told.add(key)
        return [Note(kind, q.task, message, fields)]

    def between(self) -> list[Note]:
        """What changed since the last look: new questions, answers, deadlines passed (a
        default taken here)."""
        notes: list[Note] = []
        now = self.clock()
        for q in records.every(self.where):
            notes += self._once("question", q, asked_line(q, now), question=q.text,
                                **({"default": q.default} if q.default is not None else {}),
                                **({"answer_with": f'ralph answer {q.task} "<answer>"'}))
            if q.answer is None and q.deadline is not None and now >= q.deadline:
                notes += self._timed_out(q, now)
            elif q.answer is not None:
                kind = "question_default" if q.by == records.BY_DEFAULT else "question_answered"
                notes += self._once(kind, q, answered_line(q), question=q.text,
                                    answer=q.answer, by=q.by)
        return notes

    def _timed_out(self, q: records.Question, now: float) -> list[Note]:
        if q.default is None:
            return self._once("question_timeout", q, f"question on {q.task} timed out with no "
                              f"default: it stays held until `ralph answer {q.task} ...`",
                              question=q.text)
        if not records.answer(self.where, q.task, q.default, records.BY_DEFAULT, now):
            return []                            # a person answered meanwhile: told next time
        ok, out = self.call(["_unhold", q.task])
        if not ok:                               # the hold stays; the answer waits with it
            return self._once("question_unsettled", q, f"question on {q.task}: the default "
                              f"was taken but its hold could not be released: {out}")
        q = records.read(self.where, q.task) or q
        return self._once("question_default", q, answered_line(q), question=q.text,
                          answer=q.answer, by=records.BY_DEFAULT)

    def annotate(self, data: str, task: str | None) -> str:
        """The session's task data with each answered question of its tasks: under the
        assigned task's block, or under each `## Task <id>` section of the single loop's
        peek (the agent picks its task from what it reads there)."""
        answered = {q.task: q for q in records.every(self.where) if q.answer is not None}
        if not answered:
            return data
        if task is not None:
            q = answered.get(task)
            return data if q is None else f"{data.rstrip()}\n\n{answer_block(q)}\n"
        parts = re.split(r"(?m)^(?=## Task )", data)
        out = []
        for part in parts:
            slug = part[8:].split("\n", 1)[0].strip() if part.startswith("## Task ") else None
            q = answered.get(slug) if slug else None
            if q is not None:
                body = part.rstrip("\n")
                part = f"{body}\n{answer_fields(q)}{part[len(body):] or chr(10)}"
            out.append(part)
        return "".join(out)

    def done(self, tasks: list[str]) -> None:
        """These tasks are done: their questions are settled."""
        for task in tasks:
            records.forget(self.where, task)


def asked_line(q: records.Question, now: float) -> str:
    until = "" if q.deadline is None else (
        f"; default {q.default!r} in {format_duration(max(0.0, q.deadline - now))}"
        if q.default is not None else f"; times out in {format_duration(max(0.0, q.deadline - now))}")
    return f"question on {q.task}: {q.text} (answer: ralph answer {q.task} \"...\"{until})"


def answered_line(q: records.Question) -> str:
    if q.by == records.BY_DEFAULT:
        return f"question on {q.task} timed out: took its default answer: {q.answer}"
    return f"question on {q.task} answered: {q.answer}"


def _block(text: str) -> str:
    return "\n".join("  " + line for line in text.split("\n"))


def answer_fields(q: records.Question) -> str:
    """The markdown-KV lines under a peek section (verify_failed's shape)."""
    by = ("default (no answer came in time; the question named it)"
          if q.by == records.BY_DEFAULT else "a person")
    return (f"question: |\n{_block(q.text)}\nanswer: |\n{_block(q.answer or '')}\n"
            f"answered_by: {by}")


def answer_block(q: records.Question) -> str:
    """The block after an assigned task's instructions."""
    by = ("No answer came in time; this is the default the question named."
          if q.by == records.BY_DEFAULT else "A person answered it.")
    return (f"## The answer to your question on this task\n\nYou asked: {q.text}\n\n"
            f"Answer: {q.answer}\n\n{by} Go on with the task on this basis.")


__all__ = ["Waiting", "Note", "asked_line", "answered_line", "answer_block", "answer_fields"]

"""Owns the tk source (wedow/ticket): reading `.tickets/*.md` (YAML front matter, `# title`,
`## Notes`) the way `tk ready` reads them, and every status change through the real `tk`:
`start`, `close`, `reopen` plus `add-note` with the reason. A file that does not parse is named
in `Listing.problems` and skipped, never rewritten. Does not own leases or the contract."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from ralphpy.sources import base
from ralphpy.sources.base import ACTIVE, DONE, OPEN, Listing, SourceError, Task

NAME = "tk"
MARKER = ".tickets"
INSTALL = ("tk not found: install wedow/ticket (github.com/wedow/ticket) on PATH, "
           "or set TK to its path")
FAIL_NOTE = "ralph: failed: "
DONE_NOTE = "ralph: done: "
_STATUSES = {"open": OPEN, "in_progress": ACTIVE, "closed": DONE}
# path -> ((mtime_ns, size, inode), Task or problem): a file is parsed again only when it changed
_parsed: dict[str, tuple[tuple, object]] = {}


def _list(value: str) -> list[str]:
    return [item.strip() for item in value.strip().strip("[]").split(",") if item.strip()]


def parse(text: str, name: str) -> Task:
    """One ticket file (name: its file name without .md); ValueError naming what is wrong when
    it is not a ticket tk can work with."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        raise ValueError("no front matter (the first line is not ---)")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].rstrip() == "---")
    except StopIteration:
        raise ValueError("front matter is not closed by ---") from None
    fields: dict[str, str] = {}
    for line in lines[1:end]:
        key, sep, value = line.partition(":")
        if sep and key.strip():
            fields[key.strip()] = value.strip()
    if not fields.get("id"):
        raise ValueError("no id: in the front matter")
    if fields["id"] != name:          # `tk start <id>` would find another file, or none
        raise ValueError(f"id '{fields['id']}' is not its file name "
                         "(tk finds a ticket by its file name)")
    status = fields.get("status", "")
    if status not in _STATUSES:
        raise ValueError(f"status '{status}' is not one of open, in_progress, closed")
    priority = fields.get("priority") or "2"
    if not priority.isdigit():
        raise ValueError(f"priority '{priority}' is not a whole number")
    title, body, notes = "", [], []
    section = "body"
    for line in lines[end + 1:]:
        if section == "body" and not title and line.startswith("# "):
            title = line[2:].strip()
        elif line.rstrip() == "## Notes":
            section = "notes"
        elif section == "notes":
            notes.append(line)
        else:
            body.append(line)
    fails = [n[len(FAIL_NOTE):] for n in notes if n.startswith(FAIL_NOTE)]
    results = [n[len(DONE_NOTE):] for n in notes if n.startswith(DONE_NOTE)]
    tags = _list(fields.get("tags", ""))
    return Task(id=name, title=title or name, status=_STATUSES[status],
                tool_status=status, priority=int(priority), deps=_list(fields.get("deps", "")),
                tags=tags, category=fields.get("type") or None, spec=fields.get("parent") or None,
                description="\n".join(body).strip() or None,
                fail_reason=fails[-1] if fails else None, retry_count=len(fails),
                created=fields.get("created"),
                extra={"ref": fields.get("external-ref") or None,
                       "result": results[-1] if results else None,
                       "assignee": fields.get("assignee") or None, "file": name})


class TkSource:
    name = NAME

    def __init__(self, environ: Mapping[str, str], cwd: Path):
        self.root = base.find_root(MARKER, environ, cwd)
        self.dir = Path(environ.get("TICKETS_DIR") or self.root / MARKER)
        self.environ = environ
        self.tool = base.find_tool("TK", "tk", environ)
        self.calls = 0

    def load(self) -> Listing:
        tasks: dict[str, Task] = {}
        problems: list[str] = []
        try:
            entries = sorted((e for e in os.scandir(self.dir) if e.name.endswith(".md")),
                             key=lambda e: e.name)
        except FileNotFoundError:
            entries = []
        for entry in entries:
            st = entry.stat()
            key = (st.st_mtime_ns, st.st_size, st.st_ino)
            cached = _parsed.get(entry.path)
            if cached is None or cached[0] != key:
                rel = os.path.relpath(entry.path, self.root)
                try:
                    with open(entry.path, encoding="utf-8") as handle:
                        found: object = parse(handle.read(), entry.name[:-3])
                except (ValueError, UnicodeDecodeError) as err:
                    found = f"{rel}: {err}; skipped"
                except OSError as err:
                    found = f"{rel}: {err.strerror}; skipped"
                _parsed[entry.path] = cached = (key, found)
            if isinstance(cached[1], Task):
                tasks[cached[1].id] = cached[1]
            else:
                problems.append(str(cached[1]))
        ordered = sorted(tasks.values(), key=lambda t: (t.priority, t.id))   # tk ready's order
        return Listing({t.id: t for t in ordered}, problems)

    def _tk(self, *args: str) -> None:
        if self.tool is None:
            raise SourceError(INSTALL)
        env = {**self.environ, "TICKETS_DIR": str(self.dir)}
        self.calls += 1
        code, out, err = base.run_tool([self.tool, *args], cwd=self.root, env=env)
        if code != 0:
            raise SourceError(f"tk {args[0]} failed: {base.first_line(err or out)}")

    def start(self, task_id: str) -> None:
        self._tk("start", task_id)

    def finish(self, task_id: str, result: dict | None, summary: str) -> None:
        self._tk("close", task_id)
        if summary:
            self._tk("add-note", task_id, DONE_NOTE + summary)

    def release(self, task_id: str, reason: str) -> None:
        self._tk("reopen", task_id)
        self._tk("add-note", task_id, FAIL_NOTE + (reason or "no reason given"))

    def reopen(self, task_id: str, reason: str) -> None:
        self.release(task_id, reason)


__all__ = ["TkSource", "parse", "NAME", "MARKER", "INSTALL"]

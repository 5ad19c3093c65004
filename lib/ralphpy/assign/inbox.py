"""Owns the file-based backlog source (seed 002 "Task Sourcing"): an inbox folder
(default `.ralph/inbox/`) of JSON tasks and `.md` directive files, imported into the backlog
with `task create`, each file once, highest priority first. Knows nothing of the loop or of
prompts; the only backlog writes are `create` task calls.

Why `create` and not `plan-sync`: plan-sync soft-deletes every task of a spec that is missing
from its input (docs/contract/task-cli.md s.9.1 "Orphans"), so syncing one inbox task could delete
planned tasks. `create` only adds.

Idempotence: every file looked at is recorded in `<inbox>/.imported.json` with its SHA-256
and outcome (`imported` with the slugs, `rejected` with the reason, or `partial`). A file whose name and
hash are recorded is skipped, so a re-run imports nothing new and a bad file is reported
once; editing a file (new hash) makes it a candidate again. Files are never moved or deleted.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ralphpy.assign.choice import parse_priority
from ralphpy.backlog.client import TaskCall
from ralphpy.assign.task_files import now_iso, read_json, write_json

RECORD_NAME = ".imported.json"
_SLUG_BAD = re.compile(r"[^a-z0-9._/-]+")
_PRIORITY_LINE = re.compile(r"^\s*\**priority\**\s*:\s*(\S+)\s*$", re.IGNORECASE)


@dataclass
class InboxTask:
    """One task read from an inbox file, ready for `task create`."""
    file: str
    slug: str
    title: str
    priority: int
    description: str
    spec: str = ""
    category: str = ""
    steps: list[str] = field(default_factory=list)
    deps: list[str] = field(default_factory=list)
    kind: int = 0           # 0 JSON, 1 markdown: JSON tasks first at equal priority (seed)


@dataclass
class ImportReport:
    imported: list[str] = field(default_factory=list)       # slugs created, in order
    problems: list[str] = field(default_factory=list)       # one line per rejected file/task


def import_inbox(inbox: Path, task_call: TaskCall) -> ImportReport:
    """Import the inbox's new files into the backlog; never raises for a bad file."""
    report = ImportReport()
    if not inbox.is_dir():
        return report
    record_path = inbox / RECORD_NAME
    record = read_json(record_path) or {}
    pending: list[InboxTask] = []
    for path in sorted(p for p in inbox.iterdir()
                       if p.is_file() and not p.name.startswith(".")
                       and p.suffix.lower() in (".json", ".md")):
        try:
            data = path.read_bytes()
        except OSError as err:
            report.problems.append(f"inbox file {path.name}: cannot be read ({err.strerror})")
            continue
        digest = hashlib.sha256(data).hexdigest()
        if record.get(path.name, {}).get("sha256") == digest:
            continue
        try:
            tasks = read_tasks(path.name, data)
        except ValueError as err:
            report.problems.append(f"inbox file {path.name}: {err}; skipped")
            record[path.name] = {"sha256": digest, "outcome": "rejected", "reason": str(err),
                                 "at": now_iso()}
            continue
        record[path.name] = {"sha256": digest, "outcome": "imported", "slugs": [],
                             "at": now_iso()}
        pending.extend(tasks)
    pending.sort(key=lambda t: (t.priority, t.kind, t.file))
    for task in pending:
        ok, out = task_call(_create_argv(task))
        entry = record[task.file]
        if ok:
            report.imported.append(task.slug)
            entry["slugs"].append(task.slug)
        else:
            reason = f"task create {task.slug} failed" + (f": {out}" if out else
                                                          " (does the id already exist?)")
            report.problems.append(f"inbox file {task.file}: {reason}; skipped")
            entry["reason"] = reason
    for name in {task.file for task in pending}:
        entry = record[name]
        if "reason" in entry:
            entry["outcome"] = "partial" if entry["slugs"] else "rejected"
    if pending or report.problems:
        write_json(record_path, record)
    return report


def read_tasks(name: str, data: bytes) -> list[InboxTask]:
    """The tasks of one inbox file; ValueError with a one-line reason when it is bad."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    stem = name.rsplit(".", 1)[0]
    if name.lower().endswith(".md"):
        return [_from_markdown(name, stem, text)]
    try:
        doc = json.loads(text)
    except ValueError as err:
        raise ValueError(f"invalid JSON ({err})") from None
    items = doc if isinstance(doc, list) else [doc]
    if not items or not all(isinstance(item, dict) for item in items):
        raise ValueError("expected a JSON object or a non-empty array of objects")
    tasks = []
    for index, item in enumerate(items, 1):
        default = stem if len(items) == 1 else f"{stem}-{index}"
        tasks.append(_from_json(name, default, item))
    return tasks


def _from_json(name: str, default_slug: str, item: dict) -> InboxTask:
    title = _text(item.get("objective")) or _text(item.get("title"))
    if not title:
        raise ValueError('field "objective" (or "title") is missing or empty')
    title = title.splitlines()[0].strip()
    try:
        priority = parse_priority(item.get("priority", "medium"))
    except ValueError as err:
        raise ValueError(str(err)) from None
    criteria = item.get("success_criteria", item.get("acceptance_criteria"))
    if isinstance(criteria, str):
        criteria = [line.strip() for line in criteria.splitlines() if line.strip()]
    criteria = [_text(c).removeprefix("- [ ]").strip() for c in criteria or []
                if _text(c).strip()]
    body = _text(item.get("description")) or _text(item.get("details"))
    objective = _text(item.get("objective"))
    parts = [body or objective]
    if body and objective and objective not in body:
        parts.insert(0, f"Objective: {objective}")
    why = _text(item.get("why_it_matters")) or _text(item.get("why"))
    if why:
        parts.append(f"Why it matters: {why}")
    if criteria:
        parts.append("Acceptance criteria:\n" + "\n".join(f"- [ ] {c}" for c in criteria))
    if _text(item.get("deadline")):
        parts.append(f"Deadline: {_text(item.get('deadline'))}")
    steps = item.get("steps") or []
    deps = item.get("deps") or []
    if not (isinstance(steps, list) and all(isinstance(s, str) for s in steps)):
        raise ValueError('field "steps" must be an array of strings')
    if not (isinstance(deps, list) and all(isinstance(d, str) for d in deps)):
        raise ValueError('field "deps" must be an array of task ids')
    return InboxTask(file=name, slug=_text(item.get("id")) or _slug(default_slug), title=title,
                     priority=priority, description="\n\n".join(p for p in parts if p),
                     spec=_text(item.get("spec")), category=_text(item.get("category")),
                     steps=steps, deps=deps, kind=0)


def _from_markdown(name: str, stem: str, text: str) -> InboxTask:
    if not text.strip():
        raise ValueError("empty directive")
    lines = text.splitlines()
    title, body, priority = "", [], parse_priority("medium")
    for line in lines:
        if not title and line.lstrip().startswith("#"):
            title = line.lstrip().lstrip("#").strip()
            continue
        match = _PRIORITY_LINE.match(line)
        if match:
            try:
                priority = parse_priority(match.group(1))
            except ValueError as err:
                raise ValueError(str(err)) from None
            continue
        body.append(line)
    description = "\n".join(body).strip()
    if not title:
        title = next((l.strip() for l in body if l.strip()), "") or stem
    return InboxTask(file=name, slug=_slug(stem), title=title[:200], priority=priority,
                     description=description, kind=1)


def _create_argv(task: InboxTask) -> list[str]:
    argv = ["create", task.slug, task.title, "-p", str(task.priority),
            "--ref", f"inbox:{task.file}"]
    if task.description:
        argv += ["-d", task.description]
    if task.spec:
        argv += ["-r", task.spec]
    if task.category:
        argv += ["-c", task.category]
    if task.steps:
        argv += ["-s", json.dumps(task.steps, ensure_ascii=False)]
    if task.deps:
        argv += ["--deps", ",".join(task.deps)]
    return argv


def _slug(value: str) -> str:
    slug = _SLUG_BAD.sub("-", value.strip().lower()).strip("-/")
    if not slug:
        raise ValueError(f"no usable task id in {value!r}")
    return slug


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


__all__ = ["InboxTask", "ImportReport", "import_inbox", "read_tasks"]

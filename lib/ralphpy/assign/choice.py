"""Owns the assignment mode's task choice and prompt ("assignment mode"): claim the
next task through a TaskCall, read it fully, and render the anti-drift block from a template
with `{placeholder}` substitution. Knows nothing of the loop, of task files or of sessions;
the only backlog write is the `claim` task call.

Priorities: the task store orders by priority ascending (docs/contract/task-cli.md s.8), so the
criticality words map onto numbers as critical=0, high=1, medium=2 (the store's default),
low=3. Numbers above 3 read as "low" in the prompt.

Template placeholders (docs/assignment.md): {id} {title} {objective} {why}
{criteria} {source} {steps} {details} {priority} {priority_word} {retry_count}
{fail_reason} {spec} {ref} {category} {task_cmd} {current_task_file}. Unknown names become
empty. List values ({criteria}, {steps}) and {details} render as a newline followed by their
lines, so write them right after a label. A template line whose placeholders are all empty
is dropped (no dangling "Why it matters:"). Only `{name}` with a lowercase identifier is a
placeholder: JSON such as `{"commit": ...}` stays as written.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from ralphpy.assign import criteria as assign_criteria
from ralphpy.backlog import answers
from ralphpy.backlog import client
from ralphpy.errors import UsageError
from ralphpy.backlog.client import TaskCall

PRIORITY_WORDS = {"critical": 0, "high": 1, "medium": 2, "low": 3}
SESSION_PREFIX = "/ralph-build "
DEFAULT_TEMPLATE = Path(__file__).resolve().parent.parent / "prompts" / "assign.md"
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
_WHY_LABEL = re.compile(r"^\s*(#+\s*)?\**why(?: it matters)?\**\s*([:\-—])?\s*\**\s*(.*)$",
                        re.IGNORECASE)
_MAX_DETAILS = 4000


@dataclass
class AssignedTask:
    """A claimed task with what the anti-drift block needs."""
    id: str
    title: str
    priority: int = 2
    status: str = "active"
    description: str = ""
    spec: str = ""
    ref: str = ""
    category: str = ""
    steps: list[str] = field(default_factory=list)
    deps: list[str] = field(default_factory=list)
    retry_count: int = 0
    fail_reason: str = ""
    why: str = ""
    criteria: list[str] = field(default_factory=list)
    source: str = ""


def parse_priority(value: object) -> int:
    """A criticality word (any case) or a non-negative integer (or its digits) -> priority
    number. ValueError names the bad value."""
    if isinstance(value, bool):
        raise ValueError(f"priority must be critical, high, medium, low or a number >= 0, got: {value!r}")
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in PRIORITY_WORDS:
            return PRIORITY_WORDS[word]
        if word.isdigit():
            return int(word)
    raise ValueError(f"priority must be critical, high, medium, low or a number >= 0, got: {value!r}")


def priority_word(priority: int) -> str:
    """The criticality word of a priority number (3 and above: low)."""
    for word, number in PRIORITY_WORDS.items():
        if priority <= number:
            return word
    return "low"


def claim_next(task_call: TaskCall, *, agent: str | None = None, lease: int | None = None,
               target: str | None = None, repo: Path | None = None) -> AssignedTask | None:
    """Claim the highest-priority claimable task (or target) and return it, read fully.
    None when nothing was claimed (nothing eligible, or the call failed: the caller tells
    them apart with peek, as the build loop already does)."""
    argv = ["claim"] + ([target] if target else [])
    if lease is not None:
        argv += ["--lease", str(lease)]
    if agent is not None:
        argv += ["--agent", agent]
    ok, out = task_call(argv)
    claimed = answers.parse_markdown_kv(out) if ok else []
    if not claimed:
        return None
    fields = claimed[0]
    # claim never prints the description or the last fail reason (docs/contract/task-cli.md s.8).
    record = client.task_record(task_call, fields["id"]) or {}
    return build_task({**record, **fields, "description": record.get("description") or "",
                       "fail_reason": record.get("fail_reason") or ""}, repo)


def build_task(fields: Mapping, repo: Path | None = None) -> AssignedTask:
    """An AssignedTask from a task record (_export-json keys); repo locates the spec file."""
    description = fields.get("description") or ""
    steps = list(fields.get("steps") or [])
    spec = fields.get("spec") or ""
    spec_path = _inside(repo, spec) if (repo is not None and spec) else None
    priority = fields.get("priority", 2)
    task = AssignedTask(
        id=fields["id"], title=fields.get("title") or fields["id"],
        priority=priority if isinstance(priority, int) else 2,
        status=fields.get("status") or "active", description=description, spec=spec,
        ref=fields.get("ref") or "", category=fields.get("category") or "", steps=steps,
        deps=list(fields.get("deps") or []),
        retry_count=fields.get("retry_count") if isinstance(fields.get("retry_count"), int) else 0,
        fail_reason=fields.get("fail_reason") or "", why=extract_why(description),
        criteria=assign_criteria.task_criteria(description, steps, spec_path))
    parts = [f"spec {spec}"] if spec else []
    parts += [f"ref {task.ref}"] if task.ref else []
    task.source = f"task {task.id}" + (f" ({', '.join(parts)})" if parts else "")
    return task


def extract_why(description: str) -> str:
    """The "why it matters" text of a description: a `Why:` / `Why it matters:` line (with
    its continuation lines) or the paragraph under a `## Why` heading; "" when absent."""
    lines = description.splitlines()
    for index, line in enumerate(lines):
        match = _WHY_LABEL.match(line)
        if not match:
            continue
        heading, separator, rest = match.groups()
        if not heading and not separator:
            continue            # "Why not ...?" or a bare "Why" is prose, not a label
        collected = [rest] if rest and not heading else []
        for follow in lines[index + 1:]:
            if follow.lstrip().startswith("#") or (not follow.strip() and collected):
                break
            if follow.strip():
                collected.append(follow.strip())
        return " ".join(part.strip() for part in collected).strip()
    return ""


def load_template(path: Path | str | None = None) -> str:
    """The anti-drift template: path (config `assign_prompt`) or the shipped default."""
    path = Path(path) if path else DEFAULT_TEMPLATE
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"assignment prompt template {path} cannot be read ({err}); "
                         "fix assign_prompt in the config or remove it") from None


def render_block(task: AssignedTask, template: str, *, task_cmd: str = "$RALPH_TASK_SCRIPT",
                 current_task_file: str = ".ralph/current-task.json") -> str:
    """The anti-drift block for task (see module docstring for the placeholders)."""
    details = _details(task)
    if len(details) > _MAX_DETAILS:
        details = details[:_MAX_DETAILS].rstrip() + "\n[... truncated]"
    values = {
        "id": task.id, "title": task.title, "objective": task.title, "why": task.why,
        "criteria": _as_list(task.criteria), "source": task.source,
        "steps": _as_list(task.steps), "details": ("\n" + details) if details else "",
        "priority": str(task.priority), "priority_word": priority_word(task.priority),
        "retry_count": str(task.retry_count), "fail_reason": task.fail_reason,
        "spec": task.spec, "ref": task.ref, "category": task.category,
        "task_cmd": task_cmd, "current_task_file": current_task_file,
    }
    out = []
    for line in template.splitlines():
        names = _PLACEHOLDER.findall(line)
        if names and not any(values.get(name) for name in names):
            continue
        rendered = _PLACEHOLDER.sub(lambda m: values.get(m.group(1), ""), line)
        out.extend(part.rstrip() for part in rendered.split("\n"))
    return "\n".join(out).strip("\n")


def dispatch_prompt(template: str, task_id: str) -> str:
    """The whole prompt of a session under `--prompt TEMPLATE` (pi-ticketflow's
    `/tf {id} --auto`): the template with `{id}` replaced by the claimed task's id."""
    return template.replace("{id}", task_id)


def session_prompt(block: str) -> str:
    """The session prompt in assignment mode: `/ralph-build ` + the block, so the build
    skill still runs and reads the block where it would read the peek landscape."""
    return SESSION_PREFIX + block


def _details(task: AssignedTask) -> str:
    """The description without what the block already shows (the title line, the why
    text, the criteria lines, a bare "criteria:" label), blank-line runs collapsed."""
    shown = {task.title.strip(), *task.criteria}
    why_words = task.why.split()
    kept: list[str] = []
    lines = task.description.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        bare = assign_criteria.strip_marker(stripped)
        match = _WHY_LABEL.match(line)
        if match and (match.group(1) or match.group(2)) and why_words:
            index += 1                  # the why label and its continuation lines
            while match.group(1) and index < len(lines) and not lines[index].strip():
                index += 1              # a "## Why" heading: its paragraph follows
            while index < len(lines) and lines[index].strip() and not lines[index].lstrip().startswith("#"):
                index += 1
            continue
        if not (bare in shown or (stripped.endswith(":") and "criteria" in stripped.lower())):
            if stripped or (kept and kept[-1]):
                kept.append(stripped and line.rstrip())
        index += 1
    return "\n".join(kept).strip()


def _inside(repo: Path, relative: str) -> Path | None:
    """repo/relative when it stays inside repo: a spec path is data, not a way to read
    /etc/passwd into a prompt."""
    path = (repo / relative).resolve()
    try:
        path.relative_to(repo.resolve())
    except ValueError:
        return None
    return path


def _as_list(items: list[str]) -> str:
    return "".join(f"\n- {item}" for item in items)


__all__ = ["AssignedTask", "PRIORITY_WORDS", "parse_priority", "priority_word", "claim_next",
           "build_task", "dispatch_prompt", "extract_why", "load_template", "render_block",
           "session_prompt"]

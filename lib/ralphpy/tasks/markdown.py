"""Owns the task CLI's text formats (docs/contract/task-cli.md s.8): markdown-KV sections, the task
table, the agent table, and `_render-md`'s mapping of a JSON object to a section (s.9.17). Pure
functions over plain values; does not own the database or which tasks are shown."""
from __future__ import annotations

from ralphpy import inert
from ralphpy.tasks import jsontext

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable, Sequence

# Field sets per command (s.8 table). Order of lines is always _ORDER.
_ORDER = ("id", "title", "priority", "status", "category", "spec", "ref", "assignee",
          "lease_expires_at", "retry_count", "deps", "steps", "blocker_results")
PEEK_OPEN = frozenset({"id", "title", "priority", "status", "category", "spec", "ref", "deps",
                       "steps"})
PEEK_ACTIVE = PEEK_OPEN | {"assignee"}
LIST_MD = PEEK_ACTIVE
CLAIM = frozenset(_ORDER)


def compact(value: object) -> str:
    return jsontext.dumps(value, ensure_ascii=False, compact=True)


def _text(value: object) -> str:
    return value if isinstance(value, str) else compact(value)


def _present(value: object) -> bool:
    return value is not None and value != "" and value != [] and value != {}


def steps_list(stored: str | None) -> list:
    """Stored steps JSON -> list of steps; text that is not a JSON array is one step."""
    if not stored:
        return []
    try:
        steps = jsontext.loads(stored)
    except ValueError:
        return [stored]
    return steps if isinstance(steps, list) else [steps]


def reencode(result: str) -> str:
    """s.8 blocker_results: compact JSON, or the stored text when it is not JSON."""
    try:
        return compact(jsontext.loads(result))
    except ValueError:
        return result


def section(view: dict, fields: frozenset) -> str:
    """One `## Task` section; view keys are _ORDER names, deps/steps lists, blocker_results
    a list of (slug, text) pairs."""
    lines = [f"## Task {_text(view.get('id', ''))}"]
    for name in _ORDER:
        if name not in fields:
            continue
        value = view.get(name)
        if not _present(value):
            continue
        if name == "deps":
            lines.append("deps: " + ", ".join(_text(d) for d in value))
        elif name == "steps":
            lines.append("steps:")
            lines.extend(f"- {_text(step)}" for step in value)
        elif name == "blocker_results":
            lines.append("blocker_results:")
            lines.extend(f"- {slug}: {text}" for slug, text in value)
        else:
            lines.append(f"{name}: {_text(value)}")
    return "\n".join(lines)


def sections(items: Iterable[tuple[dict, frozenset]]) -> str:
    """Sections separated by one empty line; no tasks gives no output at all."""
    body = "\n\n".join(section(view, fields) for view, fields in items)
    return body + "\n" if body else ""


def task_section(task, blockers: Sequence[tuple], fields: frozenset, status: str | None = None,
                 held: str | None = None) -> str:
    """One section straight from a tasks row and its blockers [(slug, status, title, result)]
    (the hot path of `list --all --markdown`: no intermediate view). `status` overrides the
    stored one (peek shows an expired lease as open). `held`: the hold reason of a held task
    ('' for none given), shown as a `held:` line after the status; None: not held."""
    slug = str(task["slug"])
    lines = [f"## Task {slug}", f"id: {slug}"]
    add = lines.append
    for name, key in (("title", "title"), ("priority", "priority")):
        value = task[key]
        if value is not None and value != "":
            add(f"{name}: {value}")
    value = status or task["status"]
    if value:
        add(f"status: {value}")
    if held is not None:
        add(f"held: {held or 'yes'}")
    for name, key in _OPTIONAL:
        if name in fields:
            value = task[key]
            if value is not None and value != "":
                add(f"{name}: {value}")
    if blockers:
        add("deps: " + ", ".join(b[0] for b in blockers))
    steps = steps_list(task["steps"])
    if steps:
        add("steps:")
        lines.extend(f"- {_text(step)}" for step in steps)
    if "blocker_results" in fields:
        results = [b for b in blockers if b[3]]
        if results:
            add("blocker_results:")
            lines.extend(f"- {b[0]}: {reencode(b[3])}" for b in results)
    return "\n".join(lines)


_OPTIONAL = (("category", "category"), ("spec", "spec_ref"), ("ref", "ref"), ("assignee", "assignee"),
             ("lease_expires_at", "lease_expires_at"), ("retry_count", "retry_count"))


def join_sections(parts: Iterable[str]) -> str:
    body = "\n\n".join(parts)
    return body + "\n" if body else ""


def json_view(obj: dict) -> dict:
    """s.9.17 key mapping of `_render-md`."""
    def first(short: str, long: str) -> object:
        value = obj.get(short)
        return obj.get(long) if value is None or value is False else value
    results = obj.get("blocker_results")
    return {
        "id": obj.get("id"), "title": first("t", "title"),
        "priority": obj["p"] if "p" in obj else obj.get("priority"),
        "status": first("s", "status"), "category": first("cat", "category"),
        "spec": obj.get("spec"), "ref": obj.get("ref"), "assignee": obj.get("assignee"),
        "lease_expires_at": obj.get("lease_expires_at"), "retry_count": obj.get("retry_count"),
        "deps": obj.get("deps"), "steps": obj.get("steps"),
        "blocker_results": ([(k, _text(v)) for k, v in results.items()]
                            if isinstance(results, dict) else results),
    }


def _dash(value: object) -> str:
    return "-" if value is None or value == "" else str(value)


TASK_HEADER = "ID                   P S        CAT   TITLE                               AGENT"
AGENT_HEADER = "ID     PID      HOSTNAME             STARTED                   STATUS"


def task_table(tasks: Sequence[dict], holds: dict | None = None) -> str:
    """printf '%-20s %s %-8s %-5s %-35s %s' per task under the header; none: no output.
    holds (task id -> reason): a held open task's status reads `held`, and one line per held
    task after the table says why. A cell's control characters (a newline too) are shown
    escaped (ralphpy.inert); the table is checked once, cells only when it holds any."""
    if not tasks:
        return ""
    holds = holds or {}
    text = _task_rows(tasks, holds, str)
    lines = 1 + len(tasks) + sum(1 for t in tasks if t["id"] in holds)
    # a cell keeps no newline nor tab (lines=True would let a tab through)
    if text.count("\n") == lines and "\t" not in text and inert.shown(text, lines=True) is text:
        return text                                   # the common case: plain text throughout
    return _task_rows(tasks, holds, inert.shown)


def _task_rows(tasks: Sequence[dict], holds: dict, shown) -> str:
    rows, why = [TASK_HEADER], []
    for t in tasks:
        pri = "" if t["priority"] is None else str(t["priority"])
        status = t["status"] or ""
        slug, title = shown(str(t["slug"])), shown(t["title"])
        if t["id"] in holds:
            status = "held" if status == "open" else status
            why.append(f"held {slug}: {shown(holds[t['id']] or 'yes')}")
        rows.append(f"{slug:<20} {pri} {status:<8} {shown(_dash(t['category'])):<5} "
                    f"{title:<35} {shown(_dash(t['assignee']))}")
    return "\n".join(rows + why) + "\n"


def agent_table(agents: Sequence[tuple]) -> str:
    """printf '%-6s %-8s %-20s %-25s %s' per agent under the header; none: no output."""
    if not agents:
        return ""
    rows = [AGENT_HEADER]
    for agent_id, pid, host, started, status in agents:
        rows.append(f"{agent_id:<6} {'' if pid is None else pid!s:<8} {host or '':<20} "
                    f"{started or '':<25} {status or ''}")
    return "\n".join(rows) + "\n"


__all__ = ["section", "sections", "task_section", "join_sections", "json_view", "task_table", "agent_table",
           "PEEK_OPEN", "PEEK_ACTIVE", "LIST_MD", "CLAIM", "steps_list", "compact"]

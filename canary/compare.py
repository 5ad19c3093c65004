"""Owns the canary's judgement of one test group run twice, against the pinned CLI and the
latest: each test's outcome (pytest's JUnit XML), the requests the stand-ins could not
answer (`RALPH_CANARY_STANDIN_LOG`), and the first event where the latest CLI's stream differs
from the pinned one's in the same test (the session logs record.py kept).

An event is compared by its shape, not its values (ids, times and texts differ on every run):
its `type` with `subtype`, `role` and `status`, and the same of each object it holds (codex's
`item`, opencode's `part`, pi's `assistantMessageEvent`, Claude Code's `message` and the types
of its content blocks). Repeats in a row count once (how many deltas a text came in varies).
When every shape matches, the first event whose fields differ is named instead. Knows nothing
of npm or of printing the table."""
from __future__ import annotations

import difflib
import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

_SAID = ("subtype", "role", "status", "is_error")


@dataclass(frozen=True)
class TestResult:
    outcome: str            # passed, failed, skipped
    message: str = ""       # a failure's first line


def results(junit_xml: Path) -> dict[str, TestResult]:
    """Test id (file::name, as the node id reads) -> its outcome; {} when pytest wrote none."""
    try:
        root = ET.parse(junit_xml).getroot()
    except (OSError, ET.ParseError):
        return {}
    found = {}
    for case in root.iter("testcase"):
        module = (case.get("classname") or "").replace(".", "/")
        test = f"{module}.py::{case.get('name')}"
        bad = case.find("failure")
        bad = bad if bad is not None else case.find("error")
        if bad is not None:
            text = bad.get("message") or (bad.text or "")
            found[test] = TestResult("failed", text.strip().splitlines()[0] if text.strip()
                                     else bad.tag)
        elif case.find("skipped") is not None:
            found[test] = TestResult("skipped", case.find("skipped").get("message") or "")
        else:
            found[test] = TestResult("passed")
    return found


def standin_gaps(log: Path) -> dict[str, set[str]]:
    """Test id -> the requests its stand-in could not answer."""
    gaps: dict[str, set[str]] = {}
    if not log.is_file():
        return gaps
    for line in log.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        gaps.setdefault(str(row.get("test")), set()).add(str(row.get("request")))
    return gaps


def _said(obj: dict) -> list[str]:
    return [f"{k}={obj[k]}" for k in _SAID if isinstance(obj.get(k), (str, bool))]


def shape(event: dict) -> str:
    """`assistant message.role=assistant message.content=[text,tool_use]`, say."""
    parts = [str(event.get("type", "?")), *_said(event)]
    for key in sorted(event):
        value = event[key]
        if not isinstance(value, dict):
            continue
        inner = [f"type={value['type']}"] if isinstance(value.get("type"), str) else []
        inner += _said(value)
        content = value.get("content")
        if isinstance(content, list):
            kinds = [str(b.get("type")) for b in content if isinstance(b, dict)]
            inner.append(f"content=[{','.join(kinds)}]")
        parts += [f"{key}.{i}" for i in inner]
    return " ".join(parts)


def events(test_dir: Path) -> list[dict]:
    """Every JSON object of the test's session logs, in order, a session start marked."""
    found: list[dict] = []
    for log in sorted(test_dir.glob("*.jsonl")):
        found.append({"type": "(session)"})
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                found.append(event)
    return found


def _collapsed(found: list[dict]) -> list[tuple[str, dict]]:
    out: list[tuple[str, dict]] = []
    for event in found:
        key = shape(event)
        if not out or out[-1][0] != key:
            out.append((key, event))
    return out


def first_difference(pinned: list[dict], latest: list[dict]) -> str | None:
    """Where the latest stream first departs from the pinned one, in words; None: the same."""
    a, b = _collapsed(pinned), _collapsed(latest)
    ops = difflib.SequenceMatcher(None, [k for k, _ in a], [k for k, _ in b],
                                  autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            continue
        was = "; ".join(k for k, _ in a[i1:i1 + 2]) or "nothing"
        now = "; ".join(k for k, _ in b[j1:j1 + 2]) or "nothing"
        return f"event {j1 + 1}: pinned `{was}`, latest `{now}`"
    for n, ((key, old), (_, new)) in enumerate(zip(a, b), 1):
        added, dropped = sorted(set(new) - set(old)), sorted(set(old) - set(new))
        if added or dropped:
            said = [f"adds {', '.join(added)}"] if added else []
            said += [f"drops {', '.join(dropped)}"] if dropped else []
            return f"event {n} `{key}`: latest {' and '.join(said)}"
    return None


__all__ = ["TestResult", "results", "standin_gaps", "shape", "events", "first_difference"]

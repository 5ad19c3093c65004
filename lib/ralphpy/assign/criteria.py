"""Owns acceptance-criteria extraction (seed 002 "Acceptance Criteria Extraction"):
unchecked checkbox lines (`- [ ]`, `* [ ]`) and lines containing the words "criteria" or
"must", at most five, default `Complete the assigned task`. Knows nothing of where the
texts come from beyond an optional spec file path; never writes anything.

Decisions where the seed is silent (README "Acceptance criteria"):
- Checkbox lines come first (in text order), keyword lines fill the remaining places: an
  explicit checklist is the better statement of "done" than a sentence that says "must".
- Keywords match whole words, case-insensitively (`Must`, `CRITERIA`; not `mustard`).
- Keyword lines that are headings (`## Acceptance criteria`), labels ending in `:`
  (`Acceptance Criteria:`) or checked boxes (`- [x]`) are not criteria.
- A criterion is the line without its bullet / checkbox, whitespace-trimmed, cut at 300
  characters; duplicates are dropped.
- The task's own text (description, then steps) is searched first; the spec file only when
  the task's own text yields nothing (a spec covers many tasks, its checklist is not this
  task's).
"""
from __future__ import annotations

import re
from pathlib import Path

DEFAULT_CRITERIA = ("Complete the assigned task",)
MAX_CRITERIA = 5
_MAX_LEN = 300
_MAX_SPEC_BYTES = 1 << 20

_CHECKBOX = re.compile(r"^\s*[-*]\s+\[ \]\s*(.*)$")
_CHECKED = re.compile(r"^\s*[-*]\s+\[[xX]\]")
_KEYWORD = re.compile(r"\b(criteria|must)\b", re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def extract_criteria(*texts: str, limit: int = MAX_CRITERIA) -> list[str]:
    """Criteria found in texts (in order), at most limit; [] when none (no default here)."""
    lines = [line for text in texts if text for line in text.splitlines()]
    found: list[str] = []

    def add(item: str) -> None:
        item = item.strip()[:_MAX_LEN].rstrip()
        if item and item not in found and len(found) < limit:
            found.append(item)

    for line in lines:
        match = _CHECKBOX.match(line)
        if match:
            add(match.group(1))
    for line in lines:
        stripped = line.strip()
        if (_CHECKBOX.match(line) or _CHECKED.match(line) or stripped.startswith("#")
                or stripped.endswith(":") or not _KEYWORD.search(stripped)):
            continue
        add(_BULLET.sub("", stripped))
    return found


def strip_marker(line: str) -> str:
    """line without a leading checkbox or bullet, as a criterion is stored."""
    match = _CHECKBOX.match(line)
    return (match.group(1) if match else _BULLET.sub("", line)).strip()


def task_criteria(description: str | None, steps: list[str] | None,
                  spec_path: Path | None = None) -> list[str]:
    """The criteria of one task: its description and steps first, its spec file when they
    yield nothing, else the default."""
    found = extract_criteria(description or "", "\n".join(steps or []))
    if not found and spec_path is not None:
        found = extract_criteria(_read_spec(spec_path))
    return found or list(DEFAULT_CRITERIA)


def _read_spec(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(_MAX_SPEC_BYTES).decode("utf-8", errors="replace")
    except OSError:
        # A missing or unreadable spec only means no criteria from it.
        return ""


__all__ = ["DEFAULT_CRITERIA", "MAX_CRITERIA", "extract_criteria", "task_criteria", "strip_marker"]

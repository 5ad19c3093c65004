"""Owns the result of a scope check: what was added, removed or modified, each as one human
line for the console, events.jsonl and progress.md, and the one-line message the run stops
with under STOP_ON_SCOPE_CHANGE. Knows nothing of files or hashing (scope.snapshot and
scope.hashing own those) and never prints."""
from __future__ import annotations

from dataclasses import dataclass, field

_MAX_IDS = 10          # a spec shared by 500 tasks names 10 of them, then "+490 more"
_SUMMARY_LINES = 5     # the stop message stays one readable line


@dataclass(frozen=True)
class SpecChange:
    """The spec of task `task_id` changed: `spec` is its path relative to the repo root,
    `detail` says how (content changed, file disappeared, path changed ...)."""

    task_id: str
    spec: str
    detail: str


@dataclass
class ScopeReport:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    spec_modified: list[SpecChange] = field(default_factory=list)
    definition_modified: list[str] = field(default_factory=list)
    definition_fields: dict[str, list[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    files_checked: int = 0     # distinct spec files whose state was looked at (stat)
    files_hashed: int = 0      # of those, files actually read and hashed in this check

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.spec_modified or self.definition_modified)

    def lines(self) -> list[str]:
        """One line per change: tasks by id order; spec changes grouped by file and detail."""
        return [line for _, line in self.changes()]

    def changes(self) -> list[tuple[str, str]]:
        """(what changed, its line) per change. A spec line names the frozen tasks of that
        spec still present, so its text changes when one of them is removed; what changed
        (the spec, and how) does not, and is what tells a change already reported."""
        out = [(line, line) for line in
               [f"added task {tid}: not in the frozen scope, it will not run" for tid in self.added]
               + [f"removed task {tid}: dropped from the target" for tid in self.removed]]
        groups: dict[tuple[str, str], list[str]] = {}
        for change in self.spec_modified:
            groups.setdefault((change.spec, change.detail), []).append(change.task_id)
        for (spec, detail), ids in groups.items():
            out.append((f"modified spec {spec}: {detail}",
                        f"modified spec {spec} of {_name_tasks(ids)}: {detail}"))
        for tid in self.definition_modified:
            fields = self.definition_fields.get(tid)
            what = ", ".join(fields) if fields else "definition"
            line = f"modified definition of task {tid}: {what} changed"
            out.append((line, line))
        return out

    def summary(self) -> str:
        """The one-line stop message (errors.ScopeChanged, exit 4)."""
        lines = self.lines()
        shown = "; ".join(lines[:_SUMMARY_LINES])
        if len(lines) > _SUMMARY_LINES:
            shown += f"; and {len(lines) - _SUMMARY_LINES} more"
        noun = "change" if len(lines) == 1 else "changes"
        return f"scope changed since the run started ({len(lines)} {noun}): {shown}"

    def to_dict(self) -> dict:
        """JSON-ready form, used for events.jsonl and for the stat cache."""
        return {
            "added": self.added, "removed": self.removed,
            "spec_modified": [[c.task_id, c.spec, c.detail] for c in self.spec_modified],
            "definition_modified": self.definition_modified,
            "definition_fields": self.definition_fields, "warnings": self.warnings,
            "files_checked": self.files_checked, "files_hashed": self.files_hashed,
        }

    @classmethod
    def from_dict(cls, data: dict) -> "ScopeReport":
        return cls(list(data["added"]), list(data["removed"]),
                   [SpecChange(*c) for c in data["spec_modified"]],
                   list(data["definition_modified"]), dict(data["definition_fields"]),
                   list(data["warnings"]), int(data["files_checked"]), int(data["files_hashed"]))


def _name_tasks(ids: list[str]) -> str:
    if len(ids) == 1:
        return f"task {ids[0]}"
    named = ", ".join(ids[:_MAX_IDS])
    if len(ids) > _MAX_IDS:
        named += f" (+{len(ids) - _MAX_IDS} more)"
    return f"tasks {named}"


__all__ = ["ScopeReport", "SpecChange"]

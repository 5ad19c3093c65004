"""Owns whether the backlog changed between sessions, as the no-progress breaker
(--max-idle-sessions) asks it: a fingerprint of the backlog without the fields that move
without progress (guards.backlog_fingerprint's rule), and each task's retry_count as last read
(--max-attempts carries earlier runs' failures over). The backlog is read whole once, at the
first fingerprint; after that, with the embedded store, only the tasks touched since the last
one (every write stamps updated_at: an index finds them) and the tasks the run held, unless
the number of dependencies changed (`block` and `unblock` stamp no task): then whole again,
so the fingerprint is always the one a whole read gives. Elsewhere (a task source, another
task CLI) the whole `_export-json` each time, or the `plan-status` counts. Knows nothing of the
breaker's counting (guards) or of the loop."""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Mapping

from ralphpy.backlog import answers
from ralphpy.backlog import readonly as backlog_readonly
from ralphpy.unattended import guards


class BacklogWatch:
    def __init__(self, task: Any, env: Mapping[str, str], cwd: Path):
        self.task, self.env, self.cwd = task, env, cwd
        self.rows: dict[str, str] = {}            # slug -> the row without its volatile fields
        self.retries: dict[str, Any] = {}         # slug -> retry_count, as last read
        self.checked: str | None = None           # rows touched since are read next
        self.held: set[str] = set()               # held by the run since: read again next
        self.deps: int | None = None              # dependencies in the store at the last read

    def fingerprint(self, counts_text: str | None) -> str:
        """The backlog's fingerprint now; counts_text: `plan-status`'s output, the fingerprint
        of a task CLI that is not ours (no extra task call)."""
        if not (self.task.embedded or counts_text is None):
            return guards.backlog_fingerprint(counts_text or "")
        # the store read here is the task CLI's only when that CLI is ours
        deps = (backlog_readonly.dependency_count(environ=self.env, cwd=self.cwd)
                if self.task.embedded else None)
        if (self.task.embedded and self.checked is not None and deps == self.deps
                and (found := self._touched()) is not None):
            self._keep(found)
        else:                                   # the first time, or a dependency came or went
            self.deps = deps
            self.checked = backlog_readonly.since_now()     # before the read: none missed
            export = self.task.call("_export-json", env=self.env)   # in-process for ours
            if not export.ok:
                self.checked = None
                return guards.backlog_fingerprint(counts_text or "")
            self.rows, self.retries = {}, {}
            self._keep(answers.parse_export(export.output) or [])
        digest = hashlib.sha256()
        for slug in sorted(self.rows):
            digest.update(f"{slug}\n{self.rows[slug]}\n".encode())
        return digest.hexdigest()

    def _touched(self) -> list[dict] | None:
        since, self.checked = self.checked, backlog_readonly.since_now()
        found = backlog_readonly.export_records("touched", since=since, environ=self.env,
                                                cwd=self.cwd)
        if found is not None and self.held:
            found += backlog_readonly.export_records("slugs", slugs=sorted(self.held),
                                                     environ=self.env, cwd=self.cwd) or []
            self.held.clear()
        return found

    def _keep(self, records: list[dict]) -> None:
        for row in records:
            slug = str(row.get("id"))
            self.rows[slug] = guards.stable_row(row)
            self.retries[slug] = row.get("retry_count")


__all__ = ["BacklogWatch"]

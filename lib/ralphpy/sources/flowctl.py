"""Owns the flowctl source (flow-next's `.flow/`): the task list from one `flowctl tasks --json`
kept in .ralph/sources/flowctl/cache.json until a task or runtime-state file changes (flowctl
costs most of a second per call), and every status change through the real `flowctl`:
`start`, `done` (summary and evidence: the commit), `block` with the reason, `task reset`.
Does not own leases or the contract."""
from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Mapping

from ralphpy import atomic_file
from ralphpy.sources import base
from ralphpy.sources.base import ACTIVE, DONE, HELD, OPEN, Listing, SourceError, Task

NAME = "flowctl"
MARKER = ".flow"
INSTALL = ("flowctl not found: install flow-next (github.com/gmickel/flow-next) so flowctl "
           "is on PATH, or set FLOWCTL to its path")
_STATUSES = {"todo": OPEN, "in_progress": ACTIVE, "done": DONE, "blocked": HELD}
_ID = re.compile(r"^[a-z]+-(\d+)(?:-[^.]*)?\.(\d+)$")


def _order(raw: dict) -> tuple:
    """flowctl's own task order: priority (none last), then spec and task number."""
    priority = raw.get("priority")
    match = _ID.match(str(raw.get("id", "")))
    number = (int(match.group(1)), int(match.group(2))) if match else (1 << 30, 0)
    return (999 if priority is None else priority, number, str(raw.get("id")))


class FlowctlSource:
    name = NAME

    def __init__(self, environ: Mapping[str, str], cwd: Path):
        self.root = base.find_root(MARKER, environ, cwd)
        self.environ = environ
        self.tool = base.find_tool("FLOWCTL", "flowctl", environ)
        self.readonly = bool(environ.get("RALPH_SOURCE_READONLY"))
        self.cache_path = self.root / ".ralph" / "sources" / NAME / "cache.json"
        self.calls = 0
        self._cache: dict | None = None

    # ------------------------------------------------------------------ reading
    def _state_dir(self) -> Path:
        """Where flowctl keeps runtime state: FLOW_STATE_DIR, else <git common dir>/flow-state."""
        if self.environ.get("FLOW_STATE_DIR"):
            return Path(self.environ["FLOW_STATE_DIR"])
        git = self.root / ".git"
        if git.is_file():                          # a linked worktree: its common dir
            gitdir = Path(git.read_text().partition("gitdir:")[2].strip())
            common = gitdir / "commondir"
            git = (gitdir / common.read_text().strip()).resolve() if common.exists() else gitdir
        return git / "flow-state" if git.exists() else self.root / MARKER / "state"

    def fingerprint(self) -> dict[str, list]:
        """Every file `flowctl tasks` reads a status from: name -> [mtime_ns, size, inode]."""
        found: dict[str, list] = {}
        for prefix, directory, suffix in (("t:", self.root / MARKER / "tasks", ".json"),
                                          ("s:", self._state_dir() / "tasks", ".state.json")):
            try:
                with os.scandir(directory) as entries:
                    for entry in entries:
                        if entry.name.endswith(suffix):
                            st = entry.stat()
                            found[prefix + entry.name] = [st.st_mtime_ns, st.st_size, st.st_ino]
            except FileNotFoundError:
                pass
        return found

    def _read_cache(self) -> dict | None:
        if self._cache is None:
            try:
                self._cache = json.loads(self.cache_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
        return self._cache

    def _write_cache(self, cache: dict) -> None:
        self._cache = cache
        if not self.readonly:
            atomic_file.write_atomic(self.cache_path, json.dumps(cache).encode())

    def raw_tasks(self) -> list[dict]:
        fingerprint = self.fingerprint()           # before the read: a change during it re-reads
        cache = self._read_cache()
        if cache is not None and cache.get("fingerprint") == fingerprint:
            return cache["tasks"]
        out = self._flowctl("tasks", "--json")
        try:
            tasks = json.loads(out)["tasks"]
        except (ValueError, KeyError, TypeError):
            raise SourceError("flowctl tasks --json gave no task list") from None
        self._write_cache({"fingerprint": fingerprint, "tasks": tasks})
        return tasks

    def _spec_file(self, spec: str | None, seen: dict[str, str]) -> str | None:
        """A task's spec as its file, `.flow/specs/<epic>.md` from the root, when flowctl keeps
        it there (scope freeze tracks it; the prompt names what to read), else as flowctl
        gives it; `seen` holds the answers of one listing (many tasks share one spec)."""
        if not spec:
            return None
        if spec not in seen:
            path = f"{MARKER}/specs/{spec}.md"
            seen[spec] = path if (self.root / path).is_file() else spec
        return seen[spec]

    def load(self) -> Listing:
        tasks: dict[str, Task] = {}
        problems: list[str] = []
        specs: dict[str, str] = {}
        for raw in sorted(self.raw_tasks(), key=_order):
            status = raw.get("status")
            if not raw.get("id") or status not in _STATUSES:
                problems.append(f"flowctl task {raw.get('id')!r}: status {status!r} is unknown;"
                                " skipped")
                continue
            task = Task(id=raw["id"], title=raw.get("title") or raw["id"],
                        status=_STATUSES[status], tool_status=status,
                        priority=raw.get("priority"), deps=list(raw.get("depends_on") or []),
                        spec=self._spec_file(raw.get("spec"), specs),
                        tags=list(raw.get("tags") or []))
            if task.status == HELD:
                task.fail_reason = self._runtime(task.id).get("blocked_reason") or "blocked"
            tasks[task.id] = task
        return Listing(tasks, problems)

    def _runtime(self, task_id: str) -> dict:
        try:
            path = self._state_dir() / "tasks" / f"{task_id}.state.json"
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def details(self, task_id: str) -> dict:
        """`flowctl show --json`: description and evidence for `show` (one call)."""
        try:
            return json.loads(self._flowctl("show", task_id, "--json"))
        except ValueError:
            return {}

    # ------------------------------------------------------------------ writing
    def _flowctl(self, *args: str) -> str:
        if self.tool is None:
            raise SourceError(INSTALL)
        self.calls += 1
        code, out, err = base.run_tool([self.tool, *args], cwd=self.root, env=self.environ)
        if code != 0:
            try:
                why = json.loads(out).get("error") or ""
            except (ValueError, AttributeError):
                why = ""
            raise SourceError(f"flowctl {args[0]} {args[1] if len(args) > 1 else ''} failed: "
                              f"{why or base.first_line(err or out)}")
        return out

    def _write(self, task_id: str, status: str, *args: str) -> None:
        """One write; the cache follows it when only this task's files changed meanwhile."""
        before = self.fingerprint()
        cache = self._read_cache()
        fresh = cache is not None and cache.get("fingerprint") == before
        self._flowctl(*args)
        if not fresh:
            return
        after = self.fingerprint()
        own = {f"t:{task_id}.json", f"s:{task_id}.state.json"}
        changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
        if not changed <= own:
            self._cache = None
            return
        for raw in cache["tasks"]:
            if raw.get("id") == task_id:
                raw["status"] = status
        self._write_cache({"fingerprint": after, "tasks": cache["tasks"]})

    def start(self, task_id: str) -> None:
        self._write(task_id, "in_progress", "start", task_id, "--json")

    def finish(self, task_id: str, result: dict | None, summary: str) -> None:
        commits = [str(result["commit"])] if result and result.get("commit") else []
        evidence = json.dumps({"commits": commits, "tests": [], "prs": []})
        self._write(task_id, "done", "done", task_id, "--summary", summary,
                    "--evidence", evidence, "--json")

    def release(self, task_id: str, reason: str) -> None:
        folder = self.root / ".ralph" / "sources" / NAME
        atomic_file.ensure_dir(folder)
        with tempfile.NamedTemporaryFile("w", dir=folder, suffix=".md", delete=False) as handle:
            handle.write((reason or "no reason given") + "\n")
        try:
            self._write(task_id, "blocked", "block", task_id, "--reason-file", handle.name,
                        "--json")
        finally:
            os.unlink(handle.name)

    def reopen(self, task_id: str, reason: str) -> None:
        self._write(task_id, "todo", "task", "reset", task_id, "--json")
        self.release(task_id, reason)


__all__ = ["FlowctlSource", "NAME", "MARKER", "INSTALL"]

"""Owns the task files for tools and people outside the loop ("Task files"):
`.ralph/current-task.json` (the task of the running session), `.ralph/backlog.json` (the
priority-sorted queue of claimable tasks) and `.ralph/completed/<id>.json` (the archive
record: verification notes, artifacts taken from git, timings). Knows nothing of the loop or
the prompt; never calls the task CLI (the caller passes task records in). Every write is
atomic (atomic_file).

File names: a slug may contain `/` and other characters a file name cannot; `safe_name`
keeps `A-Z a-z 0-9 . _ -` and writes every other byte of the UTF-8 slug as `%XX` (and a
leading `.` as `%2E`), so `web/01` is `completed/web%2F01.json` and the mapping is reversible
(urllib.parse.unquote).
"""
from __future__ import annotations

import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path

from ralphpy import atomic_file, programs
from ralphpy.errors import EnvironmentFailure

_SHA = re.compile(r"[0-9a-f]{7,40}")
_SAFE = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def safe_name(slug: str) -> str:
    """A file-name-safe, reversible encoding of slug (see module docstring)."""
    out = []
    for index, byte in enumerate(slug.encode("utf-8")):
        if byte in _SAFE and not (index == 0 and byte == ord(".")):
            out.append(chr(byte))
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


def now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_json(path: Path, data: object) -> None:
    """Write data as pretty JSON atomically; EnvironmentFailure when it cannot be written."""
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_file.replace(path, text.encode("utf-8"))
    except OSError as err:
        raise EnvironmentFailure(f"cannot write {path} ({err.strerror or err}); "
                                 "check free space and permissions") from None


def read_json(path: Path) -> dict | None:
    """A JSON object file, or None when missing, unreadable or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def git_head(repo: Path) -> str:
    """HEAD's sha, "" when there is none (no commit yet, not a repository)."""
    return _git(repo, "rev-parse", "--verify", "-q", "HEAD").strip()


def write_current_task(ralph_dir: Path, task: dict, *, agent: str, baseline_status: str,
                       head: str, repo: Path | None = None,
                       started_at: str | None = None) -> dict:
    """Write current-task.json for a session about to start; returns what was written.
    task: id, title, objective, criteria, source (and optionally why, priority). With repo,
    the paths already uncommitted at the start are recorded (`dirtyAtStart`), so the archive
    does not credit the session with them."""
    record = {**task, "status": "in_progress", "startedAt": started_at or now_iso(),
              "agent": agent, "baselineStatus": baseline_status, "headAtStart": head}
    if repo is not None:
        record["dirtyAtStart"] = sorted({f["path"] for f in _uncommitted(repo)})
    write_json(ralph_dir / "current-task.json", record)
    return record


def read_current_task(ralph_dir: Path, task_id: str) -> dict:
    """current-task.json in ralph_dir when it is task_id's, else {"id": task_id} (missing,
    unreadable, or another task's)."""
    current = read_json(ralph_dir / "current-task.json") or {}
    return current if current.get("id") == task_id else {"id": task_id}


def task_fields(task) -> dict:
    """What current-task.json says of an assigned task (an assign.choice.AssignedTask)."""
    return {"id": task.id, "title": task.title, "objective": task.title, "why": task.why,
            "criteria": task.criteria, "source": task.source, "priority": task.priority,
            "retryCount": task.retry_count}


def clear_current_task(ralph_dir: Path) -> None:
    (ralph_dir / "current-task.json").unlink(missing_ok=True)


def write_backlog(ralph_dir: Path, tasks: list[dict]) -> list[dict]:
    """Write backlog.json from _export-json records: the claimable queue in the store's
    order (priority, then age), plus the ids of blocked and held open tasks."""
    status = {t.get("id"): t.get("status") for t in tasks}
    queue, blocked, held = [], [], []
    for task in tasks:
        if task.get("status") != "open":
            continue
        if task.get("held"):
            held.append(task["id"])
        elif any(status.get(dep) not in ("done", "deleted") for dep in task.get("deps") or []):
            blocked.append(task["id"])
        else:
            queue.append({key: task.get(key) for key in
                          ("id", "title", "priority", "category", "spec", "ref", "retry_count",
                           "fail_reason")})
    # _export-json is already in task order; the sort keeps that as a tie-breaker.
    queue.sort(key=lambda t: t["priority"] if isinstance(t["priority"], int) else 2)
    write_json(ralph_dir / "backlog.json", {"updatedAt": now_iso(), "tasks": queue,
                                            "blocked": blocked, "held": held})
    return queue


def session_artifacts(repo: Path, head_at_start: str) -> dict:
    """What git says the session produced: commits between head_at_start and HEAD (oldest
    first), files changed between them, and uncommitted changes now."""
    head = git_head(repo)
    commits, files = [], []
    if head and head_at_start and head != head_at_start:
        log = _git(repo, "log", "--reverse", "--format=%H%x00%s", f"{head_at_start}..{head}")
        commits = [dict(zip(("sha", "subject"), line.split("\x00", 1)))
                   for line in log.splitlines() if "\x00" in line]
        diff = _git(repo, "diff", "--name-status", "--no-renames", head_at_start, head)
        files = [dict(zip(("status", "path"), line.split("\t", 1)))
                 for line in diff.splitlines() if "\t" in line]
    return {"headAtStart": head_at_start, "headAtEnd": head, "commits": commits,
            "filesChanged": files, "uncommitted": _uncommitted(repo)}


def _uncommitted(repo: Path) -> list[dict]:
    status = _git(repo, "status", "--porcelain", "--untracked-files=all")
    return [{"status": line[:2].strip(), "path": line[3:]} for line in status.splitlines()
            if len(line) > 3 and not line[3:].startswith(".ralph/")]


def archive_completed(ralph_dir: Path, repo: Path, current: dict, result_text: str | None,
                      *, ended_at: str | None = None) -> Path:
    """Write completed/<safe id>.json for a finished task; returns its path. current is the
    current-task.json record (the agent may have added verification_notes / artifacts);
    result_text is the result stored by `task done` (JSON text or None)."""
    try:
        result = json.loads(result_text) if result_text else None
    except ValueError:
        result = result_text
    result_obj = result if isinstance(result, dict) else {}
    notes = [n for n in (result_obj.get("verification_notes"),
                         current.get("verification_notes")) if n]
    claimed = [a for source in (result_obj.get("artifacts"), current.get("artifacts"))
               if isinstance(source, list) for a in source]
    ended = ended_at or now_iso()
    started = current.get("startedAt") or ended
    task_keys = ("id", "title", "objective", "why", "criteria", "source", "priority", "agent",
                 "baselineStatus")
    artifacts = session_artifacts(repo, current.get("headAtStart") or "")
    before = set(current.get("dirtyAtStart") or [])
    artifacts["uncommittedBefore"] = [f for f in artifacts["uncommitted"] if f["path"] in before]
    artifacts["uncommitted"] = [f for f in artifacts["uncommitted"] if f["path"] not in before]
    related = [*claimed, *([result_obj["commit"]] if isinstance(result_obj.get("commit"), str) else [])]
    artifacts["unrelated"] = unrelated_commits(repo, artifacts, related)
    record = {
        "task": {key: current[key] for key in task_keys if key in current},
        "status": "completed",
        "verification_notes": "\n\n".join(dict.fromkeys(str(n) for n in notes)),
        "result": result,
        "artifacts": {**artifacts, "claimed": claimed},
        "timings": {"startedAt": started, "endedAt": ended,
                    "durationSeconds": _seconds_between(started, ended)},
    }
    path = ralph_dir / "completed" / f"{safe_name(current['id'])}.json"
    write_json(path, record)
    return path


def unrelated_commits(repo: Path, artifacts: dict, claimed: list) -> list[dict]:
    """Drift, kept simple (seed 002): the session's commits that touch no file the
    agent named as its artifacts and are not the commit it named. The agent's own list is
    the only statement of what the task touched, so nothing is flagged when it named
    nothing. Each: sha, subject, files."""
    names = [str(item) for item in claimed if item]
    if not names or not artifacts.get("commits"):
        return []
    log = _git(repo, "log", "--reverse", "--name-only", "--format=%x00%H%x00%s",
               f"{artifacts['headAtStart']}..{artifacts['headAtEnd']}")
    commits: list[dict] = []
    for line in log.splitlines():
        if line.startswith("\x00"):
            sha, _, subject = line[1:].partition("\x00")
            commits.append({"sha": sha, "subject": subject, "files": []})
        elif line.strip() and commits:
            commits[-1]["files"].append(line)
    shas = [name for name in names if _SHA.fullmatch(name)]

    def related(commit: dict) -> bool:
        return (any(commit["sha"].startswith(sha) for sha in shas)
                or any(path in name for path in commit["files"] for name in names))
    return [c for c in commits if not related(c)]


def _seconds_between(start: str, end: str) -> int | None:
    try:
        fmt = "%Y-%m-%dT%H:%M:%SZ"
        return int((datetime.strptime(end, fmt) - datetime.strptime(start, fmt)).total_seconds())
    except ValueError:
        return None


def _git(repo: Path, *args: str) -> str:
    # Artifacts are best effort: a failing git (no repository, unknown start sha after a
    # history rewrite) yields empty lists, never an exception that loses the archive.
    # The environment is ralph.py's own, read now: it holds the run's exports
    # (docs/contract/ralph-cli.md s.9).
    try:
        done = programs.run([*programs.GIT, *args], cwd=repo, env=os.environ, timeout=60)
    except (OSError, programs.TimeoutExpired):
        return ""
    return done.stdout.decode("utf-8", "replace") if done.code == 0 else ""


__all__ = ["safe_name", "write_current_task", "read_current_task", "task_fields",
           "clear_current_task", "write_backlog",
           "archive_completed", "session_artifacts", "unrelated_commits", "git_head", "read_json", "write_json",
           "now_iso"]

"""Owns one assigned session's bookkeeping around the agent run: before it, inbox
import, backlog.json, the claim, current-task.json, the respawn guard's record and the
prompt; after it, the completion check (done -> archived with notes, FRESH_START marked;
still active -> failed with the reason, attempts counted by the task CLI) and the hold when
the guard says so; on resume, the session a dead ralph.py left (settle_interrupted). Knows
nothing of the agent process, printing or events: the loop runs the agent and logs the
returned messages.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ralphpy.assign import choice
from ralphpy.session import fresh_start
from ralphpy.assign import inbox
from ralphpy.backlog import client
from ralphpy.assign import task_files
from ralphpy.assign.choice import AssignedTask
from ralphpy.assign.respawn_guard import RespawnGuard
from ralphpy.backlog.answers import FAIL_REASON, give_back
from ralphpy.backlog.client import TaskCall



@dataclass
class AssignedSession:
    """What start_assigned_session prepared. task is None when nothing was claimed."""
    task: AssignedTask | None
    prompt: str = ""
    baseline_status: str = "open"
    head: str = ""
    spawn_count: int = 0
    messages: list[str] = field(default_factory=list)

    def as_event(self) -> dict:
        """A suggested events.jsonl record for the loop (`task_assigned`)."""
        task = self.task
        return {"event": "task_assigned", "task": task.id if task else None,
                "priority": task.priority if task else None, "baseline": self.baseline_status,
                "spawn": self.spawn_count, "head": self.head}


@dataclass
class SessionOutcome:
    """What finish_assigned_session found and did."""
    task_id: str
    outcome: str            # completed | failed | released | unknown
    status: str | None      # the task's status after ralph's own calls
    held: bool = False
    archive: Path | None = None
    fail_output: str = ""   # `failed <id>`: passed through to stdout like the build loop's
    messages: list[str] = field(default_factory=list)
    hold_reason: str = ""

    def as_event(self) -> dict:
        """A suggested events.jsonl record for the loop: `task_completed`, `task_failed`,
        `task_released` or `task_unknown`, with `held`/`hold_reason` when the guard held it."""
        return {"event": f"task_{self.outcome}", "task": self.task_id, "status": self.status,
                "archive": str(self.archive) if self.archive else None, "held": self.held,
                "hold_reason": self.hold_reason or None}


def start_assigned_session(task_call: TaskCall, *, repo: Path, ralph_dir: Path, agent: str,
                           guard: RespawnGuard, template: str | None = None,
                           lease: int | None = None, inbox_dir: Path | None = None,
                           task_cmd: str = "$RALPH_TASK_SCRIPT") -> AssignedSession:
    """Import the inbox, refresh backlog.json, claim the next task (the one in an unfinished
    current-task.json first), write current-task.json, record the spawn, build the prompt."""
    # The template is read before the claim: a bad template must not strand a claimed task.
    text = template if template is not None else choice.load_template()
    messages: list[str] = []
    if inbox_dir is not None:
        report = inbox.import_inbox(inbox_dir, task_call)
        if report.imported:
            messages.append(f"inbox: imported {len(report.imported)} task(s): "
                            + ", ".join(report.imported))
        messages.extend(report.problems)
    records = client.export_tasks(task_call)
    task = None
    previous = task_files.read_json(ralph_dir / "current-task.json")
    if previous and previous.get("status") == "in_progress" and previous.get("id"):
        # Seed 002 "Session Start Flow": finish what was started before picking anew.
        task = choice.claim_next(task_call, agent=agent, lease=lease,
                                     target=str(previous["id"]), repo=repo)
        if task is not None:
            messages.append(f"resuming task {task.id} from current-task.json")
    if task is None:
        task = choice.claim_next(task_call, agent=agent, lease=lease, repo=repo)
    if task is None:
        task_files.clear_current_task(ralph_dir)
        if records is not None:
            task_files.write_backlog(ralph_dir, records)
        return AssignedSession(None, messages=messages)
    before = next((r for r in records or [] if r.get("id") == task.id), {})
    # An active task whose lease expired is claimable "as open" (docs/contract/task-cli.md s.9.3).
    baseline = "open" if before.get("status") in (None, "open", "active") else before["status"]
    if records is not None:
        task_files.write_backlog(ralph_dir, [r for r in records if r.get("id") != task.id])
    head = task_files.git_head(repo)
    task_files.write_current_task(ralph_dir, task_files.task_fields(task), agent=agent,
                                  baseline_status=baseline, head=head, repo=repo)
    count = guard.before_spawn(task.id, baseline)
    current_file = ralph_dir / "current-task.json"
    try:        # as the agent sees it from the repository root, when it is inside
        shown_file = str(current_file.resolve().relative_to(repo.resolve()))
    except ValueError:
        shown_file = str(current_file)
    block = choice.render_block(task, text, task_cmd=task_cmd,
                                    current_task_file=shown_file)
    messages.append(f"assigned task {task.id} (priority {task.priority}, spawn {count} of "
                    f"{guard.limit} for status {baseline})")
    return AssignedSession(task, choice.session_prompt(block), baseline, head, count,
                           messages)


def done_from_current_task(task_call: TaskCall, task_id: str, current: dict,
                           repo: Path) -> str | None:
    """The seed's file protocol: the agent marked current-task.json completed but did not
    call `task done`; ralph records it, with the HEAD of `repo` as the commit. The result
    text recorded, or None (not marked completed, or `done` refused)."""
    if current.get("id") != task_id or current.get("status") != "completed":
        return None
    result = {"commit": task_files.git_head(repo) or "none",
              "verification_notes": current.get("verification_notes") or "",
              "artifacts": current.get("artifacts") or [],
              "recorded_by": "current-task.json"}
    result_text = json.dumps(result, ensure_ascii=False)
    ok, _ = task_call(["done", task_id, "--result", result_text])
    return result_text if ok else None


def _status_after(task_call: TaskCall, task_id: str, current: dict, record: dict | None,
                  repo: Path, messages: list[str]) -> tuple[str | None, str | None]:
    """(status, result text) of the task once its session is over: an `active` task whose
    current-task.json the agent marked completed is marked done first."""
    status = record.get("status") if record else None
    result_text = record.get("result") if record else None
    if status == "active":
        recorded = done_from_current_task(task_call, task_id, current, repo)
        if recorded is not None:
            messages.append(f"task {task_id}: marked done from current-task.json")
            return "done", recorded
    return status, result_text


def _archive(ralph_dir: Path, repo: Path, current: dict, record: dict | None,
             result_text: str | None, messages: list[str]) -> Path:
    """A task done: its record in .ralph/completed/, and FRESH_START for the next session."""
    path = task_files.archive_completed(
        ralph_dir, repo, {"title": (record or {}).get("title"), **current}, result_text)
    fresh_start.mark(ralph_dir)
    messages.append(f"task {current['id']}: done, archived to {path}")
    return path


def settle_interrupted(task_call: TaskCall, *, repo: Path, ralph_dir: Path,
                       agent: str) -> tuple[str | None, list[str]]:
    """On resume, before the recovery fails what the dead run's agent still holds: the task
    of its assigned session (current-task.json, written for that agent) is settled as that
    session's end would have settled it: marked done when the agent marked the file
    completed, archived when done. A task not done is left to the recovery, and the next
    session resumes it from the file. Returns (the task found done or None, the messages)."""
    current = task_files.read_json(ralph_dir / "current-task.json") or {}
    task_id = current.get("id")
    if not task_id or current.get("agent") != agent:
        return None, []
    messages: list[str] = []
    record = client.task_record(task_call, task_id)
    if (record or {}).get("assignee") not in (None, agent):   # a fleet: another host's now
        return None, []
    status, result_text = _status_after(task_call, task_id, current, record, repo, messages)
    if status != "done":
        return None, messages
    _archive(ralph_dir, repo, current, record, result_text, messages)
    task_files.clear_current_task(ralph_dir)
    return task_id, messages


def finish_assigned_session(task_call: TaskCall, task_id: str, *, repo: Path,
                            ralph_dir: Path, guard: RespawnGuard,
                            reason: str = FAIL_REASON, counted: bool = True,
                            ours: bool = False) -> SessionOutcome:
    """The completion check after an assigned session (call it before the build loop's
    crash-safety step, which then finds nothing left to fail). counted: False for a session
    that was no attempt at its task (a usage limit), whose spawn the guard takes back and
    whose task goes back without a failure counted when task_call is ours (answers.give_back)."""
    messages: list[str] = []
    current = task_files.read_current_task(ralph_dir, task_id)
    record = client.task_record(task_call, task_id)
    status, result_text = _status_after(task_call, task_id, current, record, repo, messages)
    outcome = SessionOutcome(task_id, "unknown", status, messages=messages)
    if status == "done":
        outcome.archive = _archive(ralph_dir, repo, current, record, result_text, messages)
        outcome.outcome = "completed"
    elif status == "active":
        ok, out = task_call(give_back(task_id, reason, attempt=counted, ours=ours))
        outcome.fail_output = out
        outcome.outcome = "failed"
        if ok:
            outcome.status = status = "open"
        messages.append(f"task {task_id}: not done after the session: {reason}")
    elif status is not None:
        outcome.outcome = "released"
        messages.append(f"task {task_id}: left {status} by the agent")
    else:
        messages.append(f"task {task_id}: cannot be read from the backlog")
    if status is None:
        # Unknown (task CLI failing): keep current-task.json so the next start resumes it;
        # the build loop's crash-safety step still fails what is left active.
        return outcome
    task_files.clear_current_task(ralph_dir)
    if not counted:
        guard.take_back(task_id)
    verdict = guard.after_session(task_id, status)
    messages.append(verdict.message if counted or verdict.progressed else
                    f"task {task_id}: still {status} after a session that hit a usage limit "
                    f"(not counted: {verdict.count} of {guard.limit} spawns without progress)")
    if verdict.hold and status != "done":
        ok, _ = task_call(["_hold", task_id, "--reason", verdict.reason])
        outcome.held, outcome.hold_reason = ok, verdict.reason if ok else ""
        if not ok:
            messages.append(f"task {task_id}: `task _hold` failed; it stays claimable")
    records = client.export_tasks(task_call)
    if records is not None:
        task_files.write_backlog(ralph_dir, records)      # the queue as the session left it
    return outcome


__all__ = ["AssignedSession", "SessionOutcome", "start_assigned_session",
           "done_from_current_task", "settle_interrupted", "finish_assigned_session"]

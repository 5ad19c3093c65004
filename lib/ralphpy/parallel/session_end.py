"""Owns the end of one session of a `--parallel N` run: its outcome (unattended.outcome's classes,
as the single loop classifies them, usage limits included), the anti-drift block's file
protocol (a task marked completed in the worktree's current-task.json is marked done; with
--assign a task done is archived), then by its task's status: `done` is verified in its
worktree when the verify gate is on (a failure re-opens or holds the task, docs/verify.md, and
is counted as an attempt) and merged back into the run's branch (a failed merge re-opens the
task with the reason and keeps the branch), `active` is failed (docs/contract/ralph-cli.md s.15.5,
or with the timeout that ended it) and counted as an attempt (--max-attempts holds it,
unattended.night; not when Ctrl+C or SIGTERM stopped the run, the session ending interrupted, nor
after a usage limit: then the task is released, its retry_count kept, answers.give_back), as is a
task the agent put back itself with `task fail` (the build skill's way to give up), anything else is
recorded as left; a task none of the run's sessions held, deleted meanwhile, is named once per run;
then its worktree goes, its agent id is free again, and the run state, the session_end event and
the user's line record it. Knows nothing of the breaker, the budgets, the usage-limit wait or
of what runs next (run)."""
from __future__ import annotations

import time
from typing import Any

from ralphpy import strays
from ralphpy.assign import session as assigned_session
from ralphpy.assign import task_files
from ralphpy.backlog import answers
from ralphpy.backlog import readonly as backlog_readonly
from ralphpy.backlog.answers import FAIL_REASON
from ralphpy.errors import RalphError
from ralphpy.parallel import worktrees
from ralphpy.parallel.book import Book
from ralphpy.parallel.git import Git
from ralphpy.runs import progress
from ralphpy.runs import state as run_state
from ralphpy.session import heartbeat
from ralphpy.session import watchdog
from ralphpy.unattended import outcome, session_outcome



INTERRUPTED_REASON = "ralph.py was interrupted during the session"


def merge(book: Book, wt: worktrees.Worktree, record: dict | None = None) -> tuple[bool, str]:
    """(merged, message); a task whose branch cannot be merged is re-opened. record: the done
    task's, whose result is made to name its commit's id after a rebase (_recommit)."""
    git = Git(book.s.env)
    commit = answers.result_commit((record or {}).get("result"))
    before = git(wt.repo, "rev-parse", "-q", "--verify", f"refs/heads/{wt.base_branch}",
                 check=False)[1].strip() if commit else ""     # only _recommit asks for it
    try:
        stray = worktrees.keep_stray_head(wt, env=book.s.env)   # never merged without them
        merged = worktrees.MergeResult(False, True, stray) if stray else \
            worktrees.merge_back(wt, book.s.merge, env=book.s.env)
    except RalphError as err:
        merged = worktrees.MergeResult(False, True, str(err))
    if merged.merged and commit:
        _recommit(book, git, wt, commit, before)
    if merged.merged or (book.s.merge == "none" and not merged.conflict):
        return True, merged.message
    book.call("_reopen", wt.task, "--reason", merged.message)
    return False, merged.message


def _recommit(book: Book, git: Git, wt: worktrees.Worktree, commit: str, before: str) -> None:
    """The merge rebased the task's branch onto the run's, which gives its commits new ids:
    the task's result names the commit now on the run's branch (for the report and the
    blocker_results later tasks see), not one left on no branch, as --sync does."""
    head = git(wt.repo, "rev-parse", f"refs/heads/{wt.base_branch}")[1].strip()
    found = git.rebased_as(wt.repo, commit, before or None, head)
    if found and book.call("_recommit", wt.task, *found)[1].startswith("recommitted"):
        old, new = found
        book.event("log", kind="recommitted", task=wt.task, old=old, new=new,
                   message=f"task {wt.task}'s result names commit {new[:12]}, its id after "
                           f"the rebase (it was {old[:12]})")


def name_deleted(book: Book, tid: str) -> None:
    """Its session's agent deleted the task instead of finishing it: not done, never verified,
    never silent (a session's end, or the recovery of one a dead run left)."""
    notice = answers.DELETED_NOTICE.format(tid)
    book.s.warn(f"[{tid}] {notice}")
    book.event("log", kind="deleted", task=tid, message=notice)
    book.deletions_named.add(tid)                  # never named again as unheld


def name_unheld(book: Book) -> None:
    """Each task deleted since the run began that none of its sessions held (an agent deleting
    a duplicate it never claimed, say): not done, though the run may end "All tasks complete",
    so it is named once per run, as the single loop's session end names it. Only where the
    run reads ralph's own store back (Setup.name_unheld). No `[tid]` prefix: no session of
    the run had that task, and which session deleted it is not known."""
    if not book.s.name_unheld:
        return
    ours = {agent for agent in (book.s.first_agent, *book.extra_agents) if agent}
    for tid, holder in backlog_readonly.deleted_since(book.deletions_since, environ=book.s.env,
                                                      cwd=book.s.cwd):
        if tid in book.deletions_named or holder in ours:
            continue                   # named, or its session's end names it (name_deleted)
        notice = answers.DELETED_UNHELD_NOTICE.format(tid)
        book.s.warn(notice)
        book.event("log", kind="deleted", task=tid, message=notice)
        book.deletions_named.add(tid)


def land(book: Book, wt: worktrees.Worktree, record: dict) -> tuple[bool, str, bool]:
    """A task done in its worktree: judged there by the verify gate when it is on, merged when
    the verdict lets it (docs/verify.md). (landed, message, a failed attempt: a reopen by the
    gate counts as one, as in the single loop)."""
    verdict = book.s.verify.judge_worktree(record, wt) if book.s.verify else None
    if verdict is not None and not verdict.ok:
        return False, verdict.reason.split("\n", 1)[0], True         # reopened (or held)
    return (*merge(book, wt, record), False)


def land_recovered(book: Book, wt: worktrees.Worktree, record: dict) -> tuple[bool, str]:
    """land for a task a dead run's session marked done: its check may have been cut short by
    the kill, so it is judged before its branch is merged; a reopen counts an attempt. A
    worktree already gone was removed after its session's end had judged it: merged only."""
    if not wt.path.is_dir():
        return merge(book, wt, record)
    ok, message, attempt = land(book, wt, record)
    if attempt:
        book.s.night.attempt_failed(wt.task, message, record.get("retry_count"))
    return ok, message


def _classify(book: Book, result: Any) -> tuple[outcome.Outcome, Any]:
    limits = book.s.timeouts or watchdog.SessionTimeouts(None, None)
    return session_outcome.classify_session(
        result, danger=book.s.danger, agent=book.s.adapter.name, env=book.s.env,
        session_s=limits.session_s, idle_s=limits.idle_s,
        default_wait_s=book.s.default_limit_wait_s)


def assigned_end(book: Book, wt: worktrees.Worktree, agent: str | None, record: dict) -> dict:
    """The anti-drift block's side of a session's end (docs/parallel.md), also when a resumed
    run recovers a session its ralph.py died in: a task its agent marked completed in the
    worktree's .ralph/current-task.json is marked done; with --assign, a task done is archived
    in .ralph/completed/, before a rebase copies its commits. Returns the task's record as it
    is now."""
    tid = wt.task
    current = task_files.read_current_task(wt.path / ".ralph", tid)
    if record.get("status") == "active" and not book.s.prompt:
        recorded = assigned_session.done_from_current_task(
            lambda argv: book.call(*argv, agent=agent), tid, current, wt.path)
        if recorded is not None:                   # what `done` wrote: no second export
            book.s.warn(f"[{tid}] marked done from current-task.json")
            record = {**record, "status": "done", "result": recorded}
    if record.get("status") == "done" and book.s.write_task_files:
        path = task_files.archive_completed(book.ralph_dir, wt.path,
                                            {"title": record.get("title"), **current},
                                            record.get("result"))
        book.s.warn(f"[{tid}] done, archived to {path.relative_to(book.ralph_dir.parent)}")
    return record


def finish(book: Book, tid: str, result: Any) -> tuple[outcome.Outcome, outcome.Outcome, Any]:
    """Settle and record the session of `tid` that ended with `result` (a session.pool
    result); (the outcome as the breaker counts it: a failure unless the task ended done and
    merged, how the session ended: outcome.classify's, the usage limit it hit or None)."""
    x = book.sessions.pop(tid)
    x.writer.close()
    held = False
    if result.heartbeat is not None and result.heartbeat.failures:   # as the single loop's notice
        problem = heartbeat.problem(result.heartbeat)
        book.s.warn(f"[{tid}] {problem}")
        book.event("log", kind="heartbeat", task=tid, message=problem)
    if result.strays:
        book.s.warn(f"[{tid}] {strays.line(result.strays)}")
        book.event("log", kind="strays", task=tid, message=strays.line(result.strays))
    how, hit = _classify(book, result)
    record = assigned_end(book, x.wt, x.agent, book.export().get(tid) or {})
    status = record.get("status")
    attempt = False                    # a failed attempt at the task (--max-attempts may hold)
    prior = record.get("retry_count")  # its failures before this one (earlier runs count)
    if status == "done":
        ok, message, attempt = land(book, x.wt, record)
    elif status == "active":
        # s.15.5 crash safety; a timeout is named as the single loop names it. Ctrl+C or
        # SIGTERM stopped the run, not the agent, and a usage limit is no attempt either: the
        # task goes back (with our task CLI, without a failure counted), and no attempt counts.
        tried = not result.interrupted and how.kind not in outcome.NOT_AN_ATTEMPT
        reason = INTERRUPTED_REASON if result.interrupted else session_outcome.fail_reason(how)
        failed = book.passthrough(*answers.give_back(tid, reason, attempt=tried,    # fenced
                                                     ours=book.s.task.embedded), agent=x.agent)
        ok, message, attempt = False, reason, failed and tried
    elif status == "open" and record.get("fail_reason") and \
            (record.get("retry_count") or 0) > (x.task.get("retry_count") or 0):
        ok, message, attempt = False, record["fail_reason"], True   # the agent's `task fail`
        prior = x.task.get("retry_count")                            # (the record counts it)
    else:
        ok, message = status == "deleted", f"the session left the task {status}"
        if status == "deleted":
            name_deleted(book, tid)
    name_unheld(book)               # the store's first read since this session's agent ran
    if attempt and how.kind not in outcome.NOT_AN_ATTEMPT:
        held = book.s.night.attempt_failed(tid, message, prior)
    try:
        worktrees.remove(x.wt, env=book.s.env)
    except RalphError as err:
        book.s.warn(f"[{tid}] could not remove its worktree: {err}")
    book.free_agents.append(x.agent)
    book.state.iteration += 1                      # sessions ended, as the loop's k
    entry = {"task": tid, "at": run_state.utc_now(), "agent": x.agent, "n": x.n,
             "branch": x.wt.branch, "exit_code": result.returncode,
             **({"outcome": "deleted"} if status == "deleted" else {})}
    (book.state.completed if ok else book.state.failed).append(
        entry if ok else {**entry, "reason": message})
    summary = result.summary
    resume = {"resume_at": hit.reset_at.isoformat()} if hit and hit.reset_at else {}
    stopped = result.interrupted and not ok          # as the single loop: no failure counted
    progress.keep_outcome(book.state, x.n, how.kind, how.detail, not ok)   # for progress.md
    ended = ("deleted" if status == "deleted" else "completed" if ok
             else "interrupted" if stopped else "failed")
    book.event("session_end", n=x.n, task=tid, exit_code=result.returncode,
               duration_s=round(time.monotonic() - x.clock, 3), outcome=ended,
               reason=message, **{"class": how.kind, "detail": how.detail,
                                  "counts_as_failure": how.counts_as_failure and not stopped},
               **resume,
               cost_usd=getattr(summary, "total_cost_usd", None),
               turns=getattr(summary, "num_turns", None), **({"held": [tid]} if held else {}))
    book.save()
    if x.pidfile:
        x.pidfile.unlink(missing_ok=True)
    book.s.say(f"[{tid}] {'done' if ended == 'completed' else ended}: {message}")
    return outcome.Outcome(how.kind, message, not ok and not stopped), how, hit


__all__ = ["finish", "land", "land_recovered", "merge", "name_deleted", "name_unheld",
           "FAIL_REASON"]

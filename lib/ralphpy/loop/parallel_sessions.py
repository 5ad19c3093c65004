"""Owns the start and the end of one `--parallel N` session, run by the one session lifecycle
(loop.sessions) in a worktree. Start: for a task its slot's agent claimed, the session is
written into the run state before its worktree and agent exist (write-ahead, so a recovery
after a kill -9 finds everything), then its worktree and branch, its prompt (the anti-drift
block, whose file protocol is the worktree's .ralph/current-task.json, or the --prompt
template) and its agent in the pool; a session that cannot start fails its task with the
reason. End: classified as the single loop's, the anti-drift file protocol settled (a task
marked completed in current-task.json is marked done; with --assign a task done is
archived), the features' after_session hooks (the verify gate judges a done task in its
worktree), then by its task's status: `done` is merged back into the run's branch (a failed
merge re-opens it with the reason and keeps the branch), `active` goes back
(docs/contract/ralph-cli.md s.15.5, the lifecycle's give-back), a task the agent put back itself
with `task fail` is a failed attempt, anything else is recorded as left; attempts are counted
(--max-attempts holds the task); a task none of the run's sessions held, deleted meanwhile, is named
once per run; then its worktree goes, its agent id is free again, and the run state, the session_end
event and the user's line record it. Knows nothing of choosing tasks (parallel.scheduler), the
breaker, the budgets, the usage-limit wait or of what runs next (loop.parallel_loop)."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ralphpy import workspace
from ralphpy.assign import choice, task_files
from ralphpy.assign import assigned_session
from ralphpy.backlog import answers
from ralphpy.backlog import readonly as backlog_readonly
from ralphpy.errors import RalphError, SessionNotStarted
from ralphpy.loop import sessions
from ralphpy.loop.parallel_book import Book, listed
from ralphpy.loop.sessions import Prompt, Session
from ralphpy.parallel import worktrees
from ralphpy.parallel.git import Git
from ralphpy.parallel.prefix_writer import PrefixWriter
from ralphpy.runs import state as run_state
from ralphpy.tasks import question_files
from ralphpy.unattended import outcome


def start(book: Book, task: dict, template: str | None) -> Session | None:
    """Start the session of `task` (claimed by task["_agent"]); None when it did not start."""
    ctx, tid, agent = book.ctx, task["id"], task["_agent"]
    book.state.sessions_started += 1
    n = book.state.sessions_started
    s = sessions.new(ctx, "/ralph-build", Prompt("", tid), n=n, agent=agent, record=task)
    s.tag, s.task, s.slot = f"[{tid}] ", tid, book.slots.get(agent, 0)
    s.log = sessions.log_path(ctx, s)
    run_dir = book.ralph_dir / "runs" / book.state.run_id
    s.pidfile = run_state.pidfile_path(book.ralph_dir, book.state.run_id, n)
    # Write-ahead: the session is in the run state before its worktree or agent exists, and
    # its agent records its pid in its pid file before it runs (session.pidfile), so a kill -9
    # of ralph.py at any point leaves nothing unlisted.
    try:
        planned = worktrees.planned(ctx.cwd, book.state.run_id, tid, ctx.branch, env=ctx.env)
    except RalphError as err:
        return not_started(book, task, f"cannot create its worktree: {err}")
    book.starting = listed(tid, agent, planned, s.log, run_state.utc_now(), s.pidfile, None, n)
    book.save()                     # a state that cannot be written stops the run here
    try:
        wt = worktrees.create(ctx.cwd, book.state.run_id, tid, ctx.branch, env=ctx.env,
                              start=ctx.features.start_point(tid))
    except RalphError as err:
        return not_started(book, task, f"cannot create its worktree: {err}")
    s.place, s.cwd = wt, wt.path
    prompt = book.dispatch_template()
    if prompt:                      # --prompt: the whole prompt, as in the single loop
        s.prompt = Prompt("", tid, command=choice.dispatch_prompt(prompt, tid))
        s.command = s.prompt.command
    else:
        assigned = choice.build_task(task, Path(ctx.cwd))
        # The block's other way to finish: .ralph/current-task.json of the worktree, the
        # agent's $PWD, marked completed (finish reads it)
        task_files.write_current_task(workspace.ralph_subdir(wt.path),
                                      task_files.task_fields(assigned), agent=agent,
                                      baseline_status="open", head=task_files.git_head(wt.path))
        s.prompt = Prompt(choice.render_block(assigned, template), tid)
    frozen = run_dir / f"task-{worktrees.branch_safe(tid)}"
    frozen.write_text(tid + "\n")
    s.env = {**worktrees.session_env(wt, ctx.env, Path(ctx.cwd)),
             "RALPH_AGENT_ID": agent, "RALPH_FROZEN_IDS_FILE": str(frozen)}
    s.out = PrefixWriter(ctx.stdout.buffer, tid)
    try:
        sessions.begin(ctx, s)      # the features' prepare: the worktree's set-up among them
    except SessionNotStarted as err:
        _remove(book, wt)
        return not_started(book, task, str(err))
    failed = sessions.launch(ctx, book.pool, s)
    if failed is not None:
        worktrees.remove(wt, env=ctx.env)
        s.pidfile.unlink(missing_ok=True)
        return not_started(book, task, f"cannot run '{s.argv[0]}': {failed.error}")
    book.sessions[tid] = s
    s.started = book.starting["startedAt"]
    book.starting = None
    ctx.say(f"[{tid}] started: agent {agent}, branch {wt.branch}")
    book.event("session_start", n=n, task=tid, agent=s.adapter.name, agent_id=agent,
               branch=wt.branch, log=str(s.log),
               **({"model": s.fields["model"]} if "model" in s.fields else {}))
    return s                  # a recovery needs no more than the write-ahead record and pid file


def _remove(book: Book, wt: worktrees.Worktree) -> None:
    """The worktree of a session that did not start goes (its task fails with the reason)."""
    try:
        worktrees.remove(wt, env=book.ctx.env)
    except RalphError as err:
        book.ctx.warn(f"[{wt.task}] could not remove its worktree: {err}")


def not_started(book: Book, task: dict, reason: str) -> None:
    """The task is failed with `reason`, one stderr line and a `not_started` event say so (no
    session end will); its agent id is free again."""
    book.starting = None
    book.call("fail", task["id"], "--reason", reason, agent=task["_agent"])
    book.free_agents.append(task["_agent"])
    book.state.failed.append({"task": task["id"], "at": run_state.utc_now(), "reason": reason})
    book.ctx.warn(f"[{task['id']}] not started: {reason}")
    book.event("log", kind="not_started", task=task["id"], message=reason)
    book.save()
    return None


def merge(book: Book, wt: worktrees.Worktree, record: dict | None = None) -> tuple[bool, str]:
    """(merged, message); a task whose branch cannot be merged is re-opened. record: the done
    task's, whose result is made to name its commit's id after a rebase (_recommit)."""
    git = Git(book.ctx.env)
    commit = answers.result_commit((record or {}).get("result"))
    before = git(wt.repo, "rev-parse", "-q", "--verify", f"refs/heads/{wt.base_branch}",
                 check=False)[1].strip() if commit else ""     # only _recommit asks for it
    try:
        stray = worktrees.keep_stray_head(wt, env=book.ctx.env)   # never merged without them
        merged = worktrees.MergeResult(False, True, stray) if stray else \
            worktrees.merge_back(wt, book.ctx.options.merge, env=book.ctx.env)
    except RalphError as err:
        merged = worktrees.MergeResult(False, True, str(err))
    if merged.merged and commit:
        _recommit(book, git, wt, commit, before)
    if merged.merged or (book.ctx.options.merge == "none" and not merged.conflict):
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
    book.ctx.warn(f"[{tid}] {notice}")
    book.event("log", kind="deleted", task=tid, message=notice)
    book.deletions_named.add(tid)                  # never named again as unheld


def name_unheld(book: Book) -> None:
    """Each task deleted since the run began that none of its sessions held (an agent deleting
    a duplicate it never claimed, say): not done, though the run may end "All tasks complete",
    so it is named once per run, as the single loop's session end names it. Only where the
    run reads ralph's own store back (Book.names_unheld). No `[tid]` prefix: no session of
    the run had that task, and which session deleted it is not known."""
    if not book.names_unheld():
        return
    ours = {agent for agent in (book.ctx.agent_id, *book.extra_agents) if agent}
    for tid, holder in backlog_readonly.deleted_since(book.deletions_since, environ=book.ctx.env,
                                                      cwd=book.ctx.cwd):
        if tid in book.deletions_named or holder in ours:
            continue                   # named, or its session's end names it (name_deleted)
        notice = answers.DELETED_UNHELD_NOTICE.format(tid)
        book.ctx.warn(notice)
        book.event("log", kind="deleted", task=tid, message=notice)
        book.deletions_named.add(tid)


def assigned_end(book: Book, wt: worktrees.Worktree, agent: str | None, record: dict) -> dict:
    """The anti-drift block's side of a session's end (docs/parallel.md), also when a resumed
    run recovers a session its ralph.py died in: a task its agent marked completed in the
    worktree's .ralph/current-task.json is marked done; with --assign, a task done is archived
    in .ralph/completed/, before a rebase copies its commits. Returns the task's record as it
    is now."""
    tid = wt.task
    current = task_files.read_current_task(wt.path / ".ralph", tid)
    if record.get("status") == "active" and not book.dispatch_template():
        recorded = assigned_session.done_from_current_task(
            lambda argv: book.call(*argv, agent=agent), tid, current, wt.path)
        if recorded is not None:                   # what `done` wrote: no second export
            book.ctx.warn(f"[{tid}] marked done from current-task.json")
            record = {**record, "status": "done", "result": recorded}
    if record.get("status") == "done" and book.assigning():
        path = task_files.archive_completed(book.ralph_dir, wt.path,
                                            {"title": record.get("title"), **current},
                                            record.get("result"))
        book.ctx.warn(f"[{tid}] done, archived to {path.relative_to(book.ralph_dir.parent)}")
    return record


def land_recovered(book: Book, wt: worktrees.Worktree, record: dict) -> tuple[bool, str]:
    """A task a dead run's session marked done: its check may have been cut short by the kill,
    so it is judged before its branch is merged, as a session's end judges it (the features'
    after_session hooks); a reopen counts an attempt. A worktree already gone was removed
    after its session's end had judged it: merged only."""
    if not wt.path.is_dir():
        return merge(book, wt, record)
    ctx = book.ctx
    s = Session(n=0, command="/ralph-build", prompt=Prompt("", wt.task), agent="",
                task=wt.task, record=record, place=wt, cwd=wt.path)
    ctx.features.after_session(s)
    if wt.task in s.failed:
        message = s.reasons.get(wt.task, s.reason)
        s.reasons[wt.task], s.prior = message, record.get("retry_count")
        ctx.features.record(s)              # the attempt counts (--max-attempts); no result
        return False, message
    return merge(book, wt, record)


def finish(book: Book, tid: str, result: Any) -> tuple[outcome.Outcome, outcome.Outcome, Any]:
    """Settle and record the session of `tid` that ended with `result` (a session.pool
    result); (the outcome as the breaker counts it: a failure unless the task ended done and
    merged, how the session ended: outcome.classify's, the usage limit it hit or None)."""
    ctx = book.ctx
    x = book.sessions.pop(tid)
    x.out.close()
    sessions.classify(ctx, x, result)                  # once, as the single loop's
    how, hit = x.outcome, x.hit
    claimed_retries = x.record.get("retry_count")
    x.record = assigned_end(book, x.place, x.agent, book.record(tid))
    status = x.record.get("status")
    attempt = False                    # a failed attempt at the task (--max-attempts may hold)
    prior = x.record.get("retry_count")  # its failures before this one (earlier runs count)
    ctx.features.after_session(x)      # the verify gate judges a done task in its worktree
    if status == "done" and tid in x.failed:
        ok, message, attempt = False, x.reasons.get(tid, x.reason), True   # reopened (or held)
    elif status == "done":
        ok, message = merge(book, x.place, x.record)
    elif status == "active":
        # s.15.5 crash safety, as the lifecycle gives back; a timeout is named as the single
        # loop names it. Ctrl+C or SIGTERM stopped the run, not the agent, and a usage limit
        # is no attempt either: the task goes back (with our task CLI, without a failure
        # counted), and no attempt counts.
        sessions.give_back_active(ctx, x, env=book.agent_env(x.agent))
        ok, message, attempt = False, x.give_back_reason(), tid in x.failed and x.attempt
    elif status == "open" and asked(x.record):
        ok, message = False, x.record["held"]          # "question: ...", the hold's reason
    elif status == "open" and x.record.get("fail_reason") and \
            (x.record.get("retry_count") or 0) > (claimed_retries or 0):
        ok, message, attempt = False, x.record["fail_reason"], True   # the agent's `task fail`
        prior = claimed_retries                                        # (the record counts it)
    else:
        ok, message = status == "deleted", f"the session left the task {status}"
        if status == "deleted":
            name_deleted(book, tid)
    name_unheld(book)               # the store's first read since this session's agent ran
    stopped = result.interrupted and not ok          # as the single loop: no failure counted
    parked = asked(x.record)                         # docs/questions.md: no failure either
    x.failed = [tid] if attempt else []
    x.completed = [tid] if ok else []
    x.reasons[tid], x.prior = message, prior
    x.counted = outcome.Outcome(how.kind, message, not ok and not stopped and not parked)
    ctx.features.record(x)          # the unattended checks count the attempt (and hold),
                                    # the breaker and budgets count the session
    _remove(book, x.place)
    book.free_agents.append(x.agent)
    book.state.iteration += 1                      # sessions ended, as the loop's k
    entry = {"task": tid, "at": run_state.utc_now(), "agent": x.agent, "n": x.n,
             "branch": x.place.branch, "exit_code": result.returncode,
             **({"outcome": "deleted"} if status == "deleted" else {})}
    (book.state.completed if ok else book.state.failed).append(
        entry if ok else {**entry, "reason": message})
    summary = result.summary
    resume = {"resume_at": hit.reset_at.isoformat()} if hit and hit.reset_at else {}
    ended = ("deleted" if status == "deleted" else "completed" if ok
             else "interrupted" if stopped else "asked" if parked else "failed")
    book.event("session_end", n=x.n, task=tid, exit_code=result.returncode,
               duration_s=round(time.monotonic() - x.clock, 3), outcome=ended,
               reason=message, **{"class": how.kind, "detail": how.detail,
                                  "counts_as_failure": how.counts_as_failure and not stopped
                                  and not parked},
               **resume,
               cost_usd=getattr(summary, "total_cost_usd", None),
               turns=getattr(summary, "num_turns", None),
               **x.fields)                # its CLI's release; the task held, if it was
    book.ended.append(x.pidfile)    # saved with the guards' counts (parallel_loop), then gone
    ctx.say(f"[{tid}] {'done' if ended == 'completed' else ended}: {message}")
    return x.counted, how, hit


def asked(record: dict) -> bool:
    """The task is held by a question a person is to answer (`task ask`)."""
    return str(record.get("held") or "").startswith(question_files.REASON)


__all__ = ["start", "not_started", "finish", "asked", "land_recovered", "merge", "assigned_end",
           "name_deleted", "name_unheld"]

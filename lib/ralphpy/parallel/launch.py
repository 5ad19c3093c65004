"""Owns starting one session of a `--parallel N` run for a task its agent id claimed: the
session is written into the run state before its worktree and agent exist (write-ahead, so a
recovery after a kill -9 finds everything), then its worktree and branch, its prompt, its
environment and its agent in the pool. A session that cannot start fails its task with the
reason. Knows nothing of choosing tasks (scheduler) or of a session's end (session_end)."""
from __future__ import annotations

from pathlib import Path

from ralphpy import workspace
from ralphpy.agents import adapters
from ralphpy.assign import choice, task_files
from ralphpy.errors import RalphError
from ralphpy.fleet import store as fleet_store
from ralphpy.parallel import worktrees
from ralphpy.parallel.book import Book, Session, listed
from ralphpy.parallel.prefix_writer import PrefixWriter
from ralphpy.runs import state as run_state


def start(book: Book, task: dict, template: str | None) -> Session | None:
    """Start the session of `task` (claimed by task["_agent"]); None when it did not start."""
    s, tid, agent = book.s, task["id"], task["_agent"]
    book.state.sessions_started += 1
    n = book.state.sessions_started
    stem = f"{s.stem}-{n:03d}-{worktrees.branch_safe(tid)}"
    # docs/contract/ralph-cli.md s.20.3
    log = workspace.ralph_subdir(Path(s.cwd), "logs") / f"{stem}.jsonl"
    run_dir = book.ralph_dir / "runs" / book.state.run_id
    pidfile = run_dir / f"session-{n:03d}.pid"
    # Write-ahead: the session is in the run state before its worktree or agent exists, and
    # its agent records its pid in `pidfile` before it runs (session.pidfile), so a kill -9
    # of ralph.py at any point leaves nothing unlisted.
    try:
        planned = worktrees.planned(s.cwd, book.state.run_id, tid, s.run_branch, env=s.env)
    except RalphError as err:
        return not_started(book, task, f"cannot create its worktree: {err}")
    book.starting = listed(tid, agent, planned, log, run_state.utc_now(), pidfile, None, n)
    book.save()                     # a state that cannot be written stops the run here
    try:
        wt = worktrees.create(s.cwd, book.state.run_id, tid, s.run_branch, env=s.env)
    except RalphError as err:
        return not_started(book, task, f"cannot create its worktree: {err}")
    if s.prompt:                    # --prompt: the whole prompt, as in the single loop
        prompt = choice.dispatch_prompt(s.prompt, tid)
    else:
        assigned = choice.build_task(task, Path(s.cwd))
        # The block's other way to finish: .ralph/current-task.json of the worktree, the
        # agent's $PWD, marked completed (session_end reads it)
        task_files.write_current_task(workspace.ralph_subdir(wt.path),
                                      task_files.task_fields(assigned), agent=agent,
                                      baseline_status="open", head=task_files.git_head(wt.path))
        block = choice.render_block(assigned, template)
        prompt = choice.session_prompt(block)
        if not s.adapter.prompt_on_stdin and not adapters.prompt_fits(prompt):
            prompts = workspace.ralph_subdir(Path(s.cwd), "prompts")  # as the loop's
            prompt = adapters.spill_prompt("/ralph-build", block, prompts / f"{stem}.md")
    argv = s.adapter.argv(prompt, danger=s.danger, model=s.model)
    frozen = run_dir / f"task-{worktrees.branch_safe(tid)}"
    frozen.write_text(tid + "\n")
    env = {**book.agent_env(agent), **s.adapter.env(danger=s.danger),
           **worktrees.session_env(wt, s.env, Path(s.cwd)),
           "RALPH_AGENT_ID": agent, "RALPH_FROZEN_IDS_FILE": str(frozen)}
    beat = None
    if s.lease_s:                   # a fleet's store: the heartbeat renews its agent's claims
        beat = fleet_store.heartbeat(s.task.executable, agent, s.lease_s, env, wt.path)
    writer = PrefixWriter(s.out, tid)
    s.out.flush()
    failed = book.pool.start(tid, argv, env=env, cwd=wt.path, log_path=log,
                             renderer=s.adapter.new_renderer(writer),
                             stdin=s.adapter.stdin(prompt), pidfile=pidfile, heartbeat=beat,
                             read_stderr=s.adapter.reads_stderr)
    if failed is not None:
        s.warn(f"Error: cannot run '{argv[0]}': {failed.error}")
        worktrees.remove(wt, env=s.env)
        pidfile.unlink(missing_ok=True)
        return not_started(book, task, f"cannot run '{argv[0]}': {failed.error}")
    book.sessions[tid] = Session(task, agent, wt, log, writer, n,
                                 book.starting["startedAt"], pidfile)
    book.starting = None
    s.say(f"[{tid}] started: agent {agent}, branch {wt.branch}")
    book.event("session_start", n=book.state.sessions_started, task=tid,
               agent=s.adapter.name, agent_id=agent, branch=wt.branch, log=str(log))
    book.save()
    return book.sessions[tid]


def not_started(book: Book, task: dict, reason: str) -> None:
    """The task is failed with `reason`, one stderr line and a `not_started` event say so (no
    session_end will); its agent id is free again."""
    book.starting = None
    book.call("fail", task["id"], "--reason", reason, agent=task["_agent"])
    book.free_agents.append(task["_agent"])
    book.state.failed.append({"task": task["id"], "at": run_state.utc_now(), "reason": reason})
    book.s.warn(f"[{task['id']}] not started: {reason}")
    book.event("log", kind="not_started", task=task["id"], message=reason)
    book.save()
    return None


__all__ = ["start", "not_started"]

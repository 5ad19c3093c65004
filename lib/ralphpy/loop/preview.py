"""Owns the dry run's report (`--dry-run`): the run it would start or resume, the task data
(read-only, from a task source too), the prompt and the agent argv, as lines for ralph.py to
print after the banner. Writes nothing: no lock, state, log, agent registration, database
change, .ralph/ or .gitignore."""
from __future__ import annotations

import shlex
from typing import Iterator

from ralphpy.backlog import readonly as backlog_readonly
from ralphpy.loop.context import RunContext
from ralphpy.runlife import lifecycle


def lines(ctx: RunContext) -> Iterator[str]:
    """What this run would do, one printed line (or block) each, read as they are printed."""
    yield ("Dry run: nothing is written (no run lock, run state, log, agent registration "
           "or task change).")
    yield lifecycle.preview(ctx.ralph_dir, ctx.mode, ctx.options.resume)
    argv = ("peek", "-n", "10") if ctx.mode == "build" else ("list", "--all", "--markdown")
    data = ""
    if ctx.task.source:                                         # a source's reads write nothing
        read = ctx.task.call(*argv, env={**ctx.env, "RALPH_SOURCE_READONLY": "1"})
        yield f"Task data (task {' '.join(argv)}, read-only, {ctx.task.source}):"
        yield read.output or "(empty)"
        data = read.output if read.ok else ""
    elif not ctx.task.embedded:
        yield (f"Task data: not read: the task command {ctx.task.command} is not "
                   "ralph.py's own and might write")
    else:
        read = backlog_readonly.call(list(argv), environ=ctx.env, cwd=ctx.cwd)
        server = read.db_path is None and read.where           # a PostgreSQL store
        if read.where and not read.exists:
            yield (f"Task data: none: {read.where} " + ("has no ralph tables yet" if server
                   else "does not exist yet") + " (the first task call creates "
                   + ("them)" if server else "it)"))
        else:
            yield (f"Task data (task {' '.join(argv)}, read-only"
                   + (f", {read.where}):" if server else "):"))
            yield (read.output or "(empty)")
            data = read.output if read.ok else ""
            if ctx.mode == "build" and read.ok and not read.output:
                yield ("No tasks available: the run would stop here without starting "
                           "the agent.")
    if ctx.options.sync:                                        # a fetch would write refs
        t = ctx.sync_target()                                   # as start-up resolved it
        pushes = ", push it after each session that finishes a task" if ctx.mode == "build" else ""
        yield (f"Sync: would fetch {t.shared} and rebase {t.branch} onto it before each "
               f"session{pushes} (nothing fetched now).")
    command = f"/ralph-{ctx.mode}"
    prompt = f"{command} {data}" if data else command
    if ctx.options.assign:                                      # a claim would write
        yield ("Assignment mode: ralph would claim the first claimable task and send "
                   "its anti-drift block instead of this prompt.")
    elif ctx.mode == "build" and ctx.options.prompt:            # --prompt: a claim would write
        yield ("Prompt template: ralph would claim the first claimable task and send "
               f"{ctx.options.prompt} with its id instead of this prompt.")
    yield from ("Prompt:", prompt, "Agent argv:")
    yield shlex.join(ctx.adapter.argv(prompt, danger=ctx.options.danger, model=ctx.model))


__all__ = ["lines"]

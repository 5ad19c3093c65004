"""Owns the night shift's part of a session (docs/night-shift.md): the run's `Shift` built from
its settings (None with none of pace:, agents:, escalate:), and, before each session's agent
starts, the agent the shift chose (the run's, or a fallback agent's adapter) and the model of
its task's attempt (escalate:, resolved through models.json as --model is), said in one
stderr line and a `log` event; and escalate:'s check against each agent's models (models.json)
before the run starts. Knows nothing of the choice itself (unattended.shift) or of
waiting (unattended.night)."""
from __future__ import annotations

from ralphpy.agents import adapters, backend
from ralphpy.backlog import answers
from ralphpy.errors import UsageError
from ralphpy.loop.context import RunContext
from ralphpy.loop.sessions import Session
from ralphpy.unattended import clock, shift


def shift_of(ctx: RunContext) -> shift.Shift | None:
    opts = ctx.options
    cfg = shift.config(ctx.adapter.name, opts.pace, opts.agents, opts.escalate)
    return shift.Shift(cfg, ctx.run.state.extra) if cfg.on else None


def failures(ctx: RunContext, session: Session) -> int:
    """The failed attempts of the session's task so far (its retry_count): the task ralph
    claimed (--parallel: its record), else the one a feature claimed (--assign, --prompt) or
    the first task of the peek the agent is given, asked by id (`task show`: the peek's
    markdown has no retry count, docs/contract/ralph-cli.md s.11)."""
    found = session.record.get("retry_count") if session.record else None
    if found is None:
        rows = answers.parse_markdown_kv(session.prompt.data) if not session.task else []
        tid = session.task or (rows[0].get("id") if rows else None)
        shown = ctx.task.call("show", tid, env=ctx.env) if tid else None
        found = answers.parse_show(shown.output).get("retry_count") if shown and shown.ok \
            else None
    return found if isinstance(found, int) else 0


def prepare(ctx: RunContext, plan: shift.Shift, session: Session) -> None:
    """The session's agent and model, as the shift chose them (escalate: a build session's
    task, by the list of the agent taking it; a plan session runs on --model)."""
    agent = plan.choose(clock.now(ctx.env)).agent
    if agent != ctx.adapter.name:
        session.adapter, session.model = adapters.get_adapter(agent), None
    alias = tries = None
    if plan.cfg.escalate.get(agent) and ctx.mode == "build":    # by the list of the agent
        tries = failures(ctx, session)                          # taking the session
        alias = plan.model(agent, tries)
        session.model = alias if agent != "claude" else backend.resolve_model(
            alias, ctx.backend, backend.models_file(ctx.script_dir))
    shown = alias or (ctx.options.model if agent == ctx.adapter.name else None) or "default"
    session.fields["cli"], session.fields["model"] = agent, shown
    line = f"Session {session.n}: agent {agent}, model {shown}"
    if alias is not None and tries:
        line += f" (escalated: its task failed {tries} time{'s' if tries > 1 else ''})"
    ctx.notice("night_shift", session.tag + line, task=session.task if session.tag else None)


def check_escalate(ctx: RunContext) -> None:
    """escalate:'s models, before anything is written (docs/night-shift.md#escalate): each
    agent's list (a list: the run's agent's) names models.json's models of that agent (for
    claude also its CLI's own aliases or a full claude-... id), and the agent takes a model;
    else UsageError naming the agent and model (exit 1)."""
    opts = ctx.options
    lists = dict(opts.escalate) if isinstance(opts.escalate, dict) else \
        ({ctx.adapter.name: opts.escalate} if opts.escalate else {})
    path = backend.models_file(ctx.script_dir)
    for agent, names in lists.items():
        adapter = ctx.adapter if agent == ctx.adapter.name else adapters.get_adapter(agent)
        if adapter.model_args is None:
            raise UsageError(f"escalate: agent '{agent}' takes no model (drop it from "
                             f"escalate:)")
        known = backend.models_of(agent, path)
        if not known:
            raise UsageError(f"escalate: models.json lists no models of agent '{agent}' (add "
                             f"them with \"agent\": \"{agent}\", or drop it from escalate:)")
        for name in names:
            if name not in known and not (agent == "claude" and name.startswith("claude-")):
                own = ", or a full claude-... id" if agent == "claude" else ""
                raise UsageError(f"escalate: '{name}' is no model of {agent} (models.json's "
                                 f"{agent} models: {', '.join(sorted(known))}{own})")


__all__ = ["shift_of", "failures", "prepare", "check_escalate"]

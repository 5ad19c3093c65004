"""Owns the features that plug into ralph.py's loops, all through one interface (`Feature`): the
unattended-run checks between sessions (`ralph ctl`, SIGHUP, --max-runtime), scope freeze
(FREEZE_SCOPE), the verify gate (--verify, the tamper check), assignment mode (--assign), the
prompt template (--prompt) and git across machines (--sync). `Features` runs them in order, so
each loop has one path whichever are on. Knows nothing of the loop's own order (ralph.py) or of
what a feature does inside (unattended.night, scope, verify, assign.mode, sync.runner)."""
from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from ralphpy import errors
from ralphpy.assign import mode as assign_mode
from ralphpy.assign.choice import dispatch_prompt
from ralphpy.backlog import answers
from ralphpy.config.settings import find_repo_root
from ralphpy.loop.context import RunContext
from ralphpy.unattended.night import Night
from ralphpy.verify import completion

FROZEN_DONE = "All frozen tasks complete. Exiting loop."
F = TypeVar("F", bound="Feature")


@dataclasses.dataclass(frozen=True)
class Prompt:
    data: str  # the text after the skill command (docs/contract/ralph-cli.md s.11)
    task: str | None = None              # the task ralph assigned for this session, if any
    command: str | None = None           # instead of both: the whole prompt (a --prompt template)


class Feature:
    """The one interface; every hook does nothing unless a feature says otherwise."""

    def start(self) -> None:
        """The loop begins."""

    def before_session(self) -> str | None:
        """A line: the run stops there (exit 0). May raise a RalphError (exit 4, 5)."""
        return None

    def prompt(self, prompt: Prompt) -> Prompt | None:
        """What the session is given; None: nothing to run ("No tasks available")."""
        return prompt

    def after_session(self, result: Any) -> list[str]:
        """After the session, before s.15.5's crash safety: the tasks this feature failed."""
        return []

    def fail_reason(self, reason: str) -> str:
        """The reason the session's record gives for its failed tasks."""
        return reason

    def end_lines(self, lines: list[str]) -> list[str]:
        """The lines that end the build loop."""
        return lines

    def end(self) -> None:
        """The loop has ended, not by a signal or an error."""


class Features(Feature):
    """Features in order; each hook runs them all (a stop line or a None prompt ends it)."""

    def __init__(self, *features: Feature | None):
        self.items = [f for f in features if f is not None]

    def get(self, kind: type[F]) -> F | None:
        """The feature of this kind, if it is on."""
        return next((f for f in self.items if isinstance(f, kind)), None)

    def start(self) -> None:
        for feature in self.items:
            feature.start()

    def before_session(self) -> str | None:
        for feature in self.items:
            if (line := feature.before_session()) is not None:
                return line
        return None

    def prompt(self, prompt: Prompt) -> Prompt | None:
        for feature in self.items:
            if (prompt := feature.prompt(prompt)) is None:
                return None
        return prompt

    def after_session(self, result: Any) -> list[str]:
        return [task for feature in self.items for task in feature.after_session(result)]

    def fail_reason(self, reason: str) -> str:
        for feature in self.items:
            reason = feature.fail_reason(reason)
        return reason

    def end_lines(self, lines: list[str]) -> list[str]:
        for feature in self.items:
            lines = feature.end_lines(lines)
        return lines

    def end(self) -> None:
        for feature in self.items:
            feature.end()


class Unattended(Feature):
    """`ralph ctl` pause/stop and SIGHUP between sessions, --max-runtime, log rotation; no
    silent "All tasks complete" while tasks are held (--max-attempts, the respawn guard)."""

    def __init__(self, night: Night):
        self.night = night

    def before_session(self) -> str | None:
        return self.night.between_sessions()

    def end_lines(self, lines: list[str]) -> list[str]:
        return assign_mode.end_line(self.night.held(), lines[0]) + lines[1:]


class ScopeFreeze(Feature):
    """FREEZE_SCOPE: the scope snapshot at run start (a resumed run keeps its own), checked
    before every session; each change named once, STOP_ON_SCOPE_CHANGE stops the run (exit 4).
    A build run ends when every frozen task is done; a plan run goes on."""

    def __init__(self, ctx: RunContext):
        from ralphpy.scope import freeze as scope_run  # only a run with it on pays for it
        opts, self.ctx = ctx.options, ctx
        self.freeze = scope_run.start(ctx.task, ctx.env, ctx.run.ralph_dir, ctx.run.state,
                                      find_repo_root(ctx.cwd),
                                      stop_on_change=opts.stop_on_scope_change,
                                      watch_specs=opts.scope_watch)
        ctx.export("RALPH_FROZEN_IDS_FILE", str(self.freeze.ids_file))   # task calls, agent
        snap = self.freeze.snapshot
        kept = "frozen" if snap.created else f"kept from {snap.frozen_at}"
        ctx.warn(f"Scope {kept}: {len(snap.task_ids)} tasks ({self.freeze.run_dir}/scope.json)")
        for line in snap.warnings:
            ctx.warn(f"Warning: scope: {line}")

    def check(self) -> bool:
        """True when every frozen task is done."""
        from ralphpy.scope import freeze as scope_run
        ctx = self.ctx
        found = scope_run.check(self.freeze, ctx.task, ctx.env)
        if found.report is None:
            ctx.warn("Warning: scope check skipped: the task command could not list the backlog")
        for line in found.new_lines:
            ctx.warn(f"Scope changed: {line}")
        if found.stop:
            raise errors.ScopeChanged(found.report.summary())
        return found.target_done

    def target_met(self) -> bool:
        from ralphpy.scope import freeze as scope_run
        return scope_run.target_met(self.freeze, self.ctx.task, self.ctx.env)

    def before_session(self) -> str | None:
        done = self.check()
        return FROZEN_DONE if done and self.ctx.mode == "build" else None


def scope_freeze(ctx: RunContext) -> ScopeFreeze | None:
    """Scope freeze for this run, or None when off (then no extra task call)."""
    opts = ctx.options                   # CLI > env > ralph.yml; a resume: persisted
    return ScopeFreeze(ctx) if opts.freeze_scope or opts.stop_on_scope_change else None


class Verify(Feature):
    """The verify gate (docs/verify.md): after each session, every task it marked done is
    verified (the verify command, the tamper check of its diff) and reopened or held when it
    fails; stale verifications are run again before the run may end complete; the next
    session's task data says why a verification failed."""

    def __init__(self, gate: completion.Gate):
        self.gate = gate
        self.reason: str | None = None

    def prompt(self, prompt: Prompt) -> Prompt | None:
        self.gate.session_starts()          # the session's diff starts here (after --sync)
        return dataclasses.replace(prompt, data=self.gate.annotate(prompt.data))

    def after_session(self, result: Any) -> list[str]:
        reopened, reason = self.gate.after_session([], "")
        self.reason = reason or None
        return reopened

    def fail_reason(self, reason: str) -> str:
        return self.reason or reason


def verification(ctx: RunContext) -> Verify | None:
    """Build mode's verify gate, from the commit before the first session (with no verify
    setting and no task's own `verify:` line, it judges nothing). None in plan mode."""
    if ctx.mode != "build":
        return None
    return Verify(completion.start(ctx.options, ctx.task, ctx.env, ctx.cwd, ctx.run, ctx.warn))


class Assign(Feature):
    """--assign: ralph claims one task per session and sends its anti-drift block; the
    inbox is imported before each claim; the completion check follows each session."""

    def __init__(self, ctx: RunContext, mode: assign_mode.AssignMode):
        self.ctx, self.mode = ctx, mode

    def _report(self, step: assign_mode.Step) -> assign_mode.Step:
        for kind, message in step.notices:
            self.ctx.notice(kind, message)
        for event in step.events:
            self.ctx.record(**event)
        return step

    def start(self) -> None:
        self.ctx.notice("assign", self.mode.describe())
        if line := assign_mode.prompt_ignored(self.ctx.options):
            self.ctx.notice("flag_ignored", line)

    def before_session(self) -> str | None:
        self._report(self.mode.import_inbox())          # inbox before each claim
        return None

    def prompt(self, prompt: Prompt) -> Prompt | None:
        step = self._report(self.mode.before(self.ctx.agent_id))   # ralph claims, injects
        if step.task is None:                                       # only tasks leased to others
            return None
        return Prompt(step.prompt_data, step.task)

    def after_session(self, result: Any) -> list[str]:  # done: archive, else fail (spawns count)
        step = self._report(self.mode.after(no_attempt=self.ctx.night.no_attempt(result)))
        if step.fail_output:
            self.ctx.say(step.fail_output)              # `failed <id>`, as s.15.5 passes it
        return [step.task] if step.outcome == "failed" else []


def assignment(ctx: RunContext) -> Assign | None:
    """Assignment mode for this run (a resumed run keeps its mode), or None when off."""
    mode = assign_mode.setup(ctx.options, ctx.task, ctx.env, find_repo_root(ctx.cwd),
                             ctx.ralph_dir, lease_s=ctx.options.lease if ctx.fleet() else None)
    return Assign(ctx, mode) if mode is not None else None


class PromptTemplate(Feature):
    """--prompt TEMPLATE, the dispatch of pi-ticketflow's /ralph-loop (`pi "/tf <id> --auto"`):
    ralph claims the next task for the session's agent and the prompt is the template with
    `{id}` replaced by its id. Works over any task command (docs/task-sources.md)."""

    def __init__(self, ctx: RunContext, template: str):
        self.ctx, self.template = ctx, template

    def prompt(self, prompt: Prompt) -> Prompt | None:
        claimed = self.ctx.task.call("claim", "--agent", self.ctx.agent_id, env=self.ctx.env)
        ids = answers.slugs(claimed.output) if claimed.ok else []
        if not ids:                                     # only tasks leased to others
            return None
        return Prompt("", ids[0], command=dispatch_prompt(self.template, ids[0]))


def prompt_template(ctx: RunContext) -> PromptTemplate | None:
    """The prompt template of a build run, or None (off, or --assign: that mode claims)."""
    template = assign_mode.dispatch_template(ctx.options)
    if ctx.mode != "build" or not template:
        return None
    return PromptTemplate(ctx, template)


class Sync(Feature):
    """--sync (docs/fleet.md): fetch and rebase before each session, push after a finished
    task (a race retried; a conflict reopens the task, its commits kept on a branch)."""

    def __init__(self, ctx: RunContext):
        from ralphpy.sync import runner                # only a --sync run pays for it
        self.ctx, self.reason, env, build = ctx, "", ctx.env, ctx.mode == "build"
        self.runner = runner.start(ctx.sync_target(), env, ctx.task.bound(env), ctx.agent_id,
                                   self.report, carry=build, resumed=ctx.run.resumed)

    def report(self, line: str, fields: dict) -> None:
        self.ctx.warn(line)                             # stderr: stdout stays ralph.sh's
        self.ctx.record("sync", message=line, **fields)

    def before_session(self) -> str | None:
        return self.runner.before_session()             # never a stop line

    def after_session(self, result: Any) -> list[str]:
        reopened, self.reason = self.runner.after_session(self.ctx.run.session_since)
        return reopened

    def fail_reason(self, reason: str) -> str:
        return self.reason or reason

    def end(self) -> None:
        self.runner.end()


def sync(ctx: RunContext) -> Sync | None:
    """--sync for this run (checked at start-up: start.check_checkout), or None when off."""
    return Sync(ctx) if ctx.options.sync else None


__all__ = ["Prompt", "Feature", "Features", "Unattended", "ScopeFreeze", "Verify", "Assign",
           "PromptTemplate", "Sync", "scope_freeze", "verification", "assignment",
           "prompt_template", "sync", "FROZEN_DONE"]

"""Owns assignment mode's seat in the build loop: one `AssignMode` per run, built
from the settings before anything is written (a bad template is a usage error), and the calls
the loop makes around each session: `import_inbox` (before `peek`, so fresh inbox tasks are
seen), `before` (claim, task files, spawn record, prompt), `after` (completion check, `fail`,
hold, drift) and `held` (what the end-of-loop line must mention). Each returns what happened
as plain values (notices, an events.jsonl record); loop.features prints and records them.

Knows nothing of the agent process, of printing or of the events file. Every task call goes
through the loop's own task call (`backlog.calls.TaskCommand.bound`), so in-process calls and
`$RALPH_TASK_CMD` behave the same way here as everywhere else in the loop.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ralphpy.assign import choice
from ralphpy.assign import inbox
from ralphpy.assign import assigned_session
from ralphpy.assign import task_files
from ralphpy.backlog.client import TaskCall
from ralphpy.config.options import Options
from ralphpy.assign.respawn_guard import RespawnGuard

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping

    from ralphpy.backlog.calls import TaskCommand

DEFAULT_INBOX = Path(".ralph") / "inbox"
DEFAULT_LEASE = 3600                     # seconds, when sessions have no timeout


@dataclass
class Step:
    """What one call did: notices for stderr (kind, text) and events for events.jsonl."""
    notices: list[tuple[str, str]] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    prompt_data: str = ""                # the text after `/ralph-build ` (the anti-drift block)
    task: str | None = None              # the assigned task's id
    fail_output: str = ""                # `failed <id>`: passed through to stdout
                                         # (docs/contract/ralph-cli.md s.15.5)
    outcome: str = ""                    # after(): completed | failed | released | unknown


@dataclass
class AssignMode:
    task_call: TaskCall
    repo: Path
    ralph_dir: Path
    template: str
    guard: RespawnGuard
    inbox_dir: Path
    lease: int
    ours: bool = False                   # the task CLI is ralph's own: it has `_release`
    current: str | None = None           # the task of the running session

    def describe(self) -> str:
        """The start-of-run notice."""
        return (f"assignment mode: ralph claims one task per session (respawn limit "
                f"{self.guard.limit}, inbox {_shown(self.repo, self.inbox_dir)})")

    def import_inbox(self) -> Step:
        """Seed 002 "Task Sourcing": new inbox files become tasks (each file once)."""
        report = inbox.import_inbox(self.inbox_dir, self.task_call)
        step = Step()
        if report.imported:
            step.notices.append(("inbox", f"inbox: imported {len(report.imported)} task(s): "
                                          + ", ".join(report.imported)))
            step.events.append({"event": "inbox_import", "imported": report.imported})
        step.notices += [("inbox", problem) for problem in report.problems]
        return step

    def before(self, agent: str) -> Step:
        """Claim the next task (an unfinished current-task.json first) and build the prompt.
        `task` stays None when nothing could be claimed."""
        start = assigned_session.start_assigned_session(
            self.task_call, repo=self.repo, ralph_dir=self.ralph_dir, agent=agent,
            guard=self.guard, template=self.template, lease=self.lease)
        step = Step(notices=[("assign", m) for m in start.messages])
        if start.task is None:
            return step
        self.current = step.task = start.task.id
        step.prompt_data = start.prompt[len(choice.SESSION_PREFIX):]
        step.events.append(start.as_event())
        return step

    def after(self, no_attempt: str | None = None) -> Step:
        """The completion check of the session that just ended (before s.15.5's crash
        safety, which then finds nothing left for this task). no_attempt: why the session was
        no attempt at its task (a usage limit), else None: its spawn does not count toward the
        respawn guard's limit, and a task it left active goes back with that reason, with
        ralph's own task CLI without a failure counted (answers.give_back)."""
        task_id, self.current = self.current, None
        step = Step(task=task_id)
        if task_id is None:
            return step
        out = assigned_session.finish_assigned_session(
            self.task_call, task_id, repo=self.repo, ralph_dir=self.ralph_dir, guard=self.guard,
            counted=no_attempt is None, ours=self.ours,
            **({"reason": no_attempt} if no_attempt else {}))
        step.fail_output, step.outcome = out.fail_output, out.outcome
        step.notices += [("assign", m) for m in out.messages if m]
        event = out.as_event()
        if out.archive is not None:
            record = task_files.read_json(out.archive) or {}
            artifacts = record.get("artifacts") or {}
            unrelated = artifacts.get("unrelated") or []
            event.update(commits=len(artifacts.get("commits") or []),
                         unrelated=[c["sha"] for c in unrelated])
            if unrelated:
                listed = "; ".join(f"{c['sha'][:10]} {c['subject']}" for c in unrelated)
                step.notices.append(("drift", f"task {task_id}: {len(unrelated)} commit(s) touch "
                                              f"no file the agent listed (possible drift): {listed}"))
        if out.held:
            step.notices.append(("respawn_guard", f"task {task_id}: held ({out.hold_reason}); "
                                                  f"release it with: ralph task _unhold {task_id}"))
        step.events.append(event)
        return step


def setup(opts: Options, task: TaskCommand, env: Mapping[str, str], repo: Path,
          ralph_dir: Path, lease_s: float | None = None) -> AssignMode | None:
    """The run's AssignMode, or None when assignment mode is off; its task calls are `task`'s
    over `env`. Reads the template now: UsageError (exit 1) before the first write, never
    with a task claimed. lease_s: a fleet's lease, which the session's heartbeat renews
    (docs/fleet.md)."""
    if not opts.assign:
        return None
    template = anti_drift_template(opts, repo)
    timeout = opts.session_timeout or 0
    # The claim's lease outlives the session (its timeout), so no other claimer takes the
    # task over while its agent still works on it; on a fleet's store the heartbeat keeps it.
    lease = int(timeout) + 60 if timeout else DEFAULT_LEASE
    if lease_s is not None:
        lease = max(1, round(lease_s))
    return AssignMode(task_call=task.bound(env), repo=repo, ralph_dir=ralph_dir,
                      template=template, lease=lease, ours=task.embedded,
                      guard=RespawnGuard(ralph_dir / "spawns.json", opts.respawn_limit or 3),
                      inbox_dir=_path(repo, opts.inbox) or repo / DEFAULT_INBOX)


def anti_drift_template(opts: Options, repo: Path) -> str:
    """The template of the anti-drift block: `assign_prompt` (relative to the repository
    root), else the shipped one. UsageError (exit 1) when it cannot be read."""
    return choice.load_template(_path(repo, opts.assign_prompt))


def dispatch_template(opts: Options) -> str | None:
    """The --prompt template a build session is sent, or None: --assign takes precedence
    (docs/task-sources.md)."""
    return None if opts.assign else opts.prompt


def prompt_ignored(opts: Options) -> str | None:
    """The line a run with both --assign and --prompt says once (--prompt is a command-line
    flag only, so the user typed it: dropping it silently would hide the conflict)."""
    if opts.assign and opts.prompt:
        return "--prompt ignored: --assign sends each session its task's anti-drift block"
    return None


def validate(opts: Options, repo: Path) -> None:
    """Read the template when a session will get the anti-drift block (assignment mode, and
    every `--parallel` session unless a --prompt template replaces it): UsageError (exit 1)
    before the first write of the run, not after the run lock is taken."""
    if (opts.assign or opts.parallel > 1) and dispatch_template(opts) is None:
        anti_drift_template(opts, repo)


def _path(repo: Path, value: str | None) -> Path | None:
    """A configured path: relative ones are relative to the repository root (ralph.yml's)."""
    return (repo / value) if value else None


def _shown(repo: Path, path: Path) -> str:
    try:
        return str(path.relative_to(repo))
    except ValueError:
        return str(path)


def end_line(held: list[tuple[str, str]], default: str) -> list[str]:
    """The end-of-loop lines: `default` when nothing is held, else how many tasks are held
    and how to release them (never a silent "All tasks complete")."""
    if not held:
        return [default]
    names = ", ".join(task for task, _ in held)
    return [f"No tasks left to claim, {len(held)} held: {names}. Exiting loop.",
            "Release a held task with: ralph task _unhold <id>"]


__all__ = ["AssignMode", "Step", "setup", "anti_drift_template", "dispatch_template",
           "prompt_ignored", "validate", "end_line"]

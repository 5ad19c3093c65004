"""Owns `RunContext`: what one plan/build run knows while ralph.py's loop runs it (options,
task command, signal guard, environment of every child, the chosen agent, the run on disk,
the unattended-run limits, the features, --sync's shared branch), and the run's voices:
`say` (stdout, ralph.sh's lines), `warn` (stderr) and the stdout stream children write to, all
passed in by ralph.py. Knows nothing of the order of the loop's steps."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TextIO

from ralphpy import signals
from ralphpy import workspace
from ralphpy.agents import adapters
from ralphpy.agents import backend
from ralphpy.backlog import calls as task_calls
from ralphpy.config.options import Options
from ralphpy.runlife import lifecycle
from ralphpy.runs import progress

if TYPE_CHECKING:                        # annotations only: features import this module
    from ralphpy.loop.features import Assign, Features
    from ralphpy.sync.branch import Target
    from ralphpy.unattended.night import NightConfig

Say = Callable[[str], None]


@dataclass
class RunContext:
    mode: str
    options: Options
    task: task_calls.TaskCommand
    guard: signals.Guard
    script_dir: Path
    say: Say                                 # stdout, flushed at once
                                             # (docs/contract/ralph-cli.md s.1 ordering)
    warn: Say                                # stderr
    stdout: TextIO                           # where the agent's rendered output and passed-
                                             # through task output go (flushed, then .buffer)
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))  # every child's env
    cwd: Path = field(default_factory=Path.cwd)
    backend: str = backend.ANTHROPIC
    adapter: adapters.AgentAdapter = field(default_factory=lambda: adapters.get_adapter("claude"))
    model: str | None = None                 # resolved model id (s.7); None without --model
    branch: str = ""
    agent_id: str = ""
    run_stamp: str = field(default_factory=lambda: time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    sessions: int = 0                        # sessions started in this run
    cleaned_up: bool = False
    run: lifecycle.Run | None = None         # lock + state + progress
    limits: NightConfig | None = None        # timeouts, limit waits, breaker, budgets
    assign: Assign | None = None             # assignment mode, set up before session setup
    features: Features | None = None         # what plugs into the loop (loop.features)
    sandbox: Any = None                      # sandbox.backends.Backend; None: --sandbox none
    exit_reason: str = "unexpected error"    # the run's last line, for run_end / ralph status
    ralph_dir: Path = field(init=False)      # run lock, state, progress, ctl sentinels
    _sync_target: Target | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.ralph_dir = workspace.ralph_dir(self.cwd)

    def export(self, name: str, value: str) -> None:
        """s.9: an export reaches every child (explicit env) and ralph.py's own environment."""
        self.env[name] = value
        os.environ[name] = value

    def fleet(self) -> str | None:
        """The fleet's PostgreSQL store this run's own task CLI uses (claims files, heartbeats,
        docs/fleet.md), else None."""
        from ralphpy.fleet import store as fleet_store
        return fleet_store.url(self.env) if self.task.embedded else None

    def sync_target(self) -> Target:
        """--sync's shared branch (sync.branch.resolve: about eight git calls, UsageError when
        the checkout cannot sync), resolved once: by the start-up check when the flags ask
        for --sync, else on first use, when a resumed run's settings turned it on."""
        if self._sync_target is None:
            from ralphpy.sync import branch            # only a --sync run pays for it
            self._sync_target = branch.resolve(self.cwd, self.env)
        return self._sync_target

    def notice(self, kind: str, message: str, task: str | None = None) -> None:
        """A feature's notice: stderr (stdout stays ralph.sh's) and a `log` event (naming the
        task it is about, when given)."""
        self.warn(message)
        self.record("log", kind=kind, message=message, **({"task": task} if task else {}))

    def record(self, event: str, **fields: object) -> None:
        """One line of this run's events.jsonl."""
        if self.run is not None:
            progress.append_event(self.ralph_dir, self.run.state.run_id, event, **fields)


__all__ = ["RunContext", "Say"]

"""Owns `Options`: the settings of one `ralph plan|build` run, typed, one field per row of
the settings table (a test keeps the two in step), with where each value came from. Built by
settings.load; knows nothing of parsing or of acting on a value."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

from ralphpy.config.table import BY_NAME, SETTINGS


@dataclass(frozen=True)
class Options:
    mode: str                            # plan | build
    # loop (docs/contract/ralph-cli.md s.3)
    max_iterations: int                  # the mode default applied; 0: unlimited (build)
    model: str | None                    # the alias as given; resolved by agents.backend
    danger: bool
    completion_promise: str
    # run
    dry_run: bool
    resume: bool
    # task source
    tasks: str                           # sqlite | tk | flowctl | postgresql://...
    lease: float                         # PostgreSQL store: the claims' lease (heartbeat)
    store_connect_timeout: float         # PostgreSQL store: giving up on one never reached
    prompt: str | None                   # --prompt TEMPLATE: ralph claims, {id} is the task
    # scope freeze
    freeze_scope: bool
    stop_on_scope_change: bool
    scope_watch: bool
    # assignment mode, fresh context, respawn safety
    assign: bool
    assign_prompt: str | None
    inbox: str | None
    respawn_limit: int
    continue_session: bool
    respawn_safety: bool
    # unattended runs (durations in seconds; None: no limit)
    session_timeout: float
    idle_timeout: float
    kill_grace: float
    max_attempts: int
    max_idle_sessions: int
    max_consecutive_failures: int
    max_cost: float | None
    max_runtime: float | None
    max_limit_wait: float | None
    limit_wait_margin: float
    limit_default_wait: float
    # agents and parallel sessions
    agent: str
    agent_cmd: str | None
    parallel: int
    merge: str
    worktree_setup: str | None
    worktree_setup_timeout: float
    # git across machines
    sync: bool
    pr: bool
    pr_wait: str
    pr_merge: str
    pr_poll: float
    # notifications (notify.settings reads them from the persisted options)
    notify: str | None
    notify_timeout: float
    # verified completion
    verify: str | None
    verify_timeout: float
    tamper: str
    protect: tuple[str, ...]
    # the night shift (unattended.shift)
    pace: str | None                     # `80%`
    agents: tuple[str, ...]              # fallback agents, after --agent
    escalate: tuple[str, ...] | dict[str, tuple[str, ...]]   # model aliases, one attempt
                                         # after another: the run agent's, or per agent
    sandbox: str
    sandbox_image: str | None
    # name -> "cli", "env", "ralph.yml" or "default"
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def source(self, name: str) -> str:
        return self.sources.get(name, "default")

    def explicit(self) -> dict[str, Any]:
        """The values not left at their default."""
        return {s.name: getattr(self, s.name) for s in SETTINGS if self.source(s.name) != "default"}

    def persisted(self) -> dict[str, Any]:
        """What a run keeps in its state (a resumed run's values win over new flags)."""
        return {k: v for k, v in self.explicit().items() if BY_NAME[k].persist}

    def with_values(self, values: Mapping[str, Any]) -> "Options":
        """These options with `values` (a resumed run's persisted options) applied; names
        that are not settings (a state written by another version) are ignored."""
        known = {k: v for k, v in values.items() if k in BY_NAME}
        return dataclasses.replace(self, **known)


__all__ = ["Options"]

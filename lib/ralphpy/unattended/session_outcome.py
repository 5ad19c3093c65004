"""Owns how a finished session is judged by both loops (the single loop's night and
`--parallel`'s sessions): its class, from its usage limit (usage_limits), a root refusal, the
CLI's own refusal its adapter reads (agents/refusal.py: no credit ranks as a disabled account,
a login it cannot get past as an auth failure) and outcome.classify's precedence, and the
error that ends the run after it when waiting or another session cannot help (a disabled
account, a rejected key, root refused: exit 7, 9, 10), and the reason its task goes back with
when the session left it active. Knows nothing of what the loops do next otherwise (night,
guards)."""
from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from typing import Any, Mapping

from ralphpy.agents import adapters, refusal
from ralphpy.backlog.answers import FAIL_REASON
from ralphpy.errors import AuthFailed, RalphError, RootRefused, UsageDisabled
from ralphpy.unattended import outcome, usage_limits

_KINDS = {refusal.AUTH: outcome.AUTH_FAILURE, refusal.NO_CREDIT: outcome.USAGE_DISABLED}


def classify_session(result: Any, *, danger: bool, agent: str, env: Mapping[str, str],
                     session_s: float | None, idle_s: float | None,
                     default_wait_s: float | None = None) -> tuple[outcome.Outcome, Any]:
    """How a finished session (a session result: returncode, summary, timed_out, idle_out)
    ended, and the usage limit it hit (usage_limits.LimitHit or None): the one classification
    of the single loop and of `--parallel` sessions. default_wait_s: a limit's wait when its
    reset time is unknown (None: usage_limits' own)."""
    summary = result.summary
    wait = {} if default_wait_s is None else {"default_wait": timedelta(seconds=default_wait_s)}
    hit = usage_limits.detect(summary, "", datetime.now(timezone.utc), **wait)
    refused = outcome.root_refusal(result.returncode, summary, danger=danger, agent=agent,
                                   env=env, euid=os.geteuid())
    said = adapters.refusal(agent, getattr(result, "stderr_tail", ""), summary)
    said_as = None if said is None else (_KINDS[said.kind], said.detail)
    return outcome.classify(result.returncode, summary, timed_out=result.timed_out,
                            idle_out=result.idle_out, limit_hit=hit, session_timeout_s=session_s,
                            idle_timeout_s=idle_s, root_refused=refused,
                            agent_refusal=said_as), hit


def fail_reason(out: outcome.Outcome) -> str:
    """The reason a task the session that ended as `out` left active goes back with:
    docs/contract/ralph-cli.md s.15.5's, or the class's detail when that names a timeout or why the
    session was no attempt at its task (outcome.NOT_AN_ATTEMPT: the usage limit and its reset time),
    which `show` then says."""
    named = (*outcome.NOT_AN_ATTEMPT, outcome.TIMEOUT, outcome.IDLE)
    return out.detail if out.kind in named else FAIL_REASON


def stop_error(out: outcome.Outcome, agent: str) -> RalphError | None:
    """The error that ends the run after a session of `agent` (the CLI) that ended this way
    (exit 7, 9 or 10): waiting or another session cannot help; a person must act. None: the
    run goes on."""
    if out.kind == outcome.USAGE_DISABLED:
        return UsageDisabled(out.detail)
    if out.kind == outcome.AUTH_FAILURE:
        return AuthFailed(f"{out.detail}; log in again {adapters.login_hint(agent)}, then "
                          "start the run again")
    if out.kind == outcome.ROOT_REFUSED:
        return RootRefused(f"{out.detail}; in a container or VM you trust, set IS_SANDBOX=1 "
                           "(IS_SANDBOX=1 ralph build --danger), else run ralph as a user "
                           "other than root")
    return None


__all__ = ["classify_session", "fail_reason", "stop_error"]

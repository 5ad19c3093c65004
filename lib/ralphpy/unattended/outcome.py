"""Owns how a finished session is judged, once, for both loops (the one session lifecycle,
loop/sessions.py): its class, one kind per session picked by a fixed precedence from its exit,
its usage limit (usage_limits), a root refusal and the CLI's own refusal its adapter reads
(agents/refusal.py: no credit ranks as a disabled account, a login it cannot get past as an
auth failure), with a one-line detail for events.jsonl and progress.md and whether it counts as
a failed attempt; the error that ends the run after it when waiting or another session cannot
help (a disabled account, a rejected key, root refused: exit 7, 9, 10); and the reason its task
goes back with when the session left it active. Knows nothing of how the session ran
(session), of limit wording (usage_limits) or of what the loop does next (night, guards)."""
from __future__ import annotations

import os
import re
import signal
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Mapping

from ralphpy.agents import adapters, refusal
from ralphpy.backlog.answers import FAIL_REASON
from ralphpy.errors import AuthFailed, RalphError, RootRefused, UsageDisabled
from ralphpy.unattended import usage_limits

SUCCESS = "success"
AGENT_ERROR = "agent_error"
TIMEOUT = "timeout"
IDLE = "idle"
KILLED_BY_SIGNAL = "killed_by_signal"
USAGE_LIMIT = "usage_limit"
USAGE_DISABLED = "usage_disabled"
AUTH_FAILURE = "auth_failure"
ROOT_REFUSED = "root_refused"
PERMISSION_DENIALS = "permission_denials"

# Highest first. Why this order: a limit or a disabled account explains whatever followed
# (a hang, a kill); a refusal to start explains the exit; a login the CLI was retrying explains
# the SIGTERM ralph sent to stop it; our own timeouts explain the signal that ended the agent;
# a kill explains a missing result; auth failures and denials are more specific than a bare
# non-zero exit.
PRECEDENCE = (USAGE_DISABLED, USAGE_LIMIT, ROOT_REFUSED, TIMEOUT, IDLE, KILLED_BY_SIGNAL,
              AUTH_FAILURE, PERMISSION_DENIALS, AGENT_ERROR, SUCCESS)
# A usage limit is waited out, not held against the task ("Waits do not count as failures");
# a disabled account and a refusal to run as root end the run and are no task's fault;
# success is success. A failed login also ends the run (night), and stays a failed session.
_NOT_FAILURES = {SUCCESS, USAGE_LIMIT, USAGE_DISABLED, ROOT_REFUSED}
# Sessions that ended this way count no attempt at their task (--max-attempts): waits, and
# stops of the whole run, are no task's fault.
NOT_AN_ATTEMPT = frozenset({USAGE_LIMIT, USAGE_DISABLED, AUTH_FAILURE, ROOT_REFUSED})
# What the real `claude` 2.1 prints on stderr (and nothing on stdout, exit 1) when it is given
# --dangerously-skip-permissions as root without IS_SANDBOX=1 (exactly "1": "yes" or "true"
# are refused too).
ROOT_REFUSAL_TEXT = ("--dangerously-skip-permissions cannot be used with root/sudo privileges "
                     "for security reasons")

# Claude Code's authentication errors (wordings from public issue threads, 1.0-2.1):
# "Invalid API key · Please run /login", "Missing API key · Run /login", "Failed to
# authenticate. API Error: 401 {...authentication_error...OAuth token has expired...}";
# codex's failed turn on a refused key (0.169): "unexpected status 401 Unauthorized: ...";
# gemini's (0.61): '[API Error: {"error":{"code":400,"message":"API key not valid. ...'.
_AUTH_RE = re.compile(
    r"^\s*(?:⎿\s*)?(?:Error:\s*)?(?:invalid api key|missing api key|failed to authenticate"
    r"|oauth token has expired|invalid authentication credentials|not logged in"
    r"|please run /login|api error:\s*401|unexpected status 401\b)"
    r"|^\s*\[api error:.*(?:api key not valid|\bapi_key_invalid\b|\"code\":\s*401\b)"
    r"|^\s*(?:⎿\s*)?api error.*\bauthentication_error\b",
    re.I | re.M)


@dataclass(frozen=True)
class Outcome:
    kind: str
    detail: str
    counts_as_failure: bool

    def to_dict(self) -> dict[str, Any]:
        return {"outcome": self.kind, "detail": self.detail,
                "counts_as_failure": self.counts_as_failure}


def _field(source: Any, name: str, default: Any = None) -> Any:
    if source is None:
        return default
    if isinstance(source, dict):
        return source.get(name, default)
    return getattr(source, name, default)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _auth_line(summary: Any, stderr_tail: str) -> str | None:
    for text in (_field(summary, "result_text"), _field(summary, "last_assistant_text"),
                 stderr_tail):
        if isinstance(text, str) and text:
            found = _AUTH_RE.search(text)
            if found:
                start = text.rfind("\n", 0, found.start()) + 1
                end = text.find("\n", found.end())
                return text[start:end if end >= 0 else None].strip()[:200]
    return None


def _denials(summary: Any) -> str | None:
    denials = _field(summary, "permission_denials") or []
    if not isinstance(denials, list) or not denials:
        return None
    tools = []
    for item in denials:
        name = item.get("tool_name") if isinstance(item, dict) else None
        if name and name not in tools:
            tools.append(str(name))
    what = ", ".join(tools) if tools else "unknown tools"
    return f"{len(denials)} permission denial(s) for {what}"


def root_refusal(returncode: int | None, summary: Any, *, danger: bool, agent: str,
                 env: Mapping[str, str], euid: int) -> str | None:
    """The detail of a `claude` that refused --danger because it runs as root, else None.

    The CLI says so on stderr, which ralph does not read (docs/contract/ralph-cli.md s.11:
    inherited), so the refusal is recognised by its circumstances: claude with --danger, euid 0,
    IS_SANDBOX not set, a non-zero exit with nothing at all on stdout (not even stream-json's init
    event)."""
    if not danger or agent != "claude" or euid != 0 or returncode in (None, 0) or returncode < 0:
        return None
    if env.get("IS_SANDBOX") == "1":
        return None
    seen = _field(summary, "events_seen") or {}
    if summary is None or seen.get("lines", 0):
        return None
    return f'claude refused to start as root: "{ROOT_REFUSAL_TEXT}"'


def _make(kind: str, detail: str) -> Outcome:
    return Outcome(kind, detail, kind not in _NOT_FAILURES)


def classify(returncode: int | None, summary: Any, *, timed_out: bool = False,
             idle_out: bool = False, limit_hit: Any = None, stderr_tail: str = "",
             session_timeout_s: float | None = None,
             idle_timeout_s: float | None = None, root_refused: str | None = None,
             agent_refusal: tuple[str, str] | None = None,
             reports_result: bool = True) -> Outcome:
    """The Outcome of a finished session, by PRECEDENCE.

    returncode is Popen's (negative: killed by that signal; 137 = 128+SIGKILL from a shell
    wrapper also counts as killed). summary is a render.SessionSummary or a dict with its
    fields (None when nothing was rendered). limit_hit is a usage_limits.LimitHit or None.
    A session with exit 0 counts as an agent error when its result event says is_error or
    when there was no result event at all (a real `claude -p` always ends with one).
    root_refused: root_refusal()'s detail. An api_retry that failed authentication
    (summary.auth_error) is an auth failure whatever ended the agent. agent_refusal: (kind,
    detail) of a refusal the CLI's adapter read in its output, USAGE_DISABLED (no credit) or
    AUTH_FAILURE, each ranked as its kind. reports_result: False for an agent that has no
    result event to emit (the `command` backend's plain output): its exit 0 is a success,
    judged like any session by what it did to the backlog."""
    if limit_hit is not None and getattr(limit_hit, "kind", None) == "disabled":
        return _make(USAGE_DISABLED, f"usage disabled: {limit_hit.message}")
    if agent_refusal is not None and agent_refusal[0] == USAGE_DISABLED:
        return _make(*agent_refusal)
    if limit_hit is not None:
        when = limit_hit.reset_at.isoformat() if limit_hit.reset_at else "unknown"
        return _make(USAGE_LIMIT, f"usage limit: {limit_hit.message} (resume at {when})")
    if root_refused:
        return _make(ROOT_REFUSED, root_refused)
    retrying = _field(summary, "auth_error")
    if isinstance(retrying, str) and retrying:
        return _make(AUTH_FAILURE, f"authentication failed: {retrying}")
    if agent_refusal is not None:
        return _make(*agent_refusal)
    if timed_out:
        limit = f" of {session_timeout_s:g}s" if session_timeout_s else ""
        return _make(TIMEOUT, f"session timeout{limit} reached; agent terminated")
    if idle_out:
        limit = f" for {idle_timeout_s:g}s" if idle_timeout_s else ""
        return _make(IDLE, f"no agent output{limit}; agent terminated")
    if returncode is not None and (returncode < 0 or returncode == 128 + signal.SIGKILL):
        number = -returncode if returncode < 0 else signal.SIGKILL
        hint = " (out of memory?)" if number == signal.SIGKILL else ""
        return _make(KILLED_BY_SIGNAL, f"agent killed by {_signal_name(number)}{hint}")
    auth = _auth_line(summary, stderr_tail)
    if auth:
        return _make(AUTH_FAILURE, f"authentication failed: {auth}")
    denials = _denials(summary)
    if denials:
        return _make(PERMISSION_DENIALS, denials)
    if returncode:
        return _make(AGENT_ERROR, f"agent exited with status {returncode}")
    subtype = _field(summary, "result_subtype")
    if _field(summary, "is_error") is True or (isinstance(subtype, str)
                                               and subtype.startswith("error")):
        return _make(AGENT_ERROR, f"agent reported an error (result {subtype or 'is_error'})")
    if summary is not None and subtype is None and reports_result:
        return _make(AGENT_ERROR, "agent exited without a result event")
    return _make(SUCCESS, f"result {subtype}" if subtype else "exit 0")


_KINDS = {refusal.AUTH: AUTH_FAILURE, refusal.NO_CREDIT: USAGE_DISABLED}


def classify_session(result: Any, *, danger: bool, agent: str, env: Mapping[str, str],
                     session_s: float | None, idle_s: float | None,
                     default_wait_s: float | None = None) -> tuple[Outcome, Any]:
    """How a finished session (a session result: returncode, summary, timed_out, idle_out)
    ended, and the usage limit it hit (usage_limits.LimitHit or None): the one classification
    of the single loop and of `--parallel` sessions. default_wait_s: a limit's wait when its
    reset time is unknown (None: usage_limits' own)."""
    summary = result.summary
    wait = {} if default_wait_s is None else {"default_wait": timedelta(seconds=default_wait_s)}
    hit = usage_limits.detect(summary, "", datetime.now(timezone.utc), **wait)
    refused = root_refusal(result.returncode, summary, danger=danger, agent=agent, env=env,
                           euid=os.geteuid())
    said = adapters.refusal(agent, getattr(result, "stderr_tail", ""), summary)
    said_as = None if said is None else (_KINDS[said.kind], said.detail)
    return classify(result.returncode, summary, timed_out=result.timed_out,
                    idle_out=result.idle_out, limit_hit=hit, session_timeout_s=session_s,
                    idle_timeout_s=idle_s, root_refused=refused, agent_refusal=said_as,
                    reports_result=adapters.reports_result(agent)), hit


def fail_reason(out: Outcome) -> str:
    """The reason a task the session that ended as `out` left active goes back with: s.15.5's,
    or the class's detail when that names a timeout or why the session was no attempt at its
    task (NOT_AN_ATTEMPT: the usage limit and its reset time), which `show` then says."""
    named = (*NOT_AN_ATTEMPT, TIMEOUT, IDLE)
    return out.detail if out.kind in named else FAIL_REASON


def stop_error(out: Outcome, agent: str) -> RalphError | None:
    """The error that ends the run after a session of `agent` (the CLI) that ended this way
    (exit 7, 9 or 10): waiting or another session cannot help; a person must act. None: the
    run goes on."""
    if out.kind == USAGE_DISABLED:
        return UsageDisabled(out.detail)
    if out.kind == AUTH_FAILURE:
        return AuthFailed(f"{out.detail}; log in again {adapters.login_hint(agent)}, then "
                          "start the run again")
    if out.kind == ROOT_REFUSED:
        return RootRefused(f"{out.detail}; in a container or VM you trust, set IS_SANDBOX=1 "
                           "(IS_SANDBOX=1 ralph build --danger), else run ralph as a user "
                           "other than root")
    return None


__all__ = ["Outcome", "classify", "classify_session", "fail_reason", "stop_error", "root_refusal",
           "PRECEDENCE", "ROOT_REFUSAL_TEXT"]

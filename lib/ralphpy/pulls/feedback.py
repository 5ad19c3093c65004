"""Owns reading a pull request's verdict from GitHub: its state (merged, closed), its check runs
on the head commit (pending, success, or the failed ones with the tail of their log: a GitHub
Actions job's own log, else the check run's output) and the reviews that ask for changes (their
text and line comments). The feedback is text from CI and from people: the caller quotes it as
data, never as instructions."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ralphpy.github.client import Client, GitHubError

FAILED = ("failure", "timed_out", "cancelled", "action_required", "startup_failure")
LOG_TAIL_LINES = 40
LOG_TAIL_CHARS = 4000
ACTIONS_APP = "github-actions"      # its check run's id is the id of the job that ran it
# A job log's lines start with their time (2026-01-01T00:00:00.1234567Z): noise in a prompt.
_STAMP = re.compile(r"(?m)^\ufeff?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ")


@dataclass
class Verdict:
    state: str                          # open, merged, closed
    head: str
    checks: str                         # pending, success, failure, none
    feedback: str = ""                  # failed checks' names and log tails, or review text
    review_ids: tuple[int, ...] = ()    # the reviews the feedback came from
    merge_commit: str = ""


def tail(text: str) -> str:
    lines = (text or "").rstrip().splitlines()[-LOG_TAIL_LINES:]
    return "\n".join(lines)[-LOG_TAIL_CHARS:]


def _failing_part(log: str) -> str:
    """A job's log up to its last `##[error]` line: the post-job clean-up steps after it
    would fill the tail."""
    end = log.find("\n", log.rfind("##[error]")) if "##[error]" in log else -1
    return log if end < 0 else log[:end]


def check_log(client: Client, run: dict) -> str:
    """The tail of a failed check's log. A GitHub Actions job's own log (`GET
    /actions/jobs/{id}/logs`, a redirect to its download) when it can be read; else, and for
    other apps' check runs, the check run's output text (or summary), after one line saying
    so. Job logs expire (403, 404 or 410 then): the output is what is left."""
    output = run.get("output") or {}
    text = tail(output.get("text") or output.get("summary") or "")
    app = run.get("app") or {}
    if app.get("slug") != ACTIONS_APP:
        made_by = f"made by {app['name']}, " if app.get("name") else ""
        return f"(the check run's output: {made_by}not a GitHub Actions job)\n{text}".rstrip()
    try:
        status, log = client.download(f"{client.repo_path}/actions/jobs/{run.get('id')}/logs",
                                      ok=(403, 404, 410))
        reason = "" if status == 200 else f"GitHub answered {status}, expired or not allowed"
    except GitHubError as err:
        reason = str(err)
    if not reason:
        return tail(_failing_part(_STAMP.sub("", log)))
    return (f"(the job's log cannot be read ({reason}): the check run's output instead)\n"
            + text).rstrip()


def required_checks(client: Client, base: str) -> set[str] | None:
    """The check names the base branch's protection requires; None when it requires none
    that ralph can read (no protection, or the token may not read it): then every check run
    counts."""
    status, _, found = client.rest(
        "GET", f"{client.repo_path}/branches/{base}/protection/required_status_checks",
        ok=(403, 404))
    if status != 200 or not isinstance(found, dict):
        return None
    names = {c.get("context") for c in found.get("checks") or [] if c.get("context")}
    names |= set(found.get("contexts") or [])
    return names or None


def read(client: Client, number: int, seen_reviews: list[int], wait_checks: bool,
         required: set[str] | None = None) -> Verdict:
    _, _, pr = client.rest("GET", f"{client.repo_path}/pulls/{number}")
    pr = pr or {}
    state = "merged" if pr.get("merged") or pr.get("merged_at") else pr.get("state", "open")
    head = (pr.get("head") or {}).get("sha", "")
    if state != "open":
        return Verdict(state, head, "none", merge_commit=pr.get("merge_commit_sha") or "")
    checks, text = "success", []
    if wait_checks:
        _, _, found = client.rest("GET", f"{client.repo_path}/commits/{head}/check-runs",
                                  params={"per_page": 100})
        runs = (found or {}).get("check_runs") or []
        if required is not None:              # only what the branch's protection requires
            runs = [r for r in runs if r.get("name") in required]
            if {r.get("name") for r in runs} != required:
                runs.append({"status": "queued"})          # a required check not started yet
        failed = [r for r in runs if r.get("conclusion") in FAILED]
        if failed:
            checks = "failure"
            for run in failed:
                log = check_log(client, run)
                text.append(f"check {run.get('name')} {run.get('conclusion')}"
                            + (f":\n{log}" if log else ""))
        elif not runs or any(r.get("status") != "completed" for r in runs):
            checks = "pending"
    _, _, reviews = client.rest("GET", f"{client.repo_path}/pulls/{number}/reviews")
    asking = [r for r in reviews or [] if r.get("state") == "CHANGES_REQUESTED"
              and r.get("id") not in seen_reviews]
    if asking and not text:
        _, _, comments = client.rest("GET", f"{client.repo_path}/pulls/{number}/comments")
        for review in asking:
            who = (review.get("user") or {}).get("login", "a reviewer")
            text.append(f"review by {who} requests changes:\n{review.get('body') or ''}".rstrip())
        for comment in comments or []:
            where = f"{comment.get('path')}:{comment.get('line')}"
            text.append(f"comment on {where}: {comment.get('body') or ''}")
    return Verdict(state, head, checks, "\n\n".join(text),
                   tuple(r.get("id") for r in asking) if not checks == "failure" else ())


__all__ = ["Verdict", "read", "tail", "check_log", "FAILED", "ACTIONS_APP"]

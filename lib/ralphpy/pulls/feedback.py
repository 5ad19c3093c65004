"""Owns reading a pull request's verdict from GitHub: its state (merged, closed), its check runs
on the head commit (pending, success, or the failed ones with the tail of their log) and the
reviews that ask for changes (their text and line comments). The feedback is text from CI and
from people: the caller quotes it as data, never as instructions."""
from __future__ import annotations

from dataclasses import dataclass

from ralphpy.github.client import Client

FAILED = ("failure", "timed_out", "cancelled", "action_required", "startup_failure")
LOG_TAIL_LINES = 40
LOG_TAIL_CHARS = 4000


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
                output = run.get("output") or {}
                log = tail(output.get("text") or output.get("summary") or "")
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


__all__ = ["Verdict", "read", "tail", "FAILED"]

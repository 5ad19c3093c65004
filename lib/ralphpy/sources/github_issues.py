"""Owns the GitHub source (docs/github.md): the open issues of a repository that carry the
backlog's label are its tasks (never pull requests), cached under .ralph/sources/github/ and
kept up to date by one ETag-revalidated request for what changed since (_issues); priority and `component:` from labels, dependencies from
"blocked by #N" / "depends on #N" lines and open task-list items (`- [ ] #N`). A claim creates
the issue's claim ref (one machine wins it, github/claim_ref.py), then labels the issue
`ralph:active` and assigns the token's user; done comments with the result and closes it; a
failure comments why and takes label and assignee off; both delete the claim ref last.
Does not own leases or the contract (contract_cmds.py), nor the requests (ralphpy.github.client)."""
from __future__ import annotations

import contextlib
import importlib.util
import json
import re
from pathlib import Path
from typing import Mapping
from urllib.parse import quote

from ralphpy import atomic_file
from ralphpy.github import claim_ref
from ralphpy.github import client as api
from ralphpy.github import target as targets
from ralphpy.sources import base
from ralphpy.sources.base import ACTIVE, DONE, HELD, OPEN, Listing, Task

NAME = "github"
MARKER = None                       # the backlog is not in the repository
INSTALL = api.INSTALL
ACTIVE_LABEL = "ralph:active"
HELD_LABEL = "ralph:held"           # a person's word is needed
DONE_LABEL = "ralph:done"           # --pr: done, the issue closed by its pull request's merge
DONE_NOTE = "ralph: done: "
FAIL_NOTE = "ralph: failed: "
REOPEN_NOTE = "ralph: reopened: "
HOLD_NOTE = "ralph: held: "
# An issue body is a person's (or anyone's) text: past this it is cut, with a note saying so,
# so one huge body cannot fill every prompt the peek goes into.
BODY_MAX = 20_000
_DEP = re.compile(r"(?im)^\s*(?:[-*]\s*)?(?:blocked by|depends on)\s*:?\s*((?:#\d+[\s,]*(?:and\s+)?)+)")
_TASK_ITEM = re.compile(r"(?m)^\s*[-*]\s+\[ \]\s+#(\d+)\b")
_EPOCH = "1970-01-01T00:00:00Z"
_PRIORITY = re.compile(r"^(?:priority:\s*|p)([0-4])$", re.I)


def _keep(issue: dict) -> dict:
    """What the cache keeps of an issue: the fields a task is made of."""
    return {"number": issue.get("number"), "title": issue.get("title") or "",
            "body": issue.get("body") or "", "state": issue.get("state"),
            "labels": [label.get("name", "") if isinstance(label, dict) else str(label)
                       for label in issue.get("labels") or []],
            "assignees": [a.get("login") for a in issue.get("assignees") or []
                          if isinstance(a, dict)],
            "created_at": issue.get("created_at"), "updated_at": issue.get("updated_at"),
            "html_url": issue.get("html_url"),
            "pull_request": bool(issue.get("pull_request"))}


def dependencies(body: str) -> list[str]:
    found = [n for group in _DEP.findall(body) for n in re.findall(r"#(\d+)", group)]
    found += _TASK_ITEM.findall(body)
    return list(dict.fromkeys(found))


def task_from(issue: dict, failures: Mapping[str, dict], results: Mapping[str, str] = {}) -> Task:
    number = str(issue["number"])
    labels = issue["labels"]
    status = (DONE if DONE_LABEL in labels else ACTIVE if ACTIVE_LABEL in labels
              else HELD if HELD_LABEL in labels else OPEN)
    priority = next((int(m.group(1)) for m in map(_PRIORITY.match, labels) if m), 2)
    body = issue["body"].replace("\r\n", "\n").strip()
    if len(body) > BODY_MAX:
        body = body[:BODY_MAX] + f"\n[... {len(body) - BODY_MAX} more characters of the issue]"
    failed = failures.get(number, {})
    return Task(id=number, title=issue["title"] or f"#{number}", status=status,
                tool_status={ACTIVE: "in_progress", HELD: "held", DONE: "done"}.get(status, "open"),
                priority=priority, deps=dependencies(body),
                tags=[label for label in labels if label.startswith("component:")],
                category=next((label[5:] for label in labels if label.startswith("type:")), None),
                description=body or None, fail_reason=failed.get("reason"),
                retry_count=int(failed.get("count", 0)), created=issue.get("created_at"),
                extra={"ref": issue.get("html_url"), "assignee": (issue["assignees"] or [None])[0],
                       "result": results.get(number) if status == DONE else None})


class GitHubSource:
    name = NAME

    def __init__(self, environ: Mapping[str, str], cwd: Path):
        self.environ = environ
        self.target = targets.parse(environ.get("RALPH_TASKS") or NAME, environ, cwd)
        self.root = base.find_root(".git", environ, cwd)
        self.tool = importlib.util.find_spec("github") is not None or None
        self.dir = Path(self.root) / ".ralph" / "sources" / NAME
        self.readonly = bool(environ.get("RALPH_SOURCE_READONLY"))
        self.calls = 0
        self._client: api.Client | None = None
        self._login: str | None = None

    @property
    def client(self) -> api.Client:
        if self._client is None:
            self._client = api.Client(self.target, self.environ)
        return self._client

    def _cache(self, name: str) -> Path | None:
        if self.readonly:
            return None
        return self.dir / f"{self.target.owner}+{self.target.repo}" / name

    @property
    def _claims(self) -> Path | None:
        """This clone's notes of the claim refs it holds (claim_ref.py)."""
        return self._cache("claims")

    def _issue(self, number: str) -> str:
        return f"{self.client.repo_path}/issues/{number}"

    def _failures(self, name: str = "failures.json") -> dict:
        """ralph's notes beside the issues: failures (reason, count), results of done tasks."""
        path = self.dir / name
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def _issues(self) -> list[dict]:
        """The open labelled issues. The first read lists them all (a page per hundred);
        after it, one request asks what changed since the newest change seen (`since`, any
        label, open or closed, so a closed or unlabelled issue leaves the cache), sent with
        its ETag: when nothing changed, a peek costs one 304 at any size of backlog."""
        path = f"{self.client.repo_path}/issues"
        cache_file = self._cache("issues.json")
        try:
            cached = json.loads(cache_file.read_text(encoding="utf-8")) if cache_file else {}
        except (OSError, ValueError):
            cached = {}
        if cached.get("label") != self.target.label or not cached.get("since"):
            items = self.client.pages(path, {"state": "open", "labels": self.target.label},
                                      keep=_keep)
            issues = {str(i["number"]): i for i in items}
            since = max((i["updated_at"] or "" for i in items), default="") or _EPOCH
            etag = None
        else:
            issues, since, etag = cached["issues"], cached["since"], cached.get("etag")
            # Newest first: any change lands on the first page and changes its ETag.
            params = {"state": "all", "since": since, "sort": "updated", "direction": "desc",
                      "per_page": 100}
            status, first, data = self.client.rest("GET", path, params=params, etag=etag)
            if status == 304:
                return list(issues.values())
            changed, headers = [_keep(i) for i in data or []], first
            while 'rel="next"' in headers.get("link", ""):      # a burst of changes
                params["page"] = params.get("page", 1) + 1
                _, headers, more = self.client.rest("GET", path, params=params)
                changed += [_keep(i) for i in more or []]
            changed.reverse()                                    # oldest first, newest last
            for issue in changed:
                number = str(issue["number"])
                if issue["state"] == "open" and self.target.label in issue["labels"]:
                    issues[number] = issue
                else:
                    issues.pop(number, None)
            newest = max((i["updated_at"] or "" for i in changed), default=since)
            etag = first.get("etag") if newest == since else None     # the same query again
            since = max(since, newest)
        if cache_file is not None:
            atomic_file.write_atomic(cache_file, json.dumps(
                {"label": self.target.label, "since": since, "etag": etag,
                 "issues": issues}).encode())
        return list(issues.values())

    def load(self) -> Listing:
        before = self.client.requests
        items = self._issues()
        failures, results = self._failures(), self._failures("results.json")
        tasks = {}
        for issue in items:
            if not issue["pull_request"] and issue["state"] == "open":
                task = task_from(issue, failures, results)
                tasks[task.id] = task
        self._drop_closed_deps(tasks)
        self.calls += self.client.requests - before
        ordered = sorted(tasks.values(), key=lambda t: (t.priority, int(t.id)))
        return Listing({t.id: t for t in ordered})

    def _drop_closed_deps(self, tasks: dict[str, Task]) -> None:
        """A dependency outside the listing is done when its issue is closed; an open issue
        without the label, or one that does not exist, keeps blocking (as tk's `ready`)."""
        outside = sorted({d for t in tasks.values() for d in t.deps if d not in tasks}, key=int)
        if not outside:
            return
        cache_file = self._cache("dependencies.json")
        try:
            cached = json.loads(cache_file.read_text(encoding="utf-8")) if cache_file else {}
        except (OSError, ValueError):
            cached = {}
        closed = set()
        for number in outside:
            old = cached.get(number, {})
            status, headers, data = self.client.rest("GET", self._issue(number),
                                                     etag=old.get("etag"), ok=(404, 410))
            if status == 200 and isinstance(data, dict):
                cached[number] = old = {"etag": headers.get("etag"), "state": data.get("state")}
            if old.get("state") == "closed":
                closed.add(number)
        if cache_file is not None:
            atomic_file.write_atomic(cache_file, json.dumps(cached).encode())
        for task in tasks.values():
            task.deps = [d for d in task.deps if d not in closed]

    def _login_name(self) -> str:
        if self._login is None:
            _, _, user = self.client.rest("GET", "/user")
            self._login = (user or {}).get("login") or ""
        return self._login

    def _take_off(self, number: str) -> None:
        """Label and assignee off, before the claim ref goes: a claimer that wins the freed
        ref next labels the issue itself, and must not see its label taken off after."""
        self._unlabel(number, ACTIVE_LABEL)
        login = self._login_name()
        if login:
            self.client.rest("DELETE", f"{self._issue(number)}/assignees",
                             body={"assignees": [login]})

    def start(self, task_id: str) -> None:
        """The claim: the claim ref first, the one step exactly one machine wins (0048), then
        the label and the assignee people see. Won on an issue closed, held or done since the
        listing was read (a listing lags): given back, and the claim goes on."""
        if not claim_ref.take(self.client, task_id, self._claims):
            raise base.ClaimedElsewhere(f"#{task_id} is claimed by another run")
        try:
            _, _, labels = self.client.rest("POST", f"{self._issue(task_id)}/labels",
                                            body={"labels": [ACTIVE_LABEL]})
            login = self._login_name()
            if login:                               # the answer is the issue, as it is now
                _, _, issue = self.client.rest("POST", f"{self._issue(task_id)}/assignees",
                                               body={"assignees": [login]})
            else:
                _, _, issue = self.client.rest("GET", self._issue(task_id))
            names = {label.get("name") for label in labels or [] if isinstance(label, dict)}
            if (issue or {}).get("state") != "open" or names & {HELD_LABEL, DONE_LABEL}:
                self._take_off(task_id)
                raise base.ClaimedElsewhere(f"#{task_id} is closed, held or done")
        except BaseException:
            with contextlib.suppress(Exception):    # the error to report is the first one
                claim_ref.give_back(self.client, task_id, self._claims)
            raise

    def resume(self, task_id: str) -> None:
        """An expired lease of this clone's taken over: still its claim, unless a person freed
        it and another machine claimed the issue since."""
        if not claim_ref.still_ours(self.client, task_id, self._claims):
            raise base.ClaimedElsewhere(f"#{task_id} is claimed by another run now")

    def _unlabel(self, task_id: str, label: str) -> None:
        self.client.rest("DELETE", f"{self._issue(task_id)}/labels/{quote(label, safe='')}",
                         ok=(404,))

    def finish(self, task_id: str, result: dict | None, summary: str) -> None:
        """Comment the result; close the issue, or under --pr (RALPH_PR) label it done and
        leave the closing to its pull request's `Closes #N`. The claim ref goes last, when it
        is still this clone's."""
        ours = claim_ref.still_ours(self.client, task_id, self._claims)
        if summary:
            self.client.rest("POST", f"{self._issue(task_id)}/comments",
                             body={"body": DONE_NOTE + summary})
        if ours:
            self._unlabel(task_id, ACTIVE_LABEL)
        if self.environ.get("RALPH_PR"):
            self.client.rest("POST", f"{self._issue(task_id)}/labels",
                             body={"labels": [DONE_LABEL]})
            results = self._failures("results.json")
            results[task_id] = summary
            atomic_file.write_atomic(self.dir / "results.json", json.dumps(results).encode())
        else:
            self.client.rest("PATCH", self._issue(task_id),
                             body={"state": "closed", "state_reason": "completed"})
        if ours:
            claim_ref.give_back(self.client, task_id, self._claims)

    def release(self, task_id: str, reason: str) -> None:
        """Comment why, take label and assignee off, then the claim ref: unless another
        machine's claim holds the issue now (this clone's was freed by a person), which this
        release leaves as it is."""
        reason = reason or "no reason given"
        if claim_ref.still_ours(self.client, task_id, self._claims):
            self.client.rest("POST", f"{self._issue(task_id)}/comments",
                             body={"body": FAIL_NOTE + reason})
            self._take_off(task_id)
            claim_ref.give_back(self.client, task_id, self._claims)
        failures = self._failures()
        count = int(failures.get(task_id, {}).get("count", 0)) + 1
        failures[task_id] = {"reason": reason, "count": count}
        atomic_file.write_atomic(self.dir / "failures.json", json.dumps(failures).encode())

    def hold(self, task_id: str, reason: str) -> None:
        """Held on GitHub too (the label, the reason as a comment): another machine's run
        reads the same issues and must not take the task either."""
        self.client.rest("POST", f"{self._issue(task_id)}/labels", body={"labels": [HELD_LABEL]})
        self.client.rest("POST", f"{self._issue(task_id)}/comments",
                         body={"body": HOLD_NOTE + reason})

    def unhold(self, task_id: str) -> None:
        self._unlabel(task_id, HELD_LABEL)

    def reopen(self, task_id: str, reason: str) -> None:
        """A done task back to open (a conflict, a pull request that waits or was refused)."""
        self.client.rest("POST", f"{self._issue(task_id)}/comments",
                         body={"body": REOPEN_NOTE + (reason or "no reason given")})
        self._unlabel(task_id, DONE_LABEL)
        if claim_ref.still_ours(self.client, task_id, self._claims):
            self._take_off(task_id)
            claim_ref.give_back(self.client, task_id, self._claims)


__all__ = ["GitHubSource", "task_from", "dependencies", "NAME", "MARKER", "INSTALL",
           "ACTIVE_LABEL", "HELD_LABEL", "DONE_LABEL"]

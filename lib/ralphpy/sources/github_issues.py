"""Owns the GitHub source (docs/github.md): the open issues of a repository that carry the
backlog's label are its tasks (never pull requests), cached under .ralph/sources/github/ and
kept up to date by one ETag-revalidated request for what changed since (_issues); priority
and `component:` from labels, dependencies from "blocked by #N" / "depends on #N" lines and
open task-list items (`- [ ] #N`). A claim creates the issue's claim ref (one machine wins
it, github/claim_ref.py), then labels the issue `ralph:active` and assigns the token's user;
done comments with the result and closes it; a failure comments why and takes label and
assignee off; both delete the claim ref last. Does not own leases or the contract
(contract_cmds.py), nor the requests (ralphpy.github.client)."""
from __future__ import annotations

import contextlib
import importlib.util
import json
import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote

from ralphpy import atomic_file
from ralphpy.github import claim_ref
from ralphpy.github import client as api
from ralphpy.github import target as targets
from ralphpy.sources import base
from ralphpy.sources import github_cache as cache_db
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


def _normal(body: str) -> str:
    return body.replace("\r\n", "\n").strip()


def _cut(body: str) -> str:
    if len(body) > BODY_MAX:
        body = body[:BODY_MAX] + f"\n[... {len(body) - BODY_MAX} more characters of the issue]"
    return body


def _priority(labels: list[str]) -> int:
    return next((int(m.group(1)) for m in map(_PRIORITY.match, labels) if m), 2)


def _status(labels: list[str]) -> str:
    return (DONE if DONE_LABEL in labels else ACTIVE if ACTIVE_LABEL in labels
            else HELD if HELD_LABEL in labels else OPEN)


def _entry(issue: dict) -> cache_db.Entry:
    """An open issue as the cache keeps it: its body's dependencies read once, when its row
    is written."""
    body = _normal(issue["body"])
    found = dependencies(_cut(body))
    labels, number = issue["labels"], int(issue["number"])
    return cache_db.Entry(number, _priority(labels), _status(labels),
                          {**issue, "body": body, "deps": found}, found)


def _same(stored: dict | None, issue: dict | None) -> bool:
    """Whether the cache holds `issue` as it is (None: not in the listing) already."""
    if stored is None or issue is None:
        return stored is issue
    stored.pop("deps", None)
    return stored == {**issue, "body": _normal(issue["body"])}


class _Tasks(Mapping):
    """The listing's tasks in the cache's ready order, each made from its row when first
    asked for (and kept: a claim changes its status): a peek makes the few it shows."""

    def __init__(self, cache: cache_db.Cache, notes: tuple[dict, dict], closed: set[str]):
        self._cache, self._notes, self._closed = cache, notes, closed
        self._made: dict[str, Task] = {}

    def __getitem__(self, task_id: str) -> Task:
        task = self._made.get(task_id)
        if task is None:
            task = task_from(self._cache.issue(task_id), *self._notes)
            task.deps = [d for d in task.deps if d not in self._closed]
            self._made[task_id] = task
        return task

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._made or task_id in self._cache

    def __iter__(self):
        return self._cache.numbers()

    def __len__(self) -> int:
        return self._cache.count()

    def in_order(self, task_ids) -> list[str]:
        """Of `task_ids`, the listing's, in its order: by the index, not by a walk."""
        return self._cache.in_order(task_ids)

    def counts(self, leased) -> tuple[int, int, int, int]:
        """plan-status's (open, active, done, blocked), counted by SQLite from the statuses
        and dependencies beside the order: no issue's row is parsed."""
        return self._cache.counts(leased, self._closed)


def task_from(issue: dict, failures: Mapping[str, dict], results: Mapping[str, str] = {}) -> Task:
    """The task an issue is (its dependencies as the cache read them, when it did)."""
    number = str(issue["number"])
    labels = issue["labels"]
    status = _status(labels)
    body = _cut(_normal(issue["body"]))
    failed = failures.get(number, {})
    return Task(id=number, title=issue["title"] or f"#{number}", status=status,
                tool_status={ACTIVE: "in_progress", HELD: "held", DONE: "done"}.get(status, "open"),
                priority=_priority(labels),
                deps=list(issue["deps"]) if "deps" in issue else dependencies(body),
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

    def _issues(self) -> cache_db.Cache:
        """The open labelled issues. The first read lists them all (a page per hundred);
        after it, one request asks what changed since the newest change seen (`since`, any
        label, open or closed, so a closed or unlabelled issue leaves the cache), sent with
        its ETag: when nothing changed, a peek costs one 304 at any size of backlog and
        reads only the issues it shows (decisions 0045, 0047, 0051)."""
        path = f"{self.client.repo_path}/issues"
        cache = cache_db.Cache.open(self._cache(cache_db.NAME))
        head = cache.head
        if head is None or head["label"] != self.target.label:
            if old := self._cache("issues.jsonl"):      # the cache's layout before 0051
                with contextlib.suppress(FileNotFoundError):
                    old.unlink()
            items = self.client.pages(path, {"state": "open", "labels": self.target.label},
                                      keep=_keep)
            since = max((i["updated_at"] or "" for i in items), default="") or _EPOCH
            cache.replace({"label": self.target.label, "since": since, "etag": None},
                          [_entry(i) for i in items
                           if i["state"] == "open" and not i["pull_request"]])
            return cache
        since, etag = head["since"], head["etag"]
        # Newest first: any change lands on the first page and changes its ETag.
        params = {"state": "all", "since": since, "sort": "updated", "direction": "desc",
                  "per_page": 100}
        status, first, data = self.client.rest("GET", path, params=params, etag=etag,
                                               conditional=True)
        if status == 304:
            return cache
        changed, headers = [_keep(i) for i in data or []], first
        while 'rel="next"' in headers.get("link", ""):      # a burst of changes
            params["page"] = params.get("page", 1) + 1
            _, headers, more = self.client.rest("GET", path, params=params)
            changed += [_keep(i) for i in more or []]
        changed.reverse()                                    # oldest first, newest last
        # The newest state of each changed issue; None: it left the listing.
        now = {int(i["number"]): i if i["state"] == "open" and not i["pull_request"]
               and self.target.label in i["labels"] else None for i in changed}
        # An answer that repeats what the cache holds (the question after a change, or after
        # the first read, asks from that second on) leaves those rows as they are.
        held = cache.stored(now)
        now = {number: None if i is None else _entry(i) for number, i in now.items()
               if not _same(held.get(number), i)}
        newest = max((i["updated_at"] or "" for i in changed), default=since)
        # The answer after a change repeats it (asked from that change on): its ETag makes
        # the same question next time a 304.
        etag = first.get("etag") if newest == since else None
        cache.change({"label": self.target.label, "since": max(since, newest), "etag": etag},
                     now)
        return cache

    def load(self) -> Listing:
        before = self.client.requests
        cache = self._issues()
        closed = self._closed(cache.head["outside"])
        notes = (self._failures(), self._failures("results.json"))
        self.calls += self.client.requests - before
        return Listing(_Tasks(cache, notes, closed))

    def _closed(self, outside: list[str]) -> set[str]:
        """Of the dependencies outside the listing, those met: a closed issue. An open issue
        without the label, or one that does not exist, keeps blocking (as tk's `ready`)."""
        if not outside:
            return set()
        cache_file = self._cache("dependencies.json")
        try:
            cached = json.loads(cache_file.read_text(encoding="utf-8")) if cache_file else {}
        except (OSError, ValueError):
            cached = {}
        closed, changed = set(), False
        for number in outside:
            old = cached.get(number, {})
            status, headers, data = self.client.rest("GET", self._issue(number),
                                                     etag=old.get("etag"), ok=(404, 410),
                                                     conditional=True)
            if status == 200 and isinstance(data, dict):
                cached[number] = old = {"etag": headers.get("etag"), "state": data.get("state")}
                changed = True
            if old.get("state") == "closed":
                closed.add(number)
        if cache_file is not None and changed:              # a 304 leaves it as it is
            atomic_file.write_atomic(cache_file, json.dumps(cached).encode())
        return closed

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

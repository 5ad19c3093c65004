"""A stand-in for GitHub's REST API, for the tests: a threaded HTTP server on 127.0.0.1 holding
one repository's issues, labels, comments, pull requests, check runs and reviews in memory, in
the shape of GitHub's OpenAPI description (the fields PyGithub and ralph read). Its git side is
a bare repository the tests push to over its file path: refs are read from it, a ref created
through the API is written into it (201; 422 "Reference already exists" when it exists, as
GitHub answers; 409 while the repository has no commit), deleted through it (204; 422 when
missing), a commit made through the API is made there, a merge writes the merge commit there.
`hold_once` keeps one request waiting until the test lets it go, so two clients' steps can be
put in an order; `freeze_listing` makes the issue listing show the issues as they were
(GitHub's listings can lag its writes). Rate limits (403 with x-ratelimit-remaining 0 and
x-ratelimit-reset) and 401 for a wrong token are what GitHub sends. Test code: small, not a
GitHub."""
from __future__ import annotations

import copy
import hashlib
import json
import re
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

TOKEN = "ghp_standintoken0123456789"
LOGIN = "ralph-bot"
_STAMP = "2026-01-01T00:00:00Z"


def _user(login: str) -> dict:
    return {"login": login, "id": 1 if login == LOGIN else 2, "node_id": "U_1", "type": "User",
            "site_admin": False, "avatar_url": "", "gravatar_id": "", "url": "", "html_url": ""}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _git(bare: Path, *args: str, input: str | None = None) -> str:
    return subprocess.run(["git", *args], cwd=bare, input=input, capture_output=True, text=True,
                          check=True).stdout.strip()


class Standin:
    """The repository's state and the server; `url` is the API base (GITHUB_API_URL)."""

    def __init__(self, bare: Path, owner: str = "acme", repo: str = "widgets",
                 tls: tuple[Path, Path] | None = None):
        """`tls`: (certificate, key) files: the API is served over https with them."""
        self.bare, self.owner, self.repo = bare, owner, repo
        self.lock = threading.RLock()
        self.issues: dict[int, dict] = {}
        self.comments: dict[int, list[dict]] = {}
        self.pulls: dict[int, dict] = {}
        self.checks: dict[str, list[dict]] = {}       # head sha -> check runs
        self.reviews: dict[int, list[dict]] = {}
        self.review_comments: dict[int, list[dict]] = {}
        self.requests: list[tuple[str, str, int]] = []   # (verb, path, status)
        self.limited = 0                                # requests still to answer 403
        self.failing: list[str] = []        # paths whose next request is answered 502
        self.limit_reset = 0
        self.held: list[tuple[str, str, threading.Event, threading.Event]] = []
        self.listed: dict[int, dict] = {}           # freeze_listing: issues as listed
        self.refs_forbidden = False     # a token without Contents: write (403 on ref writes)
        self.next_number = 1
        self.on_pull = None        # called with a new or updated pull request's head sha
        self.require_approval = False   # branch protection: an approving review to merge
        self.required_checks: list[str] | None = None   # branch protection: checks to pass
        self.job_logs: dict[int, object] = {}   # Actions job id -> its log, or the status
        self.storage_requests: list[tuple[str, dict]] = []   # (path, headers) the logs' host saw
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        scheme = "http"
        if tls:
            import ssl
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        # Where a job's log is downloaded from: another host, as GitHub's log storage is.
        self.storage = ThreadingHTTPServer(("127.0.0.1", 0), self._storage_handler())
        self.storage.daemon_threads = True
        self.storage_url = f"http://127.0.0.1:{self.storage.server_address[1]}"
        threading.Thread(target=self.storage.serve_forever, daemon=True).start()

    def close(self) -> None:
        for server in (self.server, self.storage):
            server.shutdown()
            server.server_close()

    # ---- what the tests set up and read
    def add_issue(self, title: str, body: str = "", labels=("ralph",), pull: bool = False) -> int:
        with self.lock:
            number = self.next_number
            self.next_number += 1
            self.issues[number] = {
                "id": 1000 + number, "node_id": f"I_{number}", "number": number,
                "url": f"{self.url}/repos/{self.owner}/{self.repo}/issues/{number}",
                "html_url": f"https://github.com/{self.owner}/{self.repo}/issues/{number}",
                "repository_url": f"{self.url}/repos/{self.owner}/{self.repo}",
                "labels_url": "", "comments_url": "", "events_url": "",
                "title": title, "body": body, "state": "open", "state_reason": None,
                "user": _user("octocat"), "labels": [self._label(n) for n in labels],
                "assignee": None, "assignees": [], "milestone": None, "locked": False,
                "comments": 0, "created_at": _now(), "updated_at": _now(), "closed_at": None,
                "author_association": "OWNER"}
            if pull:
                self.issues[number]["pull_request"] = {"url": "", "html_url": ""}
            self.comments[number] = []
            return number

    def rate_limit(self, requests: int, seconds: int) -> None:
        """The next `requests` requests are refused as over the rate limit until `seconds`."""
        with self.lock:
            self.limited = requests
            self.limit_reset = int(time.time()) + seconds

    def set_labels(self, number: int, *names: str) -> None:
        """A person edits the issue's labels on GitHub."""
        with self.lock:
            self.issues[number].update(labels=[self._label(n) for n in names],
                                       updated_at=_now())

    def hold_once(self, verb: str, pattern: str) -> tuple[threading.Event, threading.Event]:
        """The next request `verb` whose path matches `pattern` waits, before it is answered,
        until the test sets the second event; the first is set when it arrived."""
        arrived, go = threading.Event(), threading.Event()
        with self.lock:
            self.held.append((verb, pattern, arrived, go))
        return arrived, go

    def _wait_if_held(self, verb: str, path: str) -> None:
        with self.lock:
            found = next((h for h in self.held if h[0] == verb and re.search(h[1], path)), None)
            if found:
                self.held.remove(found)
        if found:
            found[2].set()
            found[3].wait(120)

    def freeze_listing(self) -> None:
        """From now on the issue listing shows the issues there are now as they are now."""
        with self.lock:
            self.listed = copy.deepcopy(self.issues)

    def claim_refs(self) -> list[str]:
        out = _git(self.bare, "for-each-ref", "--format=%(refname)", "refs/ralph/claims/")
        return out.splitlines()

    def labels(self, number: int) -> list[str]:
        return [label["name"] for label in self.issues[number]["labels"]]

    def comment_bodies(self, number: int) -> list[str]:
        return [c["body"] for c in self.comments[number]]

    def set_checks(self, sha: str, *runs: tuple[str, str, str], jobs: dict | None = None) -> None:
        """Check runs of a commit: (name, conclusion, output text). A name in `jobs` is a GitHub
        Actions job's check run, its log the text given there, or an int: the status the
        log's download answers (410: expired, 404, 403)."""
        jobs = jobs or {}
        with self.lock:
            self.checks[sha] = [
                {"id": 5000 + i, "node_id": f"CR_{i}", "name": name, "head_sha": sha,
                 "status": "completed", "conclusion": conclusion, "external_id": "",
                 "url": "", "html_url": f"https://github.com/{self.owner}/{self.repo}/runs/{i}",
                 "details_url": "", "started_at": _STAMP, "completed_at": _STAMP,
                 "output": {"title": f"{name}: {conclusion}", "summary": conclusion,
                            "text": log, "annotations_count": 0, "annotations_url": ""},
                 "app": ({"id": 15368, "slug": "github-actions", "name": "GitHub Actions",
                          "node_id": "MDM6QXBwMTUzNjg=", "owner": _user("github")}
                         if name in jobs else None),
                 "pull_requests": []} for i, (name, conclusion, log) in enumerate(runs, 1)]
            for run in self.checks[sha]:
                if run["name"] in jobs:
                    self.job_logs[run["id"]] = jobs[run["name"]]

    def review(self, pull: int, state: str, body: str, comments=()) -> None:
        """A review on a pull request's current head: APPROVED or CHANGES_REQUESTED."""
        with self.lock:
            head = self.pulls[pull]["head"]["sha"]
            self.reviews.setdefault(pull, []).append(
                {"id": 7000 + len(self.reviews.get(pull, [])), "node_id": "R_1",
                 "user": _user("reviewer"), "body": body, "state": state, "commit_id": head,
                 "submitted_at": _STAMP, "html_url": "", "pull_request_url": "",
                 "author_association": "MEMBER", "_links": {}})
            for path, line, text in comments:
                self.review_comments.setdefault(pull, []).append(
                    {"id": 8000, "path": path, "line": line, "body": text, "commit_id": head,
                     "user": _user("reviewer"), "created_at": _STAMP})

    def close_pull(self, pull: int) -> None:
        with self.lock:
            self.pulls[pull].update(state="closed", closed_at=_STAMP)

    # ---- the API
    def _label(self, name: str) -> dict:
        return {"id": int(hashlib.sha1(name.encode()).hexdigest()[:8], 16), "node_id": "L",
                "url": "", "name": name, "color": "ededed", "default": False,
                "description": None}

    def _ref(self, name: str) -> str | None:
        """The commit of a branch, or of a fully qualified ref (refs/...)."""
        full = name if name.startswith("refs/") else f"refs/heads/{name}"
        try:
            return _git(self.bare, "rev-parse", "--verify", "-q", f"{full}^{{commit}}")
        except subprocess.CalledProcessError:
            return None

    def _empty(self) -> bool:
        return not _git(self.bare, "for-each-ref", "--count=1", "refs/heads/")

    def _pull_view(self, pr: dict) -> dict:
        head = self._ref(pr["head"]["ref"]) or pr["head"]["sha"]
        if head != pr["head"]["sha"] and pr["state"] == "open":
            pr["head"]["sha"] = head
            if self.on_pull:
                self.on_pull(pr["number"], head)
        return {k: v for k, v in pr.items() if not k.startswith("_")}

    def _merge(self, pr: dict, method: str) -> str:
        base, head = pr["base"]["ref"], pr["head"]["sha"]
        base_sha = self._ref(base)
        tree = _git(self.bare, "merge-tree", "--write-tree", base_sha, head).splitlines()[0]
        title = f"{pr['title']} (#{pr['number']})"
        parents = ["-p", base_sha] + (["-p", head] if method == "merge" else [])
        env_commit = _git(self.bare, "commit-tree", tree, *parents, "-m", title)
        _git(self.bare, "update-ref", f"refs/heads/{base}", env_commit, base_sha)
        return env_commit

    def answer(self, verb: str, path: str, query: dict, body: dict | None,
               headers) -> tuple[int, object, dict]:
        auth = headers.get("Authorization", "")
        if auth not in (f"token {TOKEN}", f"Bearer {TOKEN}"):
            return 401, {"message": "Bad credentials",
                         "documentation_url": "https://docs.github.com/rest"}, {}
        if path in self.failing:
            self.failing.remove(path)
            return 502, {"message": "Server Error"}, {}
        if self.limited > 0:
            self.limited -= 1
            return 403, {"message": "API rate limit exceeded for user ID 1."}, {
                "x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0",
                "x-ratelimit-reset": str(self.limit_reset)}
        if path == "/user":
            return 200, _user(LOGIN), {}
        prefix = f"/repos/{self.owner}/{self.repo}"
        if not path.startswith(prefix):
            return 404, {"message": "Not Found"}, {}
        rest = path[len(prefix):]
        if rest == "" and verb == "GET":
            return 200, {"id": 1, "node_id": "R_1", "name": self.repo,
                         "full_name": f"{self.owner}/{self.repo}", "private": True,
                         "owner": _user(self.owner), "html_url": "", "url": "",
                         "default_branch": "main", "allow_squash_merge": True,
                         "allow_merge_commit": True, "allow_rebase_merge": True}, {}
        first = lambda name: query.get(name, [""])[0]    # noqa: E731
        if verb == "GET" and rest == "/issues":
            wanted = {label for label in first("labels").split(",") if label}
            state = first("state") or "open"
            shown = {**self.issues, **self.listed}
            since = first("since") or ""
            # `since` first: the question of what changed costs the stand-in little at
            # 10,000 issues, so bench/sources.py times ralph's side of it.
            found = [i for n, i in sorted(shown.items())
                     if i["updated_at"] >= since
                     and (state == "all" or i["state"] == state)
                     and wanted <= {label["name"] for label in i["labels"]}]
            if first("sort") == "updated":
                found.sort(key=lambda i: i["updated_at"], reverse=first("direction") != "asc")
            per, page = int(first("per_page") or 30), int(first("page") or 1)
            more = len(found) > per * page
            link = {"link": f'<{self.url}{path}?page={page + 1}>; rel="next"'} if more else {}
            return 200, found[per * (page - 1):per * page], link
        m = re.fullmatch(r"/issues/(\d+)(/.*)?", rest)
        if m:
            number, sub = int(m.group(1)), m.group(2) or ""
            issue = self.issues.get(number)
            if issue is None:
                return 404, {"message": "Not Found"}, {}
            if verb != "GET":
                issue["updated_at"] = _now()          # as GitHub: any change of the issue
            if sub == "" and verb == "GET":
                return 200, issue, {}
            if sub == "" and verb == "PATCH":
                for key in ("state", "title", "body", "state_reason"):
                    if key in body:
                        issue[key] = body[key]
                issue["closed_at"] = _STAMP if issue["state"] == "closed" else None
                return 200, issue, {}
            if sub == "/comments" and verb == "POST":
                comment = {"id": 9000 + len(self.requests), "node_id": "C", "url": "",
                           "html_url": "", "body": body["body"], "user": _user(LOGIN),
                           "created_at": _STAMP, "updated_at": _STAMP,
                           "author_association": "MEMBER", "issue_url": issue["url"]}
                self.comments[number].append(comment)
                issue["comments"] += 1
                return 201, comment, {}
            if sub == "/comments" and verb == "GET":
                return 200, self.comments[number], {}
            if sub == "/labels" and verb == "POST":
                for name in body["labels"]:
                    if name not in self.labels(number):
                        issue["labels"].append(self._label(name))
                return 200, issue["labels"], {}
            if sub.startswith("/labels/") and verb == "DELETE":
                name = unquote(sub[len("/labels/"):])
                if name not in self.labels(number):
                    return 404, {"message": "Label does not exist"}, {}
                issue["labels"] = [x for x in issue["labels"] if x["name"] != name]
                return 200, issue["labels"], {}
            if sub == "/assignees" and verb in ("POST", "DELETE"):
                names = set(body["assignees"])
                kept = [a for a in issue["assignees"] if a["login"] not in names]
                if verb == "POST":
                    kept += [_user(n) for n in sorted(names)]
                issue["assignees"] = kept
                issue["assignee"] = kept[0] if kept else None
                return 201 if verb == "POST" else 200, issue, {}
        if rest.startswith(("/git/", "/commits/")) and self._empty():
            return 409, {"message": "Git Repository is empty."}, {}
        if verb == "POST" and rest == "/git/commits":
            try:
                sha = _git(self.bare, "commit-tree", body["tree"],
                           *[arg for parent in body.get("parents", []) for arg in ("-p", parent)],
                           input=body["message"])
            except subprocess.CalledProcessError:
                return 422, {"message": "Tree SHA does not exist"}, {}
            return 201, {"sha": sha, "node_id": "C", "url": "", "html_url": "",
                         "message": body["message"], "tree": {"sha": body["tree"], "url": ""},
                         "parents": [{"sha": p, "url": "", "html_url": ""}
                                     for p in body.get("parents", [])]}, {}
        m = re.fullmatch(r"/commits/([^/]+)", rest)
        if m and verb == "GET":
            ref = unquote(m.group(1))
            sha = ref if re.fullmatch(r"[0-9a-f]{40}", ref) else self._ref(ref)
            if sha is None:
                return 422, {"message": f"No commit found for SHA: {ref}"}, {}
            tree = _git(self.bare, "rev-parse", f"{sha}^{{tree}}")
            return 200, {"sha": sha, "node_id": "C", "url": "", "html_url": "",
                         "commit": {"message": "", "tree": {"sha": tree, "url": ""}},
                         "parents": []}, {}
        if self.refs_forbidden and rest.startswith("/git/refs") and verb != "GET":
            return 403, {"message": "Resource not accessible by personal access token"}, {}
        if verb == "POST" and rest == "/git/refs":
            name = body["ref"]
            if not name.startswith("refs/") or name.count("/") < 2:
                return 422, {"message": "Reference name is invalid"}, {}
            if self._ref(name) is not None:
                return 422, {"message": "Reference already exists"}, {}
            try:
                _git(self.bare, "update-ref", name, body["sha"], "0" * 40)
            except subprocess.CalledProcessError:
                return 422, {"message": "Object does not exist"}, {}
            return 201, {"ref": name, "node_id": "REF", "url": "",
                         "object": {"type": "commit", "sha": body["sha"], "url": ""}}, {}
        m = re.fullmatch(r"/git/refs/(.+)", rest)
        if m and verb == "DELETE":
            name = "refs/" + unquote(m.group(1))
            if self._ref(name) is None:
                return 422, {"message": "Reference does not exist"}, {}
            _git(self.bare, "update-ref", "-d", name)
            return 204, None, {}
        m = re.fullmatch(r"/git/ref/(.+)", rest)
        if m and verb == "GET":
            name = "refs/" + unquote(m.group(1))
            sha = self._ref(name)
            if sha is None:
                return 404, {"message": "Not Found"}, {}
            return 200, {"ref": name, "node_id": "REF", "url": "",
                         "object": {"type": "commit", "sha": sha, "url": ""}}, {}
        if rest == "/pulls" and verb == "POST":
            head = body["head"].split(":")[-1]
            sha = self._ref(head)
            if sha is None:
                return 422, {"message": "Validation Failed",
                             "errors": [{"field": "head", "code": "invalid"}]}, {}
            if any(p["head"]["ref"] == head and p["state"] == "open"
                   for p in self.pulls.values()):
                return 422, {"message": "Validation Failed", "errors": [
                    {"message": f"A pull request already exists for {self.owner}:{head}."}]}, {}
            number = self.add_issue(body["title"], body.get("body") or "", labels=(), pull=True)
            pr = {"id": 2000 + number, "node_id": f"PR_{number}", "number": number,
                  "url": f"{self.url}{prefix}/pulls/{number}",
                  "html_url": f"https://github.com/{self.owner}/{self.repo}/pull/{number}",
                  "diff_url": "", "patch_url": "", "issue_url": "", "commits_url": "",
                  "review_comments_url": "", "review_comment_url": "", "comments_url": "",
                  "statuses_url": "", "state": "open", "locked": False, "title": body["title"],
                  "body": body.get("body"), "user": _user(LOGIN), "labels": [],
                  "milestone": None, "active_lock_reason": None, "created_at": _STAMP,
                  "updated_at": _STAMP, "closed_at": None, "merged_at": None,
                  "merge_commit_sha": None, "assignee": None, "assignees": [],
                  "requested_reviewers": [], "requested_teams": [], "draft": False,
                  "head": {"label": f"{self.owner}:{head}", "ref": head, "sha": sha,
                           "user": _user(LOGIN), "repo": None},
                  "base": {"label": f"{self.owner}:{body['base']}", "ref": body["base"],
                           "sha": self._ref(body["base"]), "user": _user(LOGIN), "repo": None},
                  "_links": {}, "author_association": "MEMBER", "auto_merge": None,
                  "merged": False, "mergeable": True, "mergeable_state": "clean",
                  "comments": 0, "review_comments": 0, "commits": 1, "additions": 0,
                  "deletions": 0, "changed_files": 0, "maintainer_can_modify": False}
            self.pulls[number] = pr
            if self.on_pull:
                self.on_pull(number, sha)
            return 201, pr, {}
        if rest == "/pulls" and verb == "GET":
            head = first("head").split(":")[-1]
            state = first("state") or "open"
            found = [self._pull_view(p) for p in self.pulls.values()
                     if (not head or p["head"]["ref"] == head)
                     and (state == "all" or p["state"] == state)]
            return 200, found, {}
        m = re.fullmatch(r"/pulls/(\d+)(/.*)?", rest)
        if m:
            pr = self.pulls.get(int(m.group(1)))
            sub = m.group(2) or ""
            if pr is None:
                return 404, {"message": "Not Found"}, {}
            if sub == "" and verb == "GET":
                return 200, self._pull_view(pr), {}
            if sub == "/reviews" and verb == "GET":
                return 200, self.reviews.get(pr["number"], []), {}
            if sub == "/comments" and verb == "GET":
                return 200, self.review_comments.get(pr["number"], []), {}
            if sub == "/merge" and verb == "PUT":
                self._pull_view(pr)
                if pr["state"] != "open":
                    return 405, {"message": "Pull Request is not mergeable"}, {}
                if self.require_approval and not any(
                        r["state"] == "APPROVED" for r in self.reviews.get(pr["number"], [])):
                    return 405, {"message": "At least 1 approving review is required by "
                                            "reviewers with write access."}, {}
                sha = self._merge(pr, (body or {}).get("merge_method") or "merge")
                pr.update(state="closed", merged=True, merged_at=_STAMP,
                          merge_commit_sha=sha, closed_at=_STAMP)
                for closes in re.findall(r"(?i)\bcloses #(\d+)", pr["body"] or ""):
                    if int(closes) in self.issues:
                        self.issues[int(closes)].update(state="closed", updated_at=_now(),
                                                        state_reason="completed")
                return 200, {"sha": sha, "merged": True, "message": "Pull Request merged"}, {}
        m = re.fullmatch(r"/branches/([^/]+)/protection/required_status_checks", rest)
        if m and verb == "GET":
            if self.required_checks is None:
                return 404, {"message": "Branch not protected"}, {}
            return 200, {"url": "", "strict": False, "contexts": list(self.required_checks),
                         "checks": [{"context": c, "app_id": None}
                                    for c in self.required_checks]}, {}
        m = re.fullmatch(r"/actions/jobs/(\d+)/logs", rest)
        if m and verb == "GET":
            log = self.job_logs.get(int(m.group(1)))
            if log is None or isinstance(log, int):
                return log or 404, {"message": "Not Found" if log in (None, 404) else
                                    "Gone" if log == 410 else "Forbidden"}, {}
            # As GitHub: a redirect to a short-lived download URL on the logs' own host.
            return 302, None, {"Location": f"{self.storage_url}/job-logs/{m.group(1)}?sig=1"}
        m = re.fullmatch(r"/commits/([^/]+)/check-runs", rest)
        if m and verb == "GET":
            ref = unquote(m.group(1))
            sha = ref if re.fullmatch(r"[0-9a-f]{40}", ref) else self._ref(ref)
            runs = self.checks.get(sha or "", [])
            return 200, {"total_count": len(runs), "check_runs": runs}, {}
        return 404, {"message": "Not Found"}, {}

    def _storage_handler(self):
        standin = self

        class Storage(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                with standin.lock:
                    standin.storage_requests.append((self.path, dict(self.headers)))
                    number = re.fullmatch(r"/job-logs/(\d+)\?sig=1", self.path)
                    log = standin.job_logs.get(int(number.group(1))) if number else None
                payload = log.encode() if isinstance(log, str) else b""
                self.send_response(200 if payload else 404)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Storage

    def _handler(self):
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _any(self) -> None:
                split = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                # GitHub Enterprise serves the same API under /api/v3.
                path = split.path.removeprefix("/api/v3") if split.path.startswith(
                    "/api/v3/") else split.path
                standin._wait_if_held(self.command, path)
                with standin.lock:
                    status, data, extra = standin.answer(self.command, path,
                                                         parse_qs(split.query), body,
                                                         self.headers)
                payload = json.dumps(data).encode() if status != 204 else b""
                etag = '"' + hashlib.sha1(payload).hexdigest() + '"'
                if status == 200 and self.command == "GET" and \
                        self.headers.get("If-None-Match") == etag:
                    status, payload = 304, b""
                with standin.lock:
                    standin.requests.append((self.command, self.path, status))
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(payload)))
                if self.command == "GET":
                    self.send_header("ETag", etag)
                for key, value in extra.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _any

        return Handler


# sourcehelp's agent, adding a line at each session: a session continuing a task commits on
# top of the last one.
def appending_agent(agent: str) -> str:
    changed = agent.replace('echo "$tid" > "work-$tid.txt"',
                            'echo "session on $tid" >> "work-$tid.txt"')
    assert changed != agent
    return changed


def origin(tmp_path: Path, git_repo: Path, base_env: dict, agent: str, **env: str) -> Standin:
    """A stand-in whose bare repository is git_repo's origin (main pushed, .ralph/ ignored),
    its env set for a `--pr` run of `agent` (tests/stubs/claude on PATH: the caller's
    install_stub), polling pull requests every second."""
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    (git_repo / ".gitignore").write_text(".ralph/\n")
    for args in (["add", ".gitignore"], ["commit", "-qm", "ignore .ralph"],
                 ["remote", "set-url", "origin", str(bare)], ["push", "-q", "origin", "main"]):
        subprocess.run(["git", *args], cwd=git_repo, env=base_env, check=True,
                       capture_output=True)
    standin = Standin(bare)
    standin.env = {**base_env, "GITHUB_API_URL": standin.url, "GH_TOKEN": TOKEN,
                   "GITHUB_REPOSITORY": "acme/widgets", "STUB_ACTION": agent,
                   "STUB_CLAIMS": str(tmp_path / "claims.txt"), **env}
    (git_repo / "ralph.yml").write_text("pr_poll: 1s\n")
    return standin


def certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, as (cert.pem, key.pem) in folder:
    the stand-in over https, trusted through REQUESTS_CA_BUNDLE."""
    import datetime
    import ipaddress

    from cryptography import x509      # PyGithub's own dependency (through PyJWT[crypto])
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


"""Owns one connection to GitHub's REST API through PyGithub's requester (auth, the base URL of
github.com, an Enterprise server or the tests' stand-in, pooled connections): every request
goes through `rest()`, which waits out a rate limit with one line (403 or 429 with
x-ratelimit-remaining 0, or retry-after), stops on a rejected token (AuthFailed: the auth exit
code) and turns any other failure into one line; with an ETag given, a 304 comes back as
such (GitHub does not count it against the rate limit). `pages()` reads a whole paged listing.
The token is never in a message."""
from __future__ import annotations

import json
import sys
import time
from typing import Callable, Mapping

from ralphpy.errors import AuthFailed, RalphError, UsageError
from ralphpy.github import target as targets

INSTALL = ("GitHub support needs PyGithub: pip install 'ralphpy[github]' "
           "(or pip install PyGithub)")
# A rate limit's reset can be an hour away; a longer answer is a clock or server gone wrong.
_LONGEST_WAIT = 3700.0


class GitHubError(RalphError):
    """A request GitHub refused for a reason waiting cannot cure; the message is one line."""


def _message(data: object, status: int) -> str:
    text = data.get("message") if isinstance(data, dict) else None
    return f"{status} {text}" if text else str(status)


def _limit_wait(status: int, headers: Mapping[str, str], now: float) -> float | None:
    """Seconds until a rate limit lifts, or None when the answer is not a rate limit."""
    if status not in (403, 429):
        return None
    if headers.get("retry-after", "").isdigit():                 # the secondary limits
        return float(headers["retry-after"])
    if headers.get("x-ratelimit-remaining") == "0":
        reset = headers.get("x-ratelimit-reset", "")
        return max(1.0, float(reset) - now + 1) if reset.isdigit() else 60.0
    return None


class Client:
    def __init__(self, target: targets.Target, environ: Mapping[str, str],
                 say: Callable[[str], None] | None = None, sleep=time.sleep):
        token = targets.token(environ)
        try:
            import github
        except ImportError:
            raise UsageError(INSTALL) from None
        # retry=None and no pauses between requests: rate limits are waited out here, with a
        # line the user sees, not silently inside urllib3.
        self.gh = github.Github(auth=github.Auth.Token(token), base_url=targets.api_url(environ),
                                timeout=30, retry=None, seconds_between_requests=None,
                                seconds_between_writes=None)
        self.target = target
        self.repo_path = f"/repos/{target.full_name}"
        self.say = say or (lambda line: (sys.stderr.write(line + "\n"), sys.stderr.flush()))
        self.sleep = sleep
        self.requests = 0

    def rest(self, verb: str, path: str, *, params: dict | None = None, body: object = None,
             etag: str | None = None, ok: tuple[int, ...] = ()) -> tuple[int, dict, object]:
        """(status, lower-cased headers, parsed JSON) of a 2xx, a 304 or a status in `ok`;
        a rate limit is waited out and the request sent again."""
        headers = {"If-None-Match": etag} if etag else None
        while True:
            self.requests += 1
            try:
                status, raw_headers, text = self.gh.requester.requestJson(
                    verb, path, parameters=params, headers=headers, input=body)
            except OSError as err:
                raise GitHubError(f"GitHub {verb} {path}: cannot connect "
                                  f"({err.__class__.__name__})") from None
            lower = {k.lower(): v for k, v in (raw_headers or {}).items()}
            try:
                data = json.loads(text) if text else None
            except ValueError:
                data = None
            if status < 300 or status == 304 or status in ok:
                return status, lower, data
            wait = _limit_wait(status, lower, time.time())
            if wait is not None and wait <= _LONGEST_WAIT:
                until = time.strftime("%H:%M:%S", time.gmtime(time.time() + wait))
                self.say(f"GitHub API rate limit reached: waiting {int(wait)}s, "
                         f"until {until} UTC")
                self.sleep(wait)
                continue
            if status == 401:
                raise AuthFailed(f"GitHub rejected the token ({_message(data, status)}): set "
                                 "GH_TOKEN or GITHUB_TOKEN to a valid token")
            if status == 404 and path == self.repo_path:
                raise GitHubError(f"GitHub: repository {self.target.full_name} not found, "
                                  "or the token cannot see it")
            raise GitHubError(f"GitHub {verb} {path}: {_message(data, status)}")

    def pages(self, path: str, params: dict, keep: Callable[[dict], dict] = dict) -> list:
        """Every item of a paged listing (a hundred a page), as `keep` makes each."""
        items, number = [], 1
        while True:
            _, headers, data = self.rest("GET", path,
                                         params={**params, "per_page": 100, "page": number})
            items += [keep(item) for item in data] if isinstance(data, list) else []
            if 'rel="next"' not in headers.get("link", ""):
                return items
            number += 1


__all__ = ["Client", "GitHubError", "INSTALL"]

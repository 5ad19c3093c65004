"""Owns one connection to GitHub's REST API (github.com, an Enterprise server's `/api/v3` or the
tests' stand-in): every request goes through `rest()`, which waits out a rate limit with one line
(403 or 429 with x-ratelimit-remaining 0, or retry-after), stops on a rejected token (AuthFailed:
the auth exit code) and turns any other failure into one line; with an ETag given, a 304 comes
back as such (GitHub does not count it against the rate limit). `pages()` reads a whole paged
listing; `download()` a file the API redirects to (a job's log). The token is never in a
message, and never sent to another host than the API's.

Two carriers, one set of rules: a conditional GET (`conditional=True`: a question asked again
with the ETag of its last answer) and a download go out as one small stdlib request, so the
task CLI's nothing-changed `peek` never imports PyGithub (requests, urllib3, jwt and every
model module: about 200 ms, docs/decisions/0047); everything else goes through
PyGithub's requester (pooled connections, writes, proxies), imported on the first such
request."""
from __future__ import annotations

import json
import sys
import time
from typing import Callable, Mapping
from urllib.parse import urlencode, urljoin, urlsplit

from ralphpy.errors import AuthFailed, RalphError, UsageError
from ralphpy.github import target as targets

INSTALL = ("GitHub support needs PyGithub: pip install 'ralphpy[github]' "
           "(or pip install PyGithub)")
# A rate limit's reset can be an hour away; a longer answer is a clock or server gone wrong.
_LONGEST_WAIT = 3700.0
_TIMEOUT = 30
_USER_AGENT = "ralph.py"       # GitHub refuses a request without one
# requests honours a proxy and the stdlib request does not: with one set, requests carries all.
_PROXIES = ("https_proxy", "http_proxy", "all_proxy", "HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")
# The certificates requests trusts, in its order: these files, else certifi's bundle.
_CA_BUNDLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


class GitHubError(RalphError):
    """A request GitHub refused for a reason waiting cannot cure; the message is one line."""


def _parsed(text: object) -> object:
    try:
        return json.loads(text) if text else None
    except (TypeError, ValueError):
        return None


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


def _ca_file(environ: Mapping[str, str]) -> str | None:
    """The certificates an https request trusts: those requests (PyGithub's carrier) trusts,
    so both carriers accept the same servers; None: the system's."""
    named = next((environ[name] for name in _CA_BUNDLES if environ.get(name)), None)
    if named:
        return named
    try:
        import certifi                  # requests' own dependency
    except ImportError:
        return None
    return certifi.where()


def _origin_of(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


class Client:
    def __init__(self, target: targets.Target, environ: Mapping[str, str],
                 say: Callable[[str], None] | None = None, sleep=time.sleep):
        import importlib.util
        self._token = targets.token(environ)
        if importlib.util.find_spec("github") is None:     # refused before any request
            raise UsageError(INSTALL)
        self.base = targets.api_url(environ)
        self._plain_ok = not any(environ.get(name) for name in _PROXIES)
        self._environ = environ
        self._gh = None
        self.target = target
        self.repo_path = f"/repos/{target.full_name}"
        self.say = say or (lambda line: (sys.stderr.write(line + "\n"), sys.stderr.flush()))
        self.sleep = sleep
        self.requests = 0

    @property
    def gh(self):
        """PyGithub's client, made on the first request the stdlib carrier does not take."""
        if self._gh is None:
            try:
                import github
            except ImportError:
                raise UsageError(INSTALL) from None
            # retry=None and no pauses between requests: rate limits are waited out here, with
            # a line the user sees, not silently inside urllib3.
            self._gh = github.Github(auth=github.Auth.Token(self._token), base_url=self.base,
                                     timeout=_TIMEOUT, retry=None, seconds_between_requests=None,
                                     seconds_between_writes=None)
        return self._gh

    def _pygithub(self, verb: str, path: str, params: dict | None, headers: dict | None,
                  body: object) -> tuple[int, dict, str]:
        status, raw_headers, text = self.gh.requester.requestJson(
            verb, path, parameters=params, headers=headers, input=body)
        return status, raw_headers or {}, text

    def _plain(self, verb: str, url: str, headers: dict | None) -> tuple[int, dict, str]:
        """One request by the stdlib, no body, no keep-alive; the token only to the API's own
        scheme and host (a redirect's target is another's: GitHub's log storage)."""
        import http.client
        scheme, host = _origin_of(url)
        parts = urlsplit(url)
        sent = {"User-Agent": _USER_AGENT, "Accept": "application/vnd.github+json",
                **(headers or {})}
        if (scheme, host) == _origin_of(self.base):
            sent["Authorization"] = f"token {self._token}"
        if scheme == "https":
            import ssl
            context = ssl.create_default_context(cafile=_ca_file(self._environ))
            connection = http.client.HTTPSConnection(parts.netloc, timeout=_TIMEOUT,
                                                     context=context)
        elif scheme == "http":
            connection = http.client.HTTPConnection(parts.netloc, timeout=_TIMEOUT)
        else:
            raise ConnectionError(f"no carrier for {scheme!r}")
        target = parts.path or "/"
        try:
            connection.request(verb, target + (f"?{parts.query}" if parts.query else ""),
                               headers=sent)
            answer = connection.getresponse()
            text = answer.read().decode("utf-8", "replace")
            return answer.status, dict(answer.getheaders()), text
        except http.client.HTTPException as err:      # not an OSError: a garbled answer
            raise ConnectionError(err.__class__.__name__) from None
        finally:
            connection.close()

    def _url(self, path: str, params: dict | None) -> str:
        # The base's own path (an Enterprise server's /api/v3) stays in front, as PyGithub does.
        query = f"?{urlencode(params)}" if params else ""
        return f"{self.base}{path}{query}"

    def rest(self, verb: str, path: str, *, params: dict | None = None, body: object = None,
             etag: str | None = None, ok: tuple[int, ...] = (), conditional: bool = False,
             raw: bool = False) -> tuple[int, dict, object]:
        """(status, lower-cased headers, parsed JSON) of a 2xx, a 304 or a status in `ok`;
        a rate limit is waited out and the request sent again. `conditional`: a GET whose
        answer is kept with its ETag, sent by the stdlib carrier with or without `etag`: GitHub's
        ETags vary with the request's headers, so one question is always asked by one carrier.
        `raw`: the text, not parsed."""
        headers = {"If-None-Match": etag} if etag else None
        plain = conditional and verb == "GET" and body is None and self._plain_ok
        while True:
            self.requests += 1
            try:
                if plain:
                    status, raw_headers, text = self._plain(verb, self._url(path, params),
                                                            headers)
                else:
                    status, raw_headers, text = self._pygithub(verb, path, params, headers, body)
            except OSError as err:
                raise GitHubError(f"GitHub {verb} {path}: cannot connect "
                                  f"({err.__class__.__name__})") from None
            lower = {k.lower(): v for k, v in raw_headers.items()}
            wait = _limit_wait(status, lower, time.time())      # before `ok`: a 403 may be one
            if wait is None and (status < 300 or status == 304 or status in ok):
                return status, lower, text if raw else _parsed(text)
            data = _parsed(text)
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

    def download(self, path: str, ok: tuple[int, ...] = ()) -> tuple[int, str]:
        """(status, text) of a file the API answers with a redirect to its storage (a job's
        log: 302 to a URL that is valid for a minute), followed once, without the token
        when it leads to another host. Statuses in `ok` come back instead of failing."""
        status, headers, text = self.rest("GET", path, ok=(302, *ok), conditional=True,
                                          raw=True)
        if status != 302 or not headers.get("location"):
            return status, str(text or "")
        location = urljoin(self._url(path, None), headers["location"])
        self.requests += 1
        try:
            status, _, text = self._plain("GET", location, None)
        except OSError as err:
            raise GitHubError(f"GitHub GET {path}: the download cannot be read "
                              f"({err.__class__.__name__})") from None
        if status >= 300 and status not in ok:
            raise GitHubError(f"GitHub GET {path}: the download answered {status}")
        return status, text

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

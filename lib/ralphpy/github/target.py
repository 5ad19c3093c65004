"""Owns what `--tasks github[:OWNER/REPO][?label=NAME]` names: the repository and the label
that marks the backlog's issues, with where a missing OWNER/REPO comes from (GITHUB_REPOSITORY,
which GitHub Actions sets, else the `origin` remote's URL). Also the token (GH_TOKEN,
GITHUB_TOKEN, else `gh auth token` when gh is installed) and the base URL (GITHUB_API_URL).
Stdlib only, and no git process where the repository's files answer: the task CLI asks at
every call."""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Mapping, NamedTuple
from urllib.parse import parse_qs

from ralphpy import git_files
from ralphpy.errors import AuthFailed, UsageError

NAME = "github"
DEFAULT_LABEL = "ralph"
API_DEFAULT = "https://api.github.com"


class Target(NamedTuple):       # not a dataclass: its import costs every command's start
    owner: str
    repo: str
    label: str

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.repo}"


def is_github(setting: str | None) -> bool:
    return bool(setting) and (setting == NAME or setting.startswith(NAME + ":"))


def _from_remote_url(url: str) -> str | None:
    """OWNER/REPO from a remote URL on any host (GitHub Enterprise too): its last two parts."""
    url = url.strip()
    if url.endswith(".git"):
        url = url[:-4]
    tail = url.replace(":", "/").rstrip("/").split("/")
    return "/".join(tail[-2:]) if len(tail) >= 2 and all(tail[-2:]) else None


def _origin(cwd: Path, environ: Mapping[str, str]) -> str | None:
    """OWNER/REPO of `git remote get-url origin`, read from the repository's config when its
    layout is plain: the task CLI asks at every call, and a git process costs more than the
    rest of a `peek` that nothing changed for."""
    git = shutil.which("git", path=environ.get("PATH", os.defpath))
    layout = git_files.discover(environ, git, str(cwd)) if git else None
    if layout is not None and layout.url is not None:
        return _from_remote_url(layout.url)
    from ralphpy import programs            # subprocess: only when git itself must answer
    try:
        done = programs.run([*programs.GIT, "remote", "get-url", "origin"], cwd=cwd, env=environ,
                            timeout=30)
    except (OSError, programs.TimeoutExpired):
        return None
    return _from_remote_url(done.out) if done.code == 0 else None


def parse(setting: str, environ: Mapping[str, str], cwd: Path) -> Target:
    """The target a `tasks` setting names; UsageError (one line) when it names none."""
    rest = setting[len(NAME) + 1:] if setting.startswith(NAME + ":") else ""
    where, _, query = rest.partition("?")
    options = parse_qs(query, keep_blank_values=True)
    unknown = sorted(set(options) - {"label"})
    if unknown:
        raise UsageError(f"--tasks {setting}: unknown option '{unknown[0]}' (known: label)")
    label = (options.get("label") or [DEFAULT_LABEL])[-1].strip()
    if not label:
        raise UsageError(f"--tasks {setting}: label= needs a label name")
    where = where or environ.get("GITHUB_REPOSITORY", "") or _origin(cwd, environ) or ""
    owner, _, repo = where.partition("/")
    if not owner or not repo or "/" in repo:
        raise UsageError(f"--tasks {setting}: no repository: write github:OWNER/REPO, "
                         "or run in a clone whose origin is on GitHub")
    return Target(owner, repo, label)


def api_url(environ: Mapping[str, str]) -> str:
    return (environ.get("GITHUB_API_URL", "") or API_DEFAULT).rstrip("/")


def token(environ: Mapping[str, str]) -> str:
    """The token, never printed: GH_TOKEN, GITHUB_TOKEN, else `gh auth token` (gh's own
    login) when gh is on PATH. AuthFailed (the auth exit code) when there is none."""
    for name in ("GH_TOKEN", "GITHUB_TOKEN"):
        if environ.get(name, "").strip():
            return environ[name].strip()
    gh = shutil.which("gh", path=environ.get("PATH", os.defpath))
    if gh:
        from ralphpy import programs
        try:
            done = programs.run([gh, "auth", "token"], cwd=os.getcwd(), env=environ, timeout=30)
            if done.code == 0 and done.out.strip():
                return done.out.strip()
        except (OSError, programs.TimeoutExpired):
            pass
    raise AuthFailed("GitHub: no token: set GH_TOKEN or GITHUB_TOKEN, or log in with "
                     "gh auth login")


__all__ = ["Target", "NAME", "DEFAULT_LABEL", "API_DEFAULT", "is_github", "parse", "api_url",
           "token"]

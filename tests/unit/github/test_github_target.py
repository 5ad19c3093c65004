"""What `--tasks github...` names, where the token comes from, and when a rate limit lifts."""
from __future__ import annotations

from pathlib import Path

import pytest

from ralphpy.errors import AuthFailed, UsageError
from ralphpy.github import client, target


def test_the_setting_names_repository_and_label(tmp_path: Path):
    assert target.parse("github:acme/w?label=agent", {}, tmp_path) == target.Target(
        "acme", "w", "agent")
    assert target.parse("github", {"GITHUB_REPOSITORY": "o/r"}, tmp_path) == target.Target(
        "o", "r", "ralph")
    with pytest.raises(UsageError, match="no repository"):
        target.parse("github", {"PATH": ""}, tmp_path)
    with pytest.raises(UsageError, match="label= needs a label name"):
        target.parse("github:a/b?label=", {}, tmp_path)


@pytest.mark.parametrize("url", ["https://github.com/acme/widgets.git",
                                 "git@github.com:acme/widgets.git",
                                 "ssh://git@ghe.example.com/acme/widgets"])
def test_a_remote_url_names_its_repository(url):
    assert target._from_remote_url(url) == "acme/widgets"


def test_the_token_comes_from_gh_token_then_github_token_and_is_required():
    assert target.token({"GH_TOKEN": "a", "GITHUB_TOKEN": "b"}) == "a"
    assert target.token({"GITHUB_TOKEN": "b"}) == "b"
    with pytest.raises(AuthFailed, match="no token"):
        target.token({"PATH": ""})


def test_a_rate_limit_lifts_at_its_reset_or_after_retry_after():
    assert client._limit_wait(403, {"x-ratelimit-remaining": "0",
                                    "x-ratelimit-reset": "1010"}, now=1000.0) == 11.0
    assert client._limit_wait(429, {"retry-after": "30"}, now=0.0) == 30.0
    assert client._limit_wait(403, {"x-ratelimit-remaining": "12"}, now=0.0) is None
    assert client._limit_wait(500, {"retry-after": "30"}, now=0.0) is None


def _git_that_logs(tmp_path: Path) -> dict:
    """An environ whose PATH's git records each start, then runs the real git."""
    import shutil
    folder = tmp_path / "bin"
    folder.mkdir()
    log = tmp_path / "git-runs.txt"
    (folder / "git").write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {shutil.which("git")} "$@"\n')
    (folder / "git").chmod(0o755)
    return {"PATH": f"{folder}:/usr/bin:/bin", "HOME": str(tmp_path)}


def test_the_origin_is_read_from_the_git_config_without_starting_git(tmp_path: Path):
    import subprocess
    env = _git_that_logs(tmp_path)
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "remote", "add", "origin", "git@github.com:acme/widgets.git"],
                   cwd=repo, check=True)
    assert target.parse("github", env, repo / "") == target.Target("acme", "widgets", "ralph")
    assert not (tmp_path / "git-runs.txt").exists()
    # A config the reader cannot be sure of (URL rewriting) is git's to answer.
    subprocess.run(["git", "config", "url.git@github.com:.insteadOf", "gh:"], cwd=repo,
                   check=True)
    subprocess.run(["git", "remote", "set-url", "origin", "gh:acme/gadgets"], cwd=repo,
                   check=True)
    assert target.parse("github", env, repo) == target.Target("acme", "gadgets", "ralph")
    assert "remote get-url origin" in (tmp_path / "git-runs.txt").read_text()

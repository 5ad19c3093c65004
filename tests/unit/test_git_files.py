"""The git facts read from a repository's files (git_files) against real git: wherever
the files answer, the answer is byte for byte what `git rev-parse --show-toplevel`,
`git remote get-url origin` and `git branch --show-current` print; wherever they cannot be
sure, git is asked. Real repositories in tmp dirs, the real `git`."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import git
from ralphpy.tasks.errors import TaskError
from ralphpy.tasks.git_scope import Git, resolve_scope

QUESTIONS = {"toplevel": ("rev-parse", "--show-toplevel"),
             "origin_url": ("remote", "get-url", "origin"),
             "current_branch": ("branch", "--show-current")}


def real_git(env: dict[str, str], *args: str) -> tuple[int, str]:
    proc = subprocess.run(["git", *args], env=env, capture_output=True)
    return proc.returncode, proc.stdout.decode("utf-8", "surrogateescape").rstrip("\n")


def ours(env: dict[str, str], question: str) -> tuple[int, str]:
    git_ = Git(os.getcwd(), env)
    if question == "toplevel":
        try:
            return 0, git_.toplevel()
        except TaskError:
            return 128, ""
    return getattr(git_, question)()


def same_as_git(env: dict[str, str]) -> None:
    for question, args in QUESTIONS.items():
        mine, theirs = ours(env, question), real_git(env, *args)
        if theirs[0] == 0:
            assert mine == theirs, question
        else:
            assert mine[0] != 0, question


def from_files(env: dict[str, str]) -> dict[str, str | None]:
    """What the files alone answer (None: git is asked), after checking them against git."""
    same_as_git(env)
    layout = Git(os.getcwd(), env).layout()
    if layout is None:
        return {}
    from ralphpy import git_files
    return {"toplevel": layout.toplevel, "origin_url": layout.url,
            "current_branch": git_files.current_branch(layout)}


@pytest.fixture
def env(base_env: dict[str, str]) -> dict[str, str]:
    return dict(base_env)


@pytest.fixture
def repo(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(git_repo)
    return git_repo


def test_plain_repository_from_its_root_and_a_subdirectory(repo, env, monkeypatch):
    assert from_files(env) == {"toplevel": str(repo), "origin_url": "https://github.com/acme/widgets.git",
                               "current_branch": "main"}
    monkeypatch.chdir(repo / "specs")
    assert from_files(env)["toplevel"] == str(repo)


def test_branch_with_a_slash_unborn_branch_and_packed_refs(repo, env, tmp_path, monkeypatch):
    git(repo, "checkout", "-q", "-b", "feature/x", env=env)
    assert from_files(env)["current_branch"] == "feature/x"
    git(repo, "pack-refs", "--all", env=env)
    assert not (repo / ".git" / "refs" / "heads" / "feature" / "x").exists()
    assert from_files(env)["current_branch"] == "feature/x"
    fresh = tmp_path / "fresh"
    git(tmp_path, "init", "-q", "-b", "trunk", str(fresh), env=env)
    monkeypatch.chdir(fresh)
    assert from_files(env) == {"toplevel": str(fresh), "origin_url": None, "current_branch": "trunk"}


def test_linked_worktree_reads_head_of_its_own_and_config_of_the_common_dir(repo, env, tmp_path,
                                                                           monkeypatch):
    git(repo, "worktree", "add", "-q", "-b", "wt-branch", str(tmp_path / "wt"), env=env)
    monkeypatch.chdir(tmp_path / "wt")
    assert from_files(env) == {"toplevel": str(tmp_path / "wt"),
                               "origin_url": "https://github.com/acme/widgets.git",
                               "current_branch": "wt-branch"}


def test_dot_git_file_pointing_elsewhere(env, tmp_path, monkeypatch):
    work = tmp_path / "work"
    git(tmp_path, "init", "-q", "-b", "main", f"--separate-git-dir={tmp_path / 'store.git'}",
        str(work), env=env)
    git(work, "remote", "add", "origin", "git@github.com:acme/split.git", env=env)
    assert (work / ".git").is_file()
    monkeypatch.chdir(work)
    assert from_files(env) == {"toplevel": str(work), "origin_url": "git@github.com:acme/split.git",
                               "current_branch": "main"}


def test_detached_head_and_no_remote_are_left_to_git(repo, env):
    git(repo, "checkout", "-q", "--detach", env=env)
    git(repo, "remote", "remove", "origin", env=env)
    assert from_files(env) == {"toplevel": str(repo), "origin_url": None, "current_branch": None}
    assert Git(str(repo), env).current_branch() == (0, "")  # git's answer: detached
    assert Git(str(repo), env).origin_url()[0] != 0


def test_remote_section_and_key_names_ignore_case_and_the_first_url_wins(repo, env):
    config = repo / ".git" / "config"
    text = config.read_text().replace('[remote "origin"]', '[Remote "origin"]')
    config.write_text(text + '[remote "origin"]\n\tURL = https://example.com/second/url.git\n')
    assert from_files(env)["origin_url"] == "https://github.com/acme/widgets.git"
    config.write_text(text.replace("url =", "URL="))
    assert from_files(env)["origin_url"] == "https://github.com/acme/widgets.git"


def test_symlinked_working_directory_gives_the_physical_root(repo, env, tmp_path, monkeypatch):
    (tmp_path / "link").symlink_to(repo)
    monkeypatch.chdir(tmp_path / "link" / "specs")
    assert from_files(env)["toplevel"] == str(repo)


def test_git_variables_for_identity_transport_and_tracing_change_nothing(repo, env):
    env.update({"GIT_SSL_CAINFO": "/nonexistent.crt", "GIT_AUTHOR_NAME": "A", "GIT_EDITOR": "true",
                "GIT_TRACE": "0", "GIT_SSH_COMMAND": "ssh", "GIT_CONFIG_NOSYSTEM": "1"})
    assert from_files(env)["origin_url"] == "https://github.com/acme/widgets.git"


@pytest.mark.parametrize("extra", [
    {"GIT_DIR": "{repo}/.git"},
    {"GIT_NAMESPACE": "other"},
    {"GIT_WORK_TREE": "{repo}"},
    {"GIT_CEILING_DIRECTORIES": "{repo}"},
    {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "url.https://mirror/.insteadOf",
     "GIT_CONFIG_VALUE_0": "https://github.com/"},
    {"GIT_CONFIG_PARAMETERS": "'remote.origin.url'='elsewhere'"},
], ids=["GIT_DIR", "GIT_NAMESPACE", "GIT_WORK_TREE", "ceiling", "GIT_CONFIG_COUNT", "git -c"])
def test_git_environment_variables_leave_every_answer_to_git(repo, env, extra, monkeypatch):
    env.update({k: v.format(repo=repo) for k, v in extra.items()})
    monkeypatch.chdir(repo / "specs")
    assert from_files(env) == {}


@pytest.mark.parametrize("config", [
    '[url "https://mirror.example/"]\n\tinsteadOf = https://github.com/\n',
    "[include]\n\tpath = elsewhere\n",
    '[includeIf "gitdir:/"]\n\tpath = elsewhere\n',
    "[core]\n\tworktree = /tmp\n",
    "[core]\n\tbare = true\n",
    "[extensions]\n\tworktreeConfig = true\n",
    '[remote "origin"]\n\turl = "https://quoted/url.git"\n',
    '[remote "origin"]\n\turl = https://github.com/a/b.git # a comment\n',
    "[remote.origin]\n\turl = https://old/style.git\n",
    "[core]\n\tabbrev = 12 \\\n\t\t\n",
], ids=["insteadOf", "include", "includeIf", "core.worktree", "bare", "extensions", "quoted",
        "comment", "old-style", "continued"])
def test_unusual_repository_config_is_left_to_git(repo, env, config):
    config_file = repo / ".git" / "config"
    config_file.write_text(config + config_file.read_text())
    assert from_files(env) == {}


def test_url_rewriting_in_the_global_config_is_left_to_git(repo, env):
    Path(env["HOME"], ".gitconfig").write_text(
        '[url "https://mirror.example/"]\n\tinsteadOf = https://github.com/\n')
    assert from_files(env) == {}
    assert Git(str(repo), env).origin_url() == (0, "https://mirror.example/acme/widgets.git")
    Path(env["HOME"], ".gitconfig").write_text('[user]\n\tname = Someone\n[credential "https://x"]\n\thelper = h\n')
    assert from_files(env)["origin_url"] == "https://github.com/acme/widgets.git"


def test_inside_the_git_directory_is_left_to_git(repo, env, monkeypatch):
    monkeypatch.chdir(repo / ".git" / "refs")
    assert from_files(env) == {}
    with pytest.raises(TaskError):
        Git(os.getcwd(), env).toplevel()


def test_a_head_git_would_not_take_is_left_to_git(repo, env):
    (repo / ".git" / "HEAD").write_text("garbage\n")
    assert from_files(env) == {}


def test_symbolic_branch_ref_is_left_to_git(repo, env):
    git(repo, "symbolic-ref", "refs/heads/alias", "refs/heads/main", env=env)
    git(repo, "symbolic-ref", "HEAD", "refs/heads/alias", env=env)
    assert from_files(env)["current_branch"] is None
    assert Git(str(repo), env).current_branch() == (0, "main")


def test_outside_any_repository_git_decides(env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert from_files(env) == {}


def test_without_git_on_path_nothing_is_a_repository(repo, env, tmp_path):
    env["PATH"] = str(tmp_path / "empty")
    assert Git(str(repo), env).layout() is None
    with pytest.raises(TaskError, match="not inside a git repository"):
        resolve_scope(Git(str(repo), env))

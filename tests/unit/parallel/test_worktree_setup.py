"""A new worktree's set-up (.worktreeinclude, the worktree_setup command), on real git
repositories and real worktrees in tmp dirs."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from ralphpy.errors import SessionNotStarted
from ralphpy.parallel import worktree_setup, worktrees
from test_worktrees import RUN, commit, git, repo  # noqa: F401

ENV = dict(os.environ)


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_included_files_are_those_matching_a_pattern_that_git_ignores(repo):
    commit(repo, ".gitignore", ".env*\nconfig/local/\nbuild/\n")
    write(repo, {".worktreeinclude": "# env files, but not the test one\n.env*\n!.env.test\n"
                                     "config/**\n",
                 ".env": "A=1\n", ".env.test": "T=1\n", ".env.local": "L=1\n",
                 "config/local/db.yml": "db\n", "config/shared.yml": "untracked, not ignored\n",
                 "build/out.bin": "not included\n",
                 ".ralph/tasks.db": "ralph's own\n"})
    assert worktree_setup.included(repo, ENV) == [".env", ".env.local", "config/local/db.yml"]


def test_without_a_worktreeinclude_file_nothing_is_included(repo):
    commit(repo, ".gitignore", ".env\n")
    write(repo, {".env": "A=1\n"})
    assert worktree_setup.included(repo, ENV) == []


def test_copy_keeps_paths_and_never_overwrites_what_the_worktree_has(repo):
    commit(repo, ".gitignore", ".env\nsecrets/\n")
    write(repo, {".worktreeinclude": ".env\nsecrets/\n", ".env": "A=main\n",
                 "secrets/key.pem": "key\n"})
    wt = worktrees.create(repo, RUN, "t1", "main", env=ENV)
    (wt.path / ".env").write_text("A=mine\n")
    assert worktree_setup.copy_included(repo, wt.path, ENV) == ["secrets/key.pem"]
    assert (wt.path / ".env").read_text() == "A=mine\n"
    assert (wt.path / "secrets" / "key.pem").read_text() == "key\n"
    assert git(wt.path, "status", "--porcelain") == ""         # ignored there too


@pytest.mark.parametrize("command, ending", [
    ("echo starting; echo 'npm ERR! missing' >&2; exit 2", "exited 2: npm ERR! missing"),
    ("sleep 30", "timed out after 0.5s"),
], ids=["exits", "times-out"])
def test_a_failing_command_raises_with_its_status_and_last_line(tmp_path, command, ending):
    with pytest.raises(SessionNotStarted) as err:
        worktree_setup.run_command(command, tmp_path, ENV, timeout=0.5, kill_grace=0.5)
    assert str(err.value) == f"worktree set-up `{command}` {ending}"


def test_the_command_runs_in_the_worktree_with_the_environment_given(tmp_path):
    worktree_setup.run_command('echo "$RALPH_SLOT" > slot.txt', tmp_path,
                               {**ENV, "RALPH_SLOT": "3"}, timeout=10, kill_grace=1)
    assert (tmp_path / "slot.txt").read_text() == "3\n"

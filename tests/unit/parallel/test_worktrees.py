"""Worktrees of --parallel, on real git repositories in tmp dirs."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ralphpy.parallel import worktrees
from ralphpy.errors import UsageError

RUN = "20261122-0100-ab12"
ENV = dict(os.environ)      # the run's environment, which every git call gets


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def repo(git_repo: Path) -> Path:
    # Identity for the commits of the tests and of rebases; .ralph/ ignored as the task CLI does.
    git(git_repo, "config", "user.name", "Test")
    git(git_repo, "config", "user.email", "test@example.com")
    (git_repo / ".ralph").mkdir()
    (git_repo / ".ralph" / ".gitignore").write_text("*\n")
    return git_repo.resolve()


def commit(cwd: Path, name: str, text: str, message: str = "change") -> str:
    (cwd / name).write_text(text)
    git(cwd, "add", name)
    git(cwd, "commit", "-q", "-m", message)
    return git(cwd, "rev-parse", "HEAD")


def test_create_makes_a_worktree_on_a_new_branch_from_the_run_branch(repo):
    wt = worktrees.create(repo, RUN, "api-login", "main", env=ENV)
    assert wt.branch == f"ralph/{RUN}/api-login"
    assert wt.path == repo / ".ralph" / "worktrees" / RUN / "api-login"
    assert git(wt.path, "branch", "--show-current") == wt.branch
    assert git(wt.path, "rev-parse", "HEAD") == git(repo, "rev-parse", "main")
    assert git(repo, "status", "--porcelain") == ""     # the main checkout sees nothing


@pytest.mark.parametrize("slug", ["web/01", "fix: the ~bug^?", "..x.lock", "ünïcode task",
                                  ".hidden-", "@{weird}", "a" * 100],
                         ids=["slash", "punctuation", "dots-and-lock", "unicode", "leading-dot",
                              "at-brace", "long"])
def test_a_task_slug_becomes_a_valid_and_distinct_branch_name(repo, slug):
    safe = worktrees.branch_safe(slug)
    git(repo, "check-ref-format", "--branch", f"ralph/{RUN}/{safe}")
    assert safe != worktrees.branch_safe(slug + "x")
    wt = worktrees.create(repo, RUN, slug, "main", env=ENV)
    assert wt.task == slug and wt.path.is_dir()


def test_two_slugs_that_clean_up_alike_get_different_branches():
    assert worktrees.branch_safe("a/b") != worktrees.branch_safe("a-b")
    assert worktrees.branch_safe("a-b") == "a-b"


def test_fast_forward_merge_moves_the_checked_out_run_branch_and_its_files(repo):
    wt = worktrees.create(repo, RUN, "t1", "main", env=ENV)
    head = commit(wt.path, "feature.txt", "new\n")
    result = worktrees.merge_back(wt, "ff", env=ENV)
    assert result.merged and not result.conflict
    assert git(repo, "rev-parse", "main") == head
    assert (repo / "feature.txt").read_text() == "new\n"
    assert git(repo, "status", "--porcelain") == ""


def test_a_task_without_commits_counts_as_merged(repo):
    wt = worktrees.create(repo, RUN, "t1", "main", env=ENV)
    result = worktrees.merge_back(wt, "ff", env=ENV)
    assert result.merged and "no new commits" in result.message


def test_fast_forward_only_refuses_when_the_run_branch_moved_and_keeps_the_branch(repo):
    first = worktrees.create(repo, RUN, "t1", "main", env=ENV)
    second = worktrees.create(repo, RUN, "t2", "main", env=ENV)
    commit(first.path, "one.txt", "1\n")
    theirs = commit(second.path, "two.txt", "2\n")
    assert worktrees.merge_back(first, "ff", env=ENV).merged
    result = worktrees.merge_back(second, "ff", env=ENV)
    assert (result.merged, result.conflict) == (False, True)
    assert "not a fast-forward" in result.message
    assert git(repo, "rev-parse", second.branch) == theirs


def test_rebase_merge_brings_a_task_onto_a_run_branch_that_moved(repo):
    first = worktrees.create(repo, RUN, "t1", "main", env=ENV)
    second = worktrees.create(repo, RUN, "t2", "main", env=ENV)
    commit(first.path, "one.txt", "1\n")
    commit(second.path, "two.txt", "2\n")
    assert worktrees.merge_back(first, "rebase", env=ENV).merged
    result = worktrees.merge_back(second, "rebase", env=ENV)
    assert result.merged, result.message
    assert (repo / "one.txt").exists() and (repo / "two.txt").exists()
    assert git(repo, "rev-list", "--merges", "--count", "main") == "0"   # linear history
    assert git(repo, "rev-list", "--count", "main") == "3"


def test_a_conflicting_pair_merges_one_and_keeps_the_other_branch_with_the_reason(repo):
    first = worktrees.create(repo, RUN, "t1", "main", env=ENV)
    second = worktrees.create(repo, RUN, "t2", "main", env=ENV)
    commit(first.path, "README.md", "first version\n")
    theirs = commit(second.path, "README.md", "second version\n")
    assert worktrees.merge_back(first, "rebase", env=ENV).merged
    before = git(repo, "rev-parse", "main")
    result = worktrees.merge_back(second, "rebase", env=ENV)
    assert (result.merged, result.conflict) == (False, True)
    assert "conflicts in README.md" in result.message and second.branch in result.message
    assert git(repo, "rev-parse", second.branch) == theirs      # branch kept as it was
    assert git(second.path, "status", "--porcelain") == ""       # rebase aborted cleanly
    assert git(repo, "rev-parse", "main") == before
    assert (repo / "README.md").read_text() == "first version\n"


def test_a_dirty_main_checkout_is_not_touched_and_the_reason_is_given(repo):
    wt = worktrees.create(repo, RUN, "t1", "main", env=ENV)
    commit(wt.path, "feature.txt", "new\n")
    before = git(repo, "rev-parse", "main")
    (repo / "README.md").write_text("my local edit\n")
    result = worktrees.merge_back(wt, "rebase", env=ENV)
    assert (result.merged, result.conflict) == (False, False)
    assert "uncommitted changes" in result.message and wt.branch in result.message
    assert git(repo, "rev-parse", "main") == before
    assert (repo / "README.md").read_text() == "my local edit\n"


def test_a_task_sources_own_files_are_not_uncommitted_changes_but_a_user_edit_still_is(repo):
    (repo / ".tickets").mkdir()
    commit(repo, ".tickets/t-1.md", "---\nid: t-1\nstatus: open\n---\n# One\n", "ticket")
    wt = worktrees.create(repo, RUN, "t-1", "main", env=ENV)
    head = commit(wt.path, "feature.txt", "new\n")
    (repo / ".tickets" / "t-1.md").write_text("---\nid: t-1\nstatus: closed\n---\n# One\n")
    result = worktrees.merge_back(wt, "ff", env={**ENV, "RALPH_TASKS": "tk"})
    assert result.merged, result.message
    assert git(repo, "rev-parse", "main") == head                # tk's status edit: merged
    second = worktrees.create(repo, RUN, "t-2", "main", env=ENV)
    commit(second.path, "other.txt", "new\n")
    (repo / "README.md").write_text("my local edit\n")
    result = worktrees.merge_back(second, "ff", env={**ENV, "RALPH_TASKS": "tk"})
    assert not result.merged and "uncommitted changes" in result.message
    assert git(repo, "rev-parse", "main") == head


def test_a_run_branch_checked_out_nowhere_is_moved_without_touching_the_main_checkout(repo):
    git(repo, "branch", "ralph-run")
    wt = worktrees.create(repo, RUN, "t1", "ralph-run", env=ENV)
    head = commit(wt.path, "feature.txt", "new\n")
    result = worktrees.merge_back(wt, "ff", env=ENV)
    assert result.merged, result.message
    assert git(repo, "rev-parse", "ralph-run") == head
    assert not (repo / "feature.txt").exists()              # main is still checked out as it was
    assert git(repo, "branch", "--show-current") == "main"


def test_strategy_none_leaves_the_branch_for_review(repo):
    wt = worktrees.create(repo, RUN, "t1", "main", env=ENV)
    head = commit(wt.path, "feature.txt", "new\n")
    result = worktrees.merge_back(wt, "none", env=ENV)
    assert (result.merged, result.conflict) == (False, False)
    assert "left for review" in result.message
    worktrees.remove(wt, env=ENV)
    assert git(repo, "rev-parse", wt.branch) == head


def test_uncommitted_work_in_a_worktree_is_reported_not_merged(repo):
    wt = worktrees.create(repo, RUN, "t1", "main", env=ENV)
    commit(wt.path, "feature.txt", "new\n")
    (wt.path / "feature.txt").write_text("edited, not committed\n")
    result = worktrees.merge_back(wt, "ff", env=ENV)
    assert result.merged and "uncommitted changes in the worktree were not merged" in result.message
    assert (repo / "feature.txt").read_text() == "new\n"


def test_remove_deletes_the_worktree_and_the_branch_once_merged(repo):
    wt = worktrees.create(repo, RUN, "t1", "main", env=ENV)
    commit(wt.path, "feature.txt", "new\n")
    worktrees.merge_back(wt, "ff", env=ENV)
    worktrees.remove(wt, env=ENV)
    assert not wt.path.exists()
    assert git(repo, "branch", "--list", wt.branch) == ""
    assert len(git(repo, "worktree", "list").splitlines()) == 1


def test_cleanup_run_removes_every_worktree_of_the_run_and_keeps_unmerged_branches(repo):
    merged = worktrees.create(repo, RUN, "merged", "main", env=ENV)
    commit(merged.path, "a.txt", "a\n")
    worktrees.merge_back(merged, "ff", env=ENV)
    unmerged = worktrees.create(repo, RUN, "unmerged", "main", env=ENV)
    kept = commit(unmerged.path, "b.txt", "b\n")
    other = worktrees.create(repo, "other-run", "t1", "main", env=ENV)
    removed = worktrees.cleanup_run(repo, RUN, "main", env=ENV)
    assert sorted(removed) == sorted([merged.path, unmerged.path])
    assert not (repo / ".ralph" / "worktrees" / RUN).exists()
    assert [line.split()[0] for line in git(repo, "worktree", "list").splitlines()] == [
        str(repo), str(other.path)]
    assert git(repo, "branch", "--list", merged.branch) == ""
    assert git(repo, "rev-parse", unmerged.branch) == kept


def test_cleanup_run_after_a_kill_removes_worktree_folders_git_forgot(repo):
    wt = worktrees.create(repo, RUN, "t1", "main", env=ENV)
    git(repo, "worktree", "remove", "--force", str(wt.path))
    wt.path.mkdir(parents=True)                        # a half-created folder
    assert worktrees.cleanup_run(repo, RUN, env=ENV) == [wt.path]
    assert not wt.path.exists()


def test_creating_a_task_again_replaces_a_stale_worktree_and_keeps_the_old_attempt(repo):
    old = worktrees.create(repo, RUN, "t1", "main", env=ENV)
    attempt = commit(old.path, "partial.txt", "half done\n")
    (old.path / "scratch.txt").write_text("uncommitted\n")
    new = worktrees.create(repo, RUN, "t1", "main", env=ENV)     # e.g. on resume after a kill
    assert new.path == old.path and not (new.path / "partial.txt").exists()
    assert new.previous_branch == f"{old.branch}@2"
    assert git(repo, "rev-parse", new.previous_branch) == attempt
    assert git(new.path, "rev-parse", "HEAD") == git(repo, "rev-parse", "main")


@pytest.mark.parametrize("call, message", [
    (lambda repo: worktrees.create(repo, RUN, "t1", "no-such-branch", env=ENV),
     "run branch 'no-such-branch' does not exist"),
    (lambda repo: worktrees.merge_back(worktrees.create(repo, RUN, "t1", "main", env=ENV),
                                       "squash", env=ENV),
     "unknown merge strategy 'squash' \\(known: ff, rebase, none\\)"),
], ids=["missing-run-branch", "unknown-strategy"])
def test_bad_input_is_a_usage_error(repo, call, message):
    with pytest.raises(UsageError, match=message):
        call(repo)


def test_rebasing_a_branch_whose_worktree_is_gone_reports_it_and_keeps_the_branch(repo):
    first = worktrees.create(repo, RUN, "t1", "main", env=ENV)
    second = worktrees.create(repo, RUN, "t2", "main", env=ENV)
    commit(first.path, "one.txt", "1\n")
    theirs = commit(second.path, "two.txt", "2\n")
    worktrees.merge_back(first, "rebase", env=ENV)
    git(repo, "worktree", "remove", "--force", str(second.path))
    result = worktrees.merge_back(second, "rebase", env=ENV)
    assert (result.merged, result.conflict) == (False, True) and "is gone" in result.message
    assert git(repo, "rev-parse", second.branch) == theirs


@pytest.mark.parametrize("environ, expected", [
    ({}, {"RALPH_TASKS_DB": "{repo}/.ralph/tasks.db", "RALPH_SCOPE_BRANCH": "main"}),
    ({"RALPH_TASKS_DB": "data/t.db", "RALPH_SCOPE_BRANCH": "main"},
     {"RALPH_TASKS_DB": "{repo}/data/t.db"}),
    ({"RALPH_TASKS_DB": "/abs/t.db", "RALPH_SCOPE_BRANCH": ""},
     {"RALPH_TASKS_DB": "/abs/t.db", "RALPH_SCOPE_BRANCH": "main"}),
], ids=["defaults", "relative-db-and-scope-set", "absolute-db-empty-scope"])
def test_a_worktree_session_uses_the_backlog_and_scope_of_the_run(repo, environ, expected):
    wt = worktrees.create(repo, RUN, "t1", "main", env=ENV)
    extra = worktrees.session_env(wt, environ, repo)
    assert extra == {k: v.format(repo=repo) for k, v in expected.items()}

"""sync.branch: the git steps of --sync, on a real bare origin and clones in tmp dirs."""
from __future__ import annotations

from pathlib import Path

import pytest

from fleethelp import Fleet, make_fleet
from ralphpy.errors import UsageError
from ralphpy.parallel.git import Git
from ralphpy.sync import branch


@pytest.fixture
def fleet(tmp_path: Path, base_env: dict, bin_dir: Path) -> Fleet:
    return make_fleet(tmp_path, base_env, bin_dir, machines=2)


def target(fleet: Fleet, i: int = 0) -> branch.Target:
    return branch.resolve(fleet.clones[i], fleet.env_for(i))


def ahead(git: Git, t: branch.Target) -> int:
    return branch.ahead(git, t, branch.remote_head(git, t))


def test_the_shared_branch_is_origin_s_branch_of_the_same_name_without_an_upstream(fleet):
    fleet.git(0, "branch", "--unset-upstream")
    t = target(fleet)
    assert (t.top, t.branch, t.shared, t.tracking) == (
        fleet.clones[0], "main", "origin/main", "refs/remotes/origin/main")


def test_the_shared_branch_is_the_upstream_when_the_branch_has_one_on_another_remote(fleet):
    fleet.git(0, "remote", "add", "team", str(fleet.origin))
    fleet.git(0, "fetch", "-q", "team")
    fleet.git(0, "checkout", "-q", "-b", "feature", "--track", "team/main")
    t = target(fleet)
    assert (t.branch, t.remote, t.remote_branch, t.shared) == ("feature", "team", "main",
                                                               "team/main")


@pytest.mark.parametrize("arrange,message", [
    (lambda f: f.git(0, "remote", "remove", "origin"),
     '--sync needs the git remote "origin": {top} has none. Run: git remote add origin <url>'),
    (lambda f: f.git(0, "checkout", "-q", "--detach"),
     "--sync needs a branch: HEAD is detached in {top}. Run: git checkout <branch>"),
    (lambda f: (f.clones[0] / ".git" / "rebase-merge").mkdir(),
     "--sync cannot start: a rebase is under way in {top}. "
     "Run: git rebase --continue or git rebase --abort"),
], ids=["no-origin", "detached", "rebase-under-way"])
def test_a_checkout_that_cannot_sync_is_one_line_naming_the_next_step(fleet, arrange, message):
    arrange(fleet)
    with pytest.raises(UsageError) as err:
        target(fleet)
    assert str(err.value) == message.format(top=fleet.clones[0])


def test_outside_a_repository_the_error_says_so(tmp_path, base_env):
    with pytest.raises(UsageError, match="--sync needs a git repository: .* is not inside one"):
        branch.resolve(tmp_path, base_env)


def test_a_rebase_brings_origin_s_commits_under_local_ones_and_keeps_uncommitted_changes(fleet):
    t, git = target(fleet), branch.git_for(fleet.env_for(0))
    fleet.commit(1, "other.txt", "from host2\n", push=True)
    mine = fleet.commit(0, "mine.txt", "from host1\n")
    (fleet.clones[0] / "README.md").write_text("edited, not committed\n")
    assert branch.fetch(git, t) == ""
    u = branch.rebase(git, t)
    assert (u.incoming, u.conflict, u.error, u.stash_kept) == (1, None, "", False)
    assert u.before == mine and u.after != mine
    assert fleet.git(0, "log", "--format=%s", "-3").splitlines() == [
        "mine.txt: from host1", "other.txt: from host2", "initial"]
    assert (fleet.clones[0] / "README.md").read_text() == "edited, not committed\n"
    assert fleet.git(0, "stash", "list") == ""
    assert ahead(git, t) == 1


def test_nothing_to_rebase_when_origin_has_nothing_new(fleet):
    t, git = target(fleet), branch.git_for(fleet.env_for(0))
    fleet.commit(0, "mine.txt", "local\n")
    branch.fetch(git, t)
    u = branch.rebase(git, t)
    assert u.before == u.after and u.incoming == 0


def test_uncommitted_changes_that_do_not_apply_again_stay_in_the_stash_and_the_tree_is_clean(
        fleet):
    t, git = target(fleet), branch.git_for(fleet.env_for(0))
    fleet.commit(1, "shared.txt", "host2's line\n", push=True)
    fleet.commit(0, "mine.txt", "local\n")
    (fleet.clones[0] / "shared.txt").write_text("host1's uncommitted line\n")
    branch.fetch(git, t)
    u = branch.rebase(git, t)
    assert u.stash_kept and u.after != u.before
    assert fleet.git(0, "status", "--porcelain", "--untracked-files=no") == ""
    assert (fleet.clones[0] / "shared.txt").read_text() == "host2's line\n"
    assert "host1's uncommitted line" in fleet.git(0, "stash", "show", "-p", "stash@{0}")


def test_a_conflicting_rebase_is_aborted_and_names_the_files(fleet):
    t, git = target(fleet), branch.git_for(fleet.env_for(0))
    fleet.commit(1, "shared.txt", "host2\n", push=True)
    mine = fleet.commit(0, "shared.txt", "host1\n")
    branch.fetch(git, t)
    u = branch.rebase(git, t)
    assert (u.conflict, u.before, u.after) == (["shared.txt"], mine, mine)
    assert fleet.git(0, "rev-parse", "HEAD") == mine
    assert fleet.git(0, "status", "--porcelain") == ""


def test_a_push_rejected_because_origin_moved_is_a_race(fleet):
    t, git = target(fleet), branch.git_for(fleet.env_for(0))
    fleet.commit(0, "mine.txt", "local\n")
    theirs = fleet.commit(1, "other.txt", "host2\n", push=True)
    pushed = branch.push(git, t)
    assert (pushed.ok, pushed.raced) == (False, True)
    assert branch.remote_head(git, t) == theirs          # fetched: the rebase can follow


def test_a_push_the_remote_refuses_for_another_reason_is_no_race(fleet):
    hook = fleet.origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'main is protected' >&2\nexit 1\n")
    hook.chmod(0o755)
    t, git = target(fleet), branch.git_for(fleet.env_for(0))
    fleet.commit(0, "mine.txt", "local\n")
    pushed = branch.push(git, t)
    assert (pushed.ok, pushed.raced) == (False, False)
    assert "pre-receive hook declined" in pushed.detail


def test_a_push_updates_the_tracking_ref_so_nothing_is_left_ahead(fleet):
    t, git = target(fleet), branch.git_for(fleet.env_for(0))
    head = fleet.commit(0, "mine.txt", "local\n")
    assert ahead(git, t) == 1
    assert branch.push(git, t).ok
    assert fleet.origin_git("rev-parse", "main") == head and ahead(git, t) == 0


def test_a_branch_origin_does_not_have_yet_is_fetched_as_nothing_and_pushed_whole(fleet):
    fleet.git(0, "checkout", "-q", "-b", "topic")
    t, git = target(fleet), branch.git_for(fleet.env_for(0))
    assert t.shared == "origin/topic"
    assert branch.fetch(git, t) == "" and branch.remote_head(git, t) is None
    fleet.commit(0, "topic.txt", "new\n")
    assert branch.push(git, t).ok
    assert fleet.origin_git("log", "-1", "--format=%s", "topic") == "topic.txt: new"


def test_keep_and_reset_keeps_the_commits_on_a_branch_and_resets_to_origin(fleet):
    t, git = target(fleet), branch.git_for(fleet.env_for(0))
    theirs = fleet.commit(1, "shared.txt", "host2\n", push=True)
    first = fleet.commit(0, "shared.txt", "host1\n")
    fleet.git(0, "branch", "ralph/sync/h/t1", first)       # an earlier conflict of the task
    mine = fleet.commit(0, "mine.txt", "more\n")
    (fleet.clones[0] / "README.md").write_text("uncommitted\n")
    branch.fetch(git, t)
    older, reset = branch.keep_and_reset(git, t, "ralph/sync/h/t1")
    assert older == "ralph/sync/h/t1@2"
    assert fleet.git(0, "rev-parse", "ralph/sync/h/t1") == mine
    assert fleet.git(0, "rev-parse", "ralph/sync/h/t1@2") == first
    assert fleet.git(0, "rev-parse", "HEAD") == theirs == reset.after
    assert (fleet.clones[0] / "README.md").read_text() == "uncommitted\n"
    assert not reset.stash_kept and reset.error == ""

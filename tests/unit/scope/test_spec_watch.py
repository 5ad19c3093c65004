"""Scope freeze's spec watch (speed without missing an edit): real inotify watches on
real files in tmp dirs, driven by real edits of every kind a person, an editor, git or an agent
makes. First what spec_watch.changed() answers, then the scope check that trusts it: each
edit is still reported while an unchanged check stats no watched spec file."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ralphpy.scope import snapshot
from ralphpy.scope import hashing
from ralphpy.scope import spec_watch

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="inotify is Linux's; elsewhere every spec is stat'ed")
TEN_S = 10_000_000_000


@pytest.fixture
def specs(tmp_path: Path) -> Path:
    folder = tmp_path / "repo" / "specs"
    folder.mkdir(parents=True)
    for name in ("a.md", "b.md", "c.md"):
        (folder / name).write_text(f"# {name}\n- [ ] works\n")
    return folder


def watch_of(specs: Path, *names: str) -> spec_watch.SpecWatch:
    watch = spec_watch.start({f"specs/{n}": str(specs / n) for n in names or ("a.md", "b.md",
                                                                              "c.md")})
    assert watch is not None, "inotify is not available on this Linux machine"
    assert watch.changed() is None          # first answer: look at everything
    assert watch.changed() == set()         # nothing happened since
    return watch


def edit_in_place(path: Path, text: str) -> None:
    with open(path, "r+") as out:           # same inode, same size
        out.write(text)


def atomic_save(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.swp")
    tmp.write_text(text)
    os.replace(tmp, path)


def test_nothing_changed_is_an_empty_answer_and_costs_no_stat(specs, mocker):
    watch = watch_of(specs)
    stat = mocker.spy(os, "stat")
    assert watch.changed() == set()
    # One stat per watched directory (its identity), none per file.
    assert [call.args[0] for call in stat.call_args_list] == [str(specs)]


@pytest.mark.parametrize("edit", [
    lambda p: edit_in_place(p, "# X"),
    lambda p: p.write_text("longer text than before\n" * 3),
    lambda p: os.truncate(p, 0),
    lambda p: os.utime(p, (0, 0)),
    lambda p: os.chmod(p, 0o600),
    lambda p: atomic_save(p, "saved by an editor\n"),
    lambda p: p.unlink(),
], ids=["in-place-same-size", "rewrite", "truncate", "touch", "chmod", "atomic-save", "delete"])
def test_every_kind_of_edit_names_the_file(specs, edit):
    watch = watch_of(specs)
    edit(specs / "b.md")
    assert watch.changed() == {"specs/b.md"}
    assert watch.changed() == set()


def test_a_file_saved_atomically_is_watched_again_on_its_new_inode(specs):
    watch = watch_of(specs)
    atomic_save(specs / "a.md", "first save\n")
    assert watch.changed() == {"specs/a.md"}
    edit_in_place(specs / "a.md", "FIRST")          # a write to the new inode
    assert watch.changed() == {"specs/a.md"}


def test_a_deleted_spec_that_comes_back_is_named_again(specs):
    watch = watch_of(specs)
    (specs / "c.md").unlink()
    assert watch.changed() == {"specs/c.md"}
    (specs / "c.md").write_text("back\n")
    assert watch.changed() == {"specs/c.md"}
    edit_in_place(specs / "c.md", "BACK")
    assert watch.changed() == {"specs/c.md"}


def test_an_edit_through_a_hard_link_made_later_elsewhere_is_seen(specs, tmp_path):
    watch = watch_of(specs)
    other = tmp_path / "elsewhere"
    other.mkdir()
    os.link(specs / "a.md", other / "alias.md")
    watch.changed()                                  # the new link itself may be named
    edit_in_place(other / "alias.md", "# changed via the alias")
    assert watch.changed() == {"specs/a.md"}


def test_a_renamed_and_replaced_directory_is_watched_again(specs):
    watch = watch_of(specs)
    specs.rename(specs.with_name("specs.old"))
    shutil.copytree(specs.with_name("specs.old"), specs)
    assert watch.changed() == {"specs/a.md", "specs/b.md", "specs/c.md"}
    edit_in_place(specs / "b.md", "# new tree")
    assert watch.changed() == {"specs/b.md"}
    edit_in_place(specs.with_name("specs.old") / "b.md", "# old tree")
    assert watch.changed() == set()                 # not the path the task names any more


def test_a_parent_directory_swapped_under_the_specs_is_caught(specs):
    repo = specs.parent
    watch = watch_of(specs)
    repo.rename(repo.with_name("repo.old"))         # no event reaches the specs watch
    shutil.copytree(repo.with_name("repo.old"), repo)
    assert watch.changed() == {"specs/a.md", "specs/b.md", "specs/c.md"}
    edit_in_place(specs / "a.md", "# swapped")
    assert watch.changed() == {"specs/a.md"}


def test_a_directory_re_pointed_by_a_symlink_is_caught(tmp_path):
    for tree in ("v1", "v2"):
        (tmp_path / tree).mkdir()
        (tmp_path / tree / "a.md").write_text(f"# {tree}\n")
    link = tmp_path / "specs"
    link.symlink_to("v1")
    watch = spec_watch.start({"specs/a.md": str(link / "a.md")})
    assert watch.changed() is None and watch.changed() == set()
    link.unlink()
    link.symlink_to("v2")
    assert watch.changed() == {"specs/a.md"}


def test_a_symlinked_spec_is_named_on_every_check(specs, tmp_path):
    (tmp_path / "shared.md").write_text("# shared\n")
    (specs / "link.md").symlink_to(tmp_path / "shared.md")
    watch = spec_watch.start({"specs/a.md": str(specs / "a.md"),
                              "specs/link.md": str(specs / "link.md")})
    assert watch.unwatched == 1 and watch.changed() is None
    assert watch.changed() == {"specs/link.md"}
    assert watch.changed() == {"specs/link.md"}


def test_a_spec_on_a_filesystem_other_machines_may_write_is_named_on_every_check():
    # /proc is no local disk filesystem: stand-in for NFS, FUSE, 9p (WSL), SMB.
    watch = spec_watch.start({"status": "/proc/self/status"})
    assert watch is not None and watch.unwatched == 1
    assert watch.changed() is None
    assert watch.changed() == {"status"}


def test_a_lost_event_queue_means_look_at_everything(specs):
    watch = watch_of(specs)
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 200_000:
        pytest.skip(f"max_queued_events is {limit}: too many writes to overflow it here")
    fds = [os.open(specs / name, os.O_WRONLY) for name in ("a.md", "b.md")]
    try:                                            # alternate files: events are not merged
        for i in range(limit + 10):
            os.write(fds[i % 2], b"x")
    finally:
        for fd in fds:
            os.close(fd)
    assert watch.changed() is None
    edit_in_place(specs / "c.md", "# after the overflow")
    assert watch.changed() == {"specs/c.md"}


def test_a_file_tracked_later_is_named_once(specs):
    watch = watch_of(specs, "a.md")
    watch.track({"specs/b.md": str(specs / "b.md")})
    assert watch.changed() == {"specs/b.md"}
    assert watch.changed() == set()


# -- the scope check that trusts the watch ---------------------------------------------------

def task(tid: str, spec: str) -> dict:
    return {"id": tid, "title": f"Title {tid}", "description": None, "priority": 1,
            "status": "open", "spec": spec, "steps": None, "deps": []}


@pytest.fixture
def frozen(specs, tmp_path, mocker):
    """A snapshot of 3 tasks on 3 specs, a loop's memory, and the clock 10 s ahead (files are
    past the racy window, so only the watch or a stat can reveal an edit)."""
    mocker.patch.object(hashing, "_clock", return_value=time.time_ns() + TEN_S)
    repo, run_dir = specs.parent, tmp_path / "run"
    tasks = [task(f"t-{n}", f"specs/{n}.md") for n in "abc"]
    snapshot.freeze(run_dir, tasks, repo)
    memory = snapshot.Memory()
    assert not snapshot.check_scope_integrity(run_dir, tasks, repo, memory=memory).changed
    assert memory.watch is not None
    return run_dir, tasks, repo, memory


def test_an_unchanged_check_with_the_watch_stats_no_spec_file(frozen, mocker):
    run_dir, tasks, repo, memory = frozen
    stat = mocker.spy(os, "stat")
    report = snapshot.check_scope_integrity(run_dir, tasks, repo, memory=memory)
    assert not report.changed
    assert not [c for c in stat.call_args_list if str(c.args[0]).endswith(".md")]


@pytest.mark.parametrize("edit", [
    lambda p: (lambda st: (edit_in_place(p, "# X"), os.utime(p, ns=(st.st_atime_ns,
                                                                     st.st_mtime_ns))))(p.stat()),
    lambda p: atomic_save(p, "# b\n- [ ] works\n- [ ] and more\n"),
    lambda p: subprocess.run(["sed", "-i", "s/works/fails/", str(p)], check=True),
    lambda p: p.unlink(),
], ids=["same-size-mtime-restored", "atomic-save", "sed-i", "delete"])
def test_each_edit_is_reported_by_the_check_that_trusts_the_watch(frozen, edit):
    run_dir, tasks, repo, memory = frozen
    edit(repo / "specs" / "b.md")
    report = snapshot.check_scope_integrity(run_dir, tasks, repo, memory=memory)
    assert [(c.task_id, c.spec) for c in report.spec_modified] == [("t-b", "specs/b.md")]
    again = snapshot.check_scope_integrity(run_dir, tasks, repo, memory=memory)
    assert [c.task_id for c in again.spec_modified] == ["t-b"]   # still changed, not forgotten


def test_an_edit_undone_before_the_check_is_no_change(frozen):
    run_dir, tasks, repo, memory = frozen
    path = repo / "specs" / "a.md"
    before = path.read_text()
    path.write_text("# edited\n")
    path.write_text(before)
    assert not snapshot.check_scope_integrity(run_dir, tasks, repo, memory=memory).changed


def test_with_the_watch_off_every_spec_is_stat_ed_and_edits_are_still_reported(frozen, mocker):
    run_dir, tasks, repo, _ = frozen
    memory = snapshot.Memory(watch_specs=False)
    snapshot.check_scope_integrity(run_dir, tasks, repo, memory=memory)
    assert memory.watch is None
    stat = mocker.spy(os, "stat")
    edit_in_place(repo / "specs" / "c.md", "# C")
    report = snapshot.check_scope_integrity(run_dir, tasks, repo, memory=memory)
    assert [c.task_id for c in report.spec_modified] == ["t-c"]
    assert len([c for c in stat.call_args_list if str(c.args[0]).endswith(".md")]) >= 3

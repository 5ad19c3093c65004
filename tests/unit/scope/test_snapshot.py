"""Scope freeze: snapshot files, each detection type, spec file problems, the stat
cache and its racy-file rule, resume, frozen ids and the run target. Real files in tmp dirs;
the clock is the only thing mocked (to age files without sleeping)."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
import tracemalloc
from pathlib import Path

import pytest
from conftest import wait_for

from ralphpy import errors
from ralphpy.scope import snapshot
from ralphpy.scope import hashing
from ralphpy.scope import target
from ralphpy.backlog.answers import parse_markdown_kv

TEN_S = 10_000_000_000


def task(tid: str, **fields) -> dict:
    """A task in the `_export-json` shape."""
    base = {"id": tid, "title": f"Title {tid}", "description": f"About {tid}", "priority": 2,
            "status": "open", "category": "feat", "spec": None, "ref": None, "assignee": None,
            "lease_expires_at": None, "retry_count": 0, "fail_reason": None,
            "steps": ["one", "two"], "deps": [], "result": None,
            "created_at": "2026-11-22 00:00:00", "updated_at": "2026-11-22 00:00:00",
            "deleted_at": None, "held": None}
    base.update(fields)
    return base


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "specs").mkdir(parents=True)
    (root / "specs" / "a.md").write_text("# A\n- [ ] a works\n")
    (root / "specs" / "b.md").write_text("# B\n- [ ] b works\n")
    return root


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return tmp_path / "repo" / ".ralph" / "runs" / "20261122-000000-abcd"


@pytest.fixture
def aged(mocker):
    """The clock 10 s ahead: every file on disk is older than the racy window."""
    return mocker.patch.object(hashing, "_clock", return_value=time.time_ns() + TEN_S)


def backlog() -> list[dict]:
    return [task("t-1", spec="specs/a.md"), task("t-2", spec="specs/a.md", deps=["t-1"]),
            task("t-3", spec="specs/b.md", priority=1), task("t-4")]


def check(run_dir: Path, tasks: list[dict], repo: Path):
    return snapshot.check_scope_integrity(run_dir, tasks, repo)


def test_freeze_writes_the_three_snapshot_files(repo, run_dir):
    tasks = backlog() + [task("t-gone", status="deleted", spec="specs/b.md")]
    snap = snapshot.freeze(run_dir, tasks, repo)
    assert snap.created and snap.task_ids == ["t-1", "t-2", "t-3", "t-4"]
    assert json.loads((run_dir / "scope.json").read_text()) == tasks   # as reported, deleted too
    assert (run_dir / "scope_task_ids.txt").read_text() == "t-1\nt-2\nt-3\nt-4\n"
    md5_a = hashlib.md5((repo / "specs" / "a.md").read_bytes()).hexdigest()
    md5_b = hashlib.md5((repo / "specs" / "b.md").read_bytes()).hexdigest()
    # The seed's form exactly: `task_id:md5` of the spec file; t-4 has no spec, no line.
    assert (run_dir / "scope_spec_hashes.txt").read_text() == (
        f"t-1:{md5_a}\nt-2:{md5_a}\nt-3:{md5_b}\n")
    defs = (run_dir / "scope_def_hashes.txt").read_text().splitlines()
    assert [line.split(":")[0] for line in defs] == ["t-1", "t-2", "t-3", "t-4"]
    assert defs[0] == f"t-1:{hashing.definition_md5(tasks[0])}"


def test_ids_file_is_sorted_in_c_byte_order_and_comm_ready(repo, run_dir, base_env):
    ids = ["b", "B", "a-1", "a_1", "a", "é", "Z9", "web/01", "t-1", "t-10"]
    snapshot.freeze(run_dir, [task(i, spec="specs/a.md") for i in ids], repo)
    ids_file = run_dir / "scope_task_ids.txt"
    env = {**base_env, "LC_ALL": "C"}
    for name in ("scope_task_ids.txt", "scope_spec_hashes.txt", "scope_def_hashes.txt"):
        by_c = subprocess.run(["sort", str(run_dir / name)], env=env, capture_output=True,
                              check=True).stdout
        assert (run_dir / name).read_bytes() == by_c and by_c.endswith(b"\n")
    sorted_by_c = ids_file.read_bytes()
    live = run_dir.parent / "live.txt"
    live.write_bytes(sorted_by_c.replace(b"B\n", b"") + "ÿ\n".encode())
    comm = subprocess.run(["comm", "--check-order", "-3", str(ids_file), str(live)], env=env,
                          capture_output=True, text=True, check=True).stdout
    assert comm == "B\n\tÿ\n"


@pytest.mark.parametrize("statuses", [("active",), ("active", "done"), ("done",)],
                         ids=["open-to-active", "open-active-done", "open-to-done"])
def test_status_changes_are_normal_progress_not_scope_changes(repo, run_dir, statuses):
    tasks = backlog()
    snapshot.freeze(run_dir, tasks, repo)
    for status in statuses:
        for t in tasks:
            t.update(status=status, assignee="a1b2", updated_at="2026-11-22 01:00:00",
                     retry_count=1, result='{"commit":"abc"}')
        report = check(run_dir, tasks, repo)
        assert not report.changed and report.lines() == []


def test_a_task_added_mid_run_is_reported(repo, run_dir):
    snapshot.freeze(run_dir, backlog(), repo)
    report = check(run_dir, backlog() + [task("t-new", spec="specs/a.md")], repo)
    assert report.changed and report.added == ["t-new"]
    assert report.removed == report.spec_modified == report.definition_modified == []
    assert report.lines() == ["added task t-new: not in the frozen scope, it will not run"]


@pytest.mark.parametrize("how", ["deleted", "vanished"])
def test_a_removed_task_is_reported(repo, run_dir, how):
    snapshot.freeze(run_dir, backlog(), repo)
    tasks = backlog()
    if how == "deleted":
        tasks[2]["status"] = "deleted"
    else:
        del tasks[2]
    report = check(run_dir, tasks, repo)
    assert report.removed == ["t-3"] and report.added == []
    assert report.lines() == ["removed task t-3: dropped from the target"]


def test_a_spec_edit_is_reported_with_its_file_for_every_task_using_it(repo, run_dir):
    snapshot.freeze(run_dir, backlog(), repo)
    (repo / "specs" / "a.md").write_text("# A\n- [ ] a works, and much more\n")
    report = check(run_dir, backlog(), repo)
    assert [(c.task_id, c.spec, c.detail) for c in report.spec_modified] == [
        ("t-1", "specs/a.md", "content changed"), ("t-2", "specs/a.md", "content changed")]
    assert report.lines() == ["modified spec specs/a.md of tasks t-1, t-2: content changed"]
    assert check(run_dir, backlog(), repo).lines() == report.lines()   # still reported


def test_a_spec_edited_and_then_restored_is_no_change(repo, run_dir):
    snapshot.freeze(run_dir, backlog(), repo)
    original = (repo / "specs" / "b.md").read_text()
    (repo / "specs" / "b.md").write_text("changed")
    assert check(run_dir, backlog(), repo).changed
    (repo / "specs" / "b.md").write_text(original)
    assert not check(run_dir, backlog(), repo).changed


@pytest.mark.parametrize("field,value", [
    ("title", "Another title"), ("description", "Another description"),
    ("steps", ["one", "two", "three"]), ("deps", ["t-1", "t-3"]), ("priority", 0),
], ids=["title", "description", "steps", "deps", "priority"])
def test_each_definition_field_edit_is_reported(repo, run_dir, field, value):
    snapshot.freeze(run_dir, backlog(), repo)
    tasks = backlog()
    tasks[1][field] = value
    report = check(run_dir, tasks, repo)
    assert report.definition_modified == ["t-2"] and report.definition_fields == {"t-2": [field]}
    assert report.spec_modified == [] and report.added == report.removed == []
    assert report.lines() == [f"modified definition of task t-2: {field} changed"]


def test_equivalent_spellings_of_a_definition_are_not_changes(repo, run_dir):
    tasks = backlog()
    tasks[0].update(deps=["t-3", "t-2"], description="", steps=None, priority=2)
    snapshot.freeze(run_dir, tasks, repo)
    live = backlog()
    live[0].update(deps=["t-2", "t-3"], description=None, steps=[], priority="2")
    assert not check(run_dir, live, repo).changed


def test_a_changed_spec_path_is_a_spec_change(repo, run_dir):
    snapshot.freeze(run_dir, backlog(), repo)
    tasks = backlog()
    tasks[2]["spec"] = "specs/a.md"
    assert check(run_dir, tasks, repo).lines() == [
        "modified spec specs/a.md of task t-3: spec path changed from specs/b.md to specs/a.md"]


def _make_problem(spec: Path, kind: str) -> str:
    if kind == "disappears":
        spec.unlink()
        return "file disappeared"
    if kind == "becomes-a-directory":
        spec.unlink()
        spec.mkdir()
        return "path is now a directory"
    if kind == "becomes-a-fifo":
        spec.unlink()
        os.mkfifo(spec)
        return "path is no longer a regular file"
    if kind == "symlink-loop":
        spec.unlink()
        spec.symlink_to(spec.name)
        return "file is no longer readable"
    if kind == "unreadable":
        if os.geteuid() == 0:
            pytest.skip("root reads a file whatever its mode")
        spec.chmod(0)
        return "file is no longer readable"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["disappears", "becomes-a-directory", "becomes-a-fifo",
                                  "symlink-loop", "unreadable"])
def test_a_spec_file_problem_is_reported_as_a_change_never_a_traceback(repo, run_dir, kind):
    snapshot.freeze(run_dir, backlog(), repo)
    detail = _make_problem(repo / "specs" / "b.md", kind)
    report = check(run_dir, backlog(), repo)
    assert report.lines() == [f"modified spec specs/b.md of task t-3: {detail}"]


@pytest.mark.parametrize("kind", ["disappears", "becomes-a-directory", "symlink-loop"])
def test_a_spec_already_broken_at_freeze_is_a_warning_not_a_change(repo, run_dir, kind):
    _make_problem(repo / "specs" / "b.md", kind)
    snap = snapshot.freeze(run_dir, backlog(), repo)
    assert len(snap.warnings) == 1 and "specs/b.md" in snap.warnings[0]
    report = check(run_dir, backlog(), repo)
    assert not report.changed and report.warnings == snap.warnings
    assert "as it was when the scope was frozen" in report.warnings[0]


def test_a_huge_spec_is_hashed_in_chunks_and_its_edit_caught(repo, run_dir):
    huge = repo / "specs" / "huge.md"
    with open(huge, "wb") as out:        # 50 MB, mostly a hole: written in no time
        out.write(b"# Huge\n")
        out.truncate(50 * 1024 * 1024)
    tasks = [task("t-huge", spec="specs/huge.md")]
    tracemalloc.start()
    try:
        snapshot.freeze(run_dir, tasks, repo)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024        # never read whole
    with open(huge, "r+b") as out:
        out.seek(30 * 1024 * 1024)
        out.write(b"x")
    assert check(run_dir, tasks, repo).lines() == [
        "modified spec specs/huge.md of task t-huge: content changed"]


def test_a_binary_spec_is_hashed_like_any_file(repo, run_dir):
    blob = repo / "specs" / "diagram.png"
    blob.write_bytes(bytes(range(256)) * 64 + b"\xff\xfe\x00")
    tasks = [task("t-bin", spec="specs/diagram.png")]
    snapshot.freeze(run_dir, tasks, repo)
    assert (run_dir / "scope_spec_hashes.txt").read_text() == \
        f"t-bin:{hashlib.md5(blob.read_bytes()).hexdigest()}\n"
    blob.write_bytes(bytes(range(256)) * 64 + b"\xff\xfe\x01")
    assert check(run_dir, tasks, repo).spec_modified[0].detail == "content changed"


def _same_size_edit_keeping_mtime(spec: Path) -> None:
    before = spec.stat()
    data = spec.read_bytes()
    spec.write_bytes(data[:-2] + b"X\n")
    os.utime(spec, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = spec.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def test_a_same_size_edit_right_after_the_freeze_with_its_mtime_put_back_is_caught(repo, run_dir):
    spec = repo / "specs" / "a.md"
    spec.write_text("# A\n- [ ] a works\n")          # written just now: racy at freeze
    snapshot.freeze(run_dir, backlog(), repo)
    _same_size_edit_keeping_mtime(spec)
    assert [c.task_id for c in check(run_dir, backlog(), repo).spec_modified] == ["t-1", "t-2"]


def test_a_same_size_edit_of_an_old_file_with_its_mtime_put_back_is_caught_by_ctime(
        repo, run_dir, aged):
    spec = repo / "specs" / "a.md"
    snapshot.freeze(run_dir, backlog(), repo)           # aged clock: the stat alone is trusted
    probe = repo / "probe"

    def clock_ticked() -> bool:                      # the coarse file clock moved on
        probe.write_text("x")
        return probe.stat().st_ctime_ns > spec.stat().st_ctime_ns
    wait_for(clock_ticked)
    _same_size_edit_keeping_mtime(spec)
    assert [c.task_id for c in check(run_dir, backlog(), repo).spec_modified] == ["t-1", "t-2"]


def test_an_unchanged_check_hashes_nothing_once_files_are_older_than_the_racy_window(
        repo, run_dir, aged):
    snapshot.freeze(run_dir, backlog(), repo)
    for _ in range(2):
        report = check(run_dir, backlog(), repo)
        assert not report.changed
        assert (report.files_checked, report.files_hashed) == (2, 0)


def test_a_freshly_written_spec_is_hashed_again_until_it_ages(repo, run_dir, mocker):
    (repo / "specs" / "b.md").write_text("# B, fresh\n")
    snapshot.freeze(run_dir, backlog(), repo)
    assert check(run_dir, backlog(), repo).files_hashed == 2      # both specs are racy
    mocker.patch.object(hashing, "_clock", return_value=time.time_ns() + TEN_S)
    assert check(run_dir, backlog(), repo).files_hashed == 2      # hashed once more, now aged
    assert check(run_dir, backlog(), repo).files_hashed == 0


def test_many_tasks_sharing_one_spec_hash_it_once_per_check(repo, run_dir, aged):
    tasks = [task(f"t-{i:02d}", spec="specs/a.md") for i in range(40)]
    snapshot.freeze(run_dir, tasks, repo)
    cache = json.loads((run_dir / "scope_stat_cache.json").read_text())
    assert cache["paths"] == ["specs/a.md"]
    (repo / "specs" / "a.md").write_text("# A, rewritten\n")
    report = check(run_dir, tasks + [task("t-new", spec="specs/a.md")], repo)
    assert (report.files_checked, report.files_hashed) == (1, 1)
    assert len(report.spec_modified) == 40
    assert report.lines()[1] == ("modified spec specs/a.md of tasks t-00, t-01, t-02, t-03, "
                                 "t-04, t-05, t-06, t-07, t-08, t-09 (+30 more): content changed")


def test_a_damaged_stat_cache_is_rebuilt_and_the_answer_is_unchanged(repo, run_dir):
    snapshot.freeze(run_dir, backlog(), repo)
    (repo / "specs" / "b.md").write_text("edited")
    (run_dir / "scope_stat_cache.json").write_text("{not json")
    assert check(run_dir, backlog(), repo).lines() == [
        "modified spec specs/b.md of task t-3: content changed"]


def test_a_damaged_snapshot_is_one_clear_environment_error(repo, run_dir):
    snapshot.freeze(run_dir, backlog(), repo)
    (run_dir / "scope_stat_cache.json").unlink()
    (run_dir / "scope_index.json").write_text("[truncated")
    with pytest.raises(errors.EnvironmentFailure) as err:
        check(run_dir, backlog(), repo)
    assert err.value.exit_code == errors.EXIT_ENVIRONMENT
    assert str(err.value).startswith(f"scope snapshot {run_dir}/scope_index.json cannot be read")


def test_a_resumed_run_keeps_its_original_snapshot(repo, run_dir):
    first = snapshot.load_or_freeze(run_dir, backlog(), repo)
    files = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    later = backlog() + [task("t-new")]
    (repo / "specs" / "a.md").write_text("changed while the run was stopped")
    again = snapshot.load_or_freeze(run_dir, later, repo)
    assert first.created and not again.created
    assert again.task_ids == first.task_ids and again.frozen_at == first.frozen_at
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == files
    with pytest.raises(FileExistsError):
        snapshot.freeze(run_dir, later, repo)
    report = check(run_dir, later, repo)
    assert report.added == ["t-new"] and len(report.spec_modified) == 2


def test_a_snapshot_interrupted_before_its_index_is_frozen_again(repo, run_dir):
    snapshot.freeze(run_dir, backlog(), repo)
    (run_dir / "scope_index.json").unlink()          # crash before the last write
    snap = snapshot.load_or_freeze(run_dir, backlog()[:2], repo)
    assert snap.created and snap.task_ids == ["t-1", "t-2"]


def test_report_summary_is_one_line_listing_the_changes(repo, run_dir):
    snapshot.freeze(run_dir, backlog(), repo)
    tasks = backlog()[1:] + [task(f"n-{i}") for i in range(6)]
    tasks[0]["title"] = "new title"
    summary = check(run_dir, tasks, repo).summary()
    assert "\n" not in summary
    assert summary == (
        "scope changed since the run started (8 changes): "
        "added task n-0: not in the frozen scope, it will not run; "
        "added task n-1: not in the frozen scope, it will not run; "
        "added task n-2: not in the frozen scope, it will not run; "
        "added task n-3: not in the frozen scope, it will not run; "
        "added task n-4: not in the frozen scope, it will not run; and 3 more")
    report = check(run_dir, tasks, repo)
    assert report.to_dict()["removed"] == ["t-1"]
    assert report.lines()[-2:] == ["removed task t-1: dropped from the target",
                                   "modified definition of task t-2: title changed"]


def test_frozen_ids_file_lists_only_frozen_tasks(repo, run_dir):
    snapshot.freeze(run_dir, backlog() + [task("t-del", status="deleted")], repo)
    path = target.write_frozen_ids_file(run_dir)
    assert path == run_dir / "frozen_ids.txt"
    assert path.read_text() == "t-1\nt-2\nt-3\nt-4\n"
    assert target.frozen_ids(run_dir) == ["t-1", "t-2", "t-3", "t-4"]


def test_an_empty_frozen_scope_gives_an_empty_ids_file_and_a_reached_target(repo, run_dir):
    snapshot.freeze(run_dir, [], repo)
    assert target.write_frozen_ids_file(run_dir).read_text() == ""
    assert target.target_done(run_dir, [task("t-new")])


def test_the_target_is_done_when_every_frozen_task_still_present_is_done(repo, run_dir):
    snapshot.freeze(run_dir, backlog(), repo)
    tasks = backlog() + [task("t-new")]                    # added: never part of the target
    assert not target.target_done(run_dir, tasks)
    for t in tasks[:3]:
        t["status"] = "done"
    assert not target.target_done(run_dir, tasks)           # t-4 still open
    tasks[3]["status"] = "deleted"                         # removed: dropped from the target
    assert target.target_done(run_dir, tasks)
    assert target.target_done(run_dir, tasks[:3])           # vanished: dropped as well


def _export(run_task) -> list[dict]:
    out = run_task("_export-json")
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_the_real_task_cli_backlog_is_frozen_checked_and_filtered(git_repo, run_task, tmp_path):
    def ok(*args, **kw):
        out = run_task(*args, **kw)
        assert out.returncode == 0, (args, out.stderr)
        return out.stdout
    ok("create", "t-1", "First", "-r", "specs/feature.md", "-d", "the first")
    ok("create", "t-2", "Second", "-s", '["a","b"]', "--deps", "t-1")
    ok("create", "t-3", "Third", "-p", "1")
    run_dir = git_repo / ".ralph" / "runs" / "r1"
    snapshot.freeze(run_dir, _export(run_task), git_repo)
    frozen_file = target.write_frozen_ids_file(run_dir)

    ok("claim", "t-1", "--agent", "a1")                      # progress: not a change
    assert not check(run_dir, _export(run_task), git_repo).changed
    ok("update", "t-2", "--title", "Second, renamed")
    ok("create", "t-new", "Added mid-run", "-p", "0")
    ok("delete", "t-3")
    (git_repo / "specs" / "feature.md").write_text("# Feature\n\n- [ ] it works better\n")
    report = check(run_dir, _export(run_task), git_repo)
    assert report.lines() == [
        "added task t-new: not in the frozen scope, it will not run",
        "removed task t-3: dropped from the target",
        "modified spec specs/feature.md of task t-1: content changed",
        "modified definition of task t-2: title changed"]

    frozen_env = {"RALPH_FROZEN_IDS_FILE": str(frozen_file)}
    assert "t-new" in ok("peek", "-n", "10")                 # without the freeze it would run
    assert "t-new" not in ok("peek", "-n", "10", env=frozen_env)
    empty = tmp_path / "empty_scope.txt"
    empty.write_text("")                                     # an empty frozen scope: nothing
    assert "## Task" not in ok("peek", "-n", "10", env={"RALPH_FROZEN_IDS_FILE": str(empty)})
    assert run_task("claim", "t-new", "--agent", "a2", env=frozen_env).returncode != 0
    assert run_task("claim", "--agent", "a2", env=frozen_env).returncode != 0  # t-2 blocked
    ok("done", "t-1")
    assert not target.target_done(run_dir, _export(run_task))
    ok("claim", "t-2", "--agent", "a2", env=frozen_env)
    ok("done", "t-2")
    assert target.target_done(run_dir, _export(run_task))    # t-new open: not in the target


def test_a_markdown_kv_backlog_is_frozen_and_checked_without_descriptions(git_repo, run_task):
    for args in (("create", "m-1", "One", "-r", "specs/feature.md", "-s", '["x"]'),
                 ("create", "m-2", "Two", "--deps", "m-1", "-d", "never in markdown")):
        assert run_task(*args).returncode == 0

    def listed() -> list[dict]:
        return parse_markdown_kv(run_task("list", "--all", "--markdown").stdout)
    run_dir = git_repo / ".ralph" / "runs" / "md"
    snapshot.freeze(run_dir, listed(), git_repo)
    assert run_task("claim", "m-1", "--agent", "a1").returncode == 0
    assert run_task("update", "m-2", "--description", "edited").returncode == 0
    assert not check(run_dir, listed(), git_repo).changed      # description: not in markdown
    assert run_task("update", "m-2", "--priority", "0").returncode == 0
    assert check(run_dir, listed(), git_repo).lines() == [
        "modified definition of task m-2: priority changed"]


def test_the_stop_message_is_a_scope_changed_error_with_exit_code_4(repo, run_dir):
    snapshot.freeze(run_dir, backlog(), repo)
    report = check(run_dir, backlog() + [task("t-new")], repo)
    err = errors.ScopeChanged(report.summary())
    assert err.exit_code == errors.EXIT_SCOPE_CHANGED == 4
    assert str(err) == ("scope changed since the run started (1 change): "
                        "added task t-new: not in the frozen scope, it will not run")


def test_a_change_that_stays_is_answered_from_the_cache_without_hashing(repo, run_dir, aged):
    snapshot.freeze(run_dir, backlog(), repo)
    (repo / "specs" / "b.md").write_text("edited")
    tasks = backlog() + [task("t-new")]
    first = check(run_dir, tasks, repo)
    second = check(run_dir, [dict(t) for t in tasks], repo)
    assert first.files_hashed == 1 and second.files_hashed == 0
    assert second.lines() == first.lines() == [
        "added task t-new: not in the frozen scope, it will not run",
        "modified spec specs/b.md of task t-3: content changed"]


def test_odd_task_dicts_are_tolerated_never_a_traceback(repo, run_dir):
    odd = [{"id": 7, "status": None, "spec": "specs/a.md"}, {"title": "no id"},
           {"id": "x", "deps": "b, a", "priority": "3", "steps": "one step"}]
    snap = snapshot.freeze(run_dir, odd, repo)
    assert snap.task_ids == ["7", "x"] and snap.warnings == ["1 task(s) without an id were ignored"]
    live = [dict(t) for t in odd]
    live[2]["deps"] = ["a", "b"]                    # the same deps, spelled as a list
    report = check(run_dir, live, repo)
    assert not report.changed and report.warnings == snap.warnings


# ------------------------------------------------------------------ how a task names its spec

@pytest.mark.parametrize("named", ["a.md", "specs/a.md"], ids=["name-under-specs", "from-root"])
def test_a_spec_named_under_specs_or_from_the_root_is_hashed_and_an_edit_is_seen(
        repo, run_dir, aged, named):
    tasks = [task("t-1", spec=named)]
    snap = snapshot.freeze(run_dir, tasks, repo)
    assert snap.warnings == []                              # not "missing"
    md5_a = hashlib.md5((repo / "specs" / "a.md").read_bytes()).hexdigest()
    assert (run_dir / "scope_spec_hashes.txt").read_text() == f"t-1:{md5_a}\n"
    assert check(run_dir, tasks, repo).lines() == []
    (repo / "specs" / "a.md").write_text("# A\n- [ ] a works, and faster\n")
    assert check(run_dir, tasks, repo).lines() == [
        "modified spec specs/a.md of task t-1: content changed"]


def test_a_path_from_the_root_wins_over_the_same_name_under_specs(repo, run_dir):
    (repo / "a.md").write_text("top level\n")
    assert snapshot.spec_path("a.md", repo) == "a.md"
    assert snapshot.spec_path("b.md", repo) == "specs/b.md"
    assert snapshot.spec_path("nowhere.md", repo) == "nowhere.md"

"""verify.completion.Gate with the real embedded task CLI over a real git repository: the
verdicts act on the backlog (reopen, hold), are recorded (event, state, .ralph/verify), the
next session's task data carries the failure, and stale passes are re-checked."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import ROOT, _clean_environ, git, read_jsonl
from ralphpy import programs
from ralphpy.backlog import calls
from ralphpy.runs import progress
from ralphpy.runs import state
from ralphpy.loop.features import VerifyScratch
from ralphpy.verify import completion, options

# A test runner in one line: every test_* function of tests/test_*.py, an AssertionError fails
RUN_TESTS = ("python -c \"import glob, runpy; [f() for p in sorted(glob.glob('tests/test_*.py')) "
             "for k, f in runpy.run_path(p).items() if k.startswith('test_')]\"")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    env = _clean_environ()
    git(path, "init", "-q", "-b", "main", env=env)
    git(path, "remote", "add", "origin", "https://github.com/acme/gate.git", env=env)
    (path / ".gitignore").write_text(".ralph/\n")
    (path / "ok").write_text("1\n")
    git(path, "add", "-A", env=env)
    git(path, "commit", "-qm", "base", env=env)
    monkeypatch.chdir(path)                  # the embedded task CLI runs in the process's cwd
    return path


def make_gate(repo: Path, lines: list[str] = (), **values) -> completion.Gate:
    env = _clean_environ()
    task = calls.resolve(ROOT, env)
    assert task.embedded
    for line in lines:
        assert task.call(*line.split("|"), env=env).ok, line
    ralph_dir = repo / ".ralph"
    run = SimpleNamespace(ralph_dir=ralph_dir, session_since="",
                          state=state.RunState("run-1", "build", 0))
    reported: list[str] = []
    gate = completion.Gate(values, task, env, repo, run, reported.append,
                           scratch=VerifyScratch(repo, env))
    gate.reported = reported
    return gate


def finish(gate: completion.Gate, slug: str) -> None:
    for argv in (("claim", slug), ("done", slug)):
        assert gate.task.call(*argv, env=gate.env).ok


def record(gate: completion.Gate, slug: str) -> dict:
    out = gate.task.call("_export-json", env=gate.env).output
    return {t["id"]: t for t in map(json.loads, out.splitlines())}[slug]


def test_a_failing_command_reopens_the_task_and_is_recorded(repo):
    gate = make_gate(repo, ["create|t1|One"], verify="echo nope; exit 2")
    finish(gate, "t1")
    failed, reason = gate.after_session([], "the loop's reason")
    assert failed == ["t1"] and reason.startswith("verify failed: `echo nope; exit 2` exited 2")
    t = record(gate, "t1")
    assert (t["status"], t["retry_count"]) == ("open", 1)
    assert t["fail_reason"].endswith("\nnope")
    (event,) = [e for e in read_jsonl(progress.events_path(repo / ".ralph", "run-1"))]
    assert (event["event"], event["verdict"], event["exit_code"]) == ("verify", "failed", 2)
    stored = json.loads((repo / ".ralph" / "verify" / "t1.json").read_text())
    assert stored["check"]["tail"] == "nope" and stored["result"] is None
    assert gate.run.state.extra["verify"]["t1"]["verdict"] == "failed"
    assert gate.reported == [f"verify: task t1 reopened: {reason}"]
    assert gate.after_session([], "x") == ([], "x")               # judged once


def test_a_passing_command_keeps_the_task_done(repo):
    gate = make_gate(repo, ["create|t1|One"], verify="test -f ok")
    finish(gate, "t1")
    assert gate.after_session([], "r") == ([], "r")
    assert record(gate, "t1")["status"] == "done"
    assert gate.reported[0].startswith("verify: task t1 passed: verify `test -f ok` exited 0")


def test_tampering_holds_the_task_and_warn_only_records_it(repo):
    (repo / "tests").mkdir()
    (repo / "tests" / "test_x.py").write_text("def test_x():\n    assert 1 == 1\n")
    git(repo, "add", "-A", env=_clean_environ())
    git(repo, "commit", "-qm", "tests", env=_clean_environ())
    gate = make_gate(repo, ["create|t1|One", "create|t2|Two"], protect=("tests/**",))
    (repo / "tests" / "test_x.py").unlink()
    finish(gate, "t1")
    assert gate.after_session([], "r")[0] == ["t1"]
    t = record(gate, "t1")
    assert t["status"] == "open" and \
        t["held"] == "tamper check: tests/test_x.py: protected file deleted"
    git(repo, "checkout", "-q", "--", "tests", env=_clean_environ())   # the next run's start
    warn = make_gate(repo, [], protect=("tests/**",), tamper="warn")
    (repo / "tests" / "test_x.py").unlink()
    finish(warn, "t2")
    assert warn.after_session([], "r")[0] == [] and record(warn, "t2")["status"] == "done"
    assert warn.run.state.extra["verify"]["t2"]["verdict"] == "warned"


def test_changes_left_in_the_tree_before_the_session_are_not_its_own(repo):
    """An uncommitted edit made before the session (an earlier held session's, or the user's)
    is in every diff from HEAD: the session is judged on what it changed itself, and the
    tests as they stood are the tests as the session found them."""
    (repo / "tests").mkdir()
    (repo / "calc.py").write_text("def add():\n    return 2\n")
    (repo / "tests" / "test_x.py").write_text(
        "from calc import add\n\n\ndef test_x():\n    assert add() == 2\n")
    git(repo, "add", "-A", env=_clean_environ())
    git(repo, "commit", "-qm", "tests", env=_clean_environ())
    (repo / "calc.py").write_text("def add():\n    return 3\n")          # left uncommitted
    (repo / "tests" / "test_x.py").write_text(
        "from calc import add\n\n\ndef test_x():\n    assert add() == 3\n")
    gate = make_gate(repo, ["create|t1|One"], verify=f"PYTHONPATH=. {RUN_TESTS}")
    (repo / "notes.txt").write_text("the session's own work\n")
    finish(gate, "t1")
    assert gate.after_session([], "r") == ([], "r")
    assert record(gate, "t1")["status"] == "done"
    (repo / "calc.py").write_text("def add():\n    return 4\n")          # its own change
    (repo / "tests" / "test_x.py").write_text(
        "from calc import add\n\n\ndef test_x():\n    assert add() == 4\n")
    assert gate.task.call("_reopen", "t1", "--reason", "again", env=gate.env).ok
    finish(gate, "t1")
    assert gate.after_session([], "r")[0] == ["t1"]                   # now it is held
    assert "tests/test_x.py:5: assertion removed or changed: assert add() == 3" in \
        record(gate, "t1")["held"]


def test_a_session_that_marked_two_tasks_done_has_its_diff_read_once_for_both(repo,
                                                                             monkeypatch):
    """Both tasks answer for the one diff of the session, read before anything is verified;
    a finding of one task alone (its own verify: line changed) stays that task's."""
    (repo / "tests").mkdir()
    (repo / "tests" / "test_x.py").write_text("def test_x():\n    assert 1 == 2\n")
    git(repo, "add", "-A", env=_clean_environ())
    git(repo, "commit", "-qm", "tests", env=_clean_environ())
    gate = make_gate(repo, ["create|t1|One|-d|verify: " + RUN_TESTS, "create|t2|Two"],
                     verify=RUN_TESTS)
    assert gate.task.call("update", "t1", "--description", "verify: :", env=gate.env).ok
    (repo / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")
    finish(gate, "t1")
    finish(gate, "t2")
    diffs, run = [], programs.run
    monkeypatch.setattr(programs, "run", lambda argv, **kw: run(argv, **kw) if "diff" not in argv
                        else diffs.append(argv) or run(argv, **kw))
    assert sorted(gate.after_session([], "r")[0]) == ["t1", "t2"]
    assert len([d for d in diffs if "--name-status" not in d]) == 1
    found = "tests/test_x.py:2: assertion removed or changed: assert 1 == 2"
    assert record(gate, "t1")["held"].startswith(
        f"tamper check: {found}; task t1: its verify: line changed during the session; ")
    assert record(gate, "t2")["held"].startswith(f"tamper check: {found}; tests/test_x.py: "
                                                 "the start's tests fail")


def test_what_a_verify_command_changes_is_no_later_task_s_finding(repo):
    """The verify command runs after the session (a formatter before the tests, say): what it
    changes is not the session's, for the second task it marked done as for the first."""
    (repo / "tests").mkdir()
    (repo / "tests" / "test_x.py").write_text("def test_x():\n    assert 1 == 1\n")
    git(repo, "add", "-A", env=_clean_environ())
    git(repo, "commit", "-qm", "tests", env=_clean_environ())
    gate = make_gate(repo, ["create|t1|One", "create|t2|Two"],
                     verify="sed -i 's/1 == 1/1==1/' tests/test_x.py")
    finish(gate, "t1")
    finish(gate, "t2")
    assert gate.after_session([], "r") == ([], "r")
    assert [record(gate, slug)["status"] for slug in ("t1", "t2")] == ["done", "done"]
    verified = gate.run.state.extra["verify"]                 # nor a second run's reason
    assert [verified[slug]["runs"] for slug in ("t1", "t2")] == [1, 1]


def test_a_change_made_in_a_session_that_marked_nothing_done_is_judged_with_the_next(repo):
    """The cheat split over two sessions: the first weakens the test and commits, marking
    nothing done (nothing is judged); the second marks the task done. The second session's
    diff starts where the last judgement left the tree, so the weakening is in it."""
    (repo / "tests").mkdir()
    (repo / "tests" / "test_x.py").write_text("def test_x():\n    assert 1 == 2\n")
    git(repo, "add", "-A", env=_clean_environ())
    git(repo, "commit", "-qm", "tests", env=_clean_environ())
    gate = make_gate(repo, ["create|t1|One"], verify=RUN_TESTS)
    (repo / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")
    git(repo, "commit", "-qam", "session 1", env=_clean_environ())
    assert gate.after_session([], "r") == ([], "r")                 # session 1: nothing done
    finish(gate, "t1")                                                 # session 2
    assert gate.after_session([], "r")[0] == ["t1"]
    assert "assertion removed or changed: assert 1 == 2" in record(gate, "t1")["held"]


def test_what_a_sync_rebase_brought_in_after_a_session_that_judged_nothing_is_no_finding(
        repo):
    """--sync fetched and rebased between two sessions, the first of which marked nothing
    done: the commits that came in (another host removing its own test) are not the second
    session's, even when the rebase was a fast-forward."""
    env = _clean_environ()
    (repo / "tests").mkdir()
    (repo / "tests" / "test_other.py").write_text("def test_other():\n    assert True\n")
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-qm", "tests", env=env)
    gate = make_gate(repo, ["create|t1|One"], verify="true")
    assert gate.after_session([], "r") == ([], "r")                 # session 1: nothing done
    git(repo, "rm", "-q", "tests/test_other.py", env=env)
    git(repo, "commit", "-qm", "another host removes its test", env=env)
    incoming = git(repo, "rev-parse", "HEAD", env=env).strip()
    git(repo, "reset", "-q", "--hard", "HEAD~1", env=env)
    git(repo, "update-ref", "refs/remotes/origin/main", incoming, env=env)      # fetched
    git(repo, "merge", "-q", "--ff-only", "origin/main", env=env)   # rebased: a fast-forward
    gate.session_starts()                                             # session 2
    finish(gate, "t1")
    assert gate.after_session([], "r") == ([], "r")
    assert record(gate, "t1")["status"] == "done"


def test_a_change_split_over_two_sessions_is_judged_across_a_sync_rebase(repo):
    """The cheat split over two sessions in a fleet: the first weakens the test and commits,
    marking nothing done; --sync then rebases it onto another host's commits (one removes
    that host's own test); the second marks the task done. The weakening is still in the
    second session's diff, the other host's removal is not; uncommitted changes made before
    the run are not either. The run's git has no identity of its own here."""
    env = _clean_environ()
    (repo / "tests").mkdir()
    (repo / "tests" / "test_x.py").write_text("def test_x():\n    assert 1 == 2\n")
    (repo / "tests" / "test_other.py").write_text("def test_other():\n    assert True\n")
    (repo / "tests" / "test_kept.py").write_text("def test_kept():\n    assert 3 == 3\n")
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-qm", "tests", env=env)
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD", env=env)        # pushed
    (repo / "tests" / "test_kept.py").write_text("def test_kept():\n    pass\n")   # the user's
    gate = make_gate(repo, ["create|t1|One"], verify=RUN_TESTS)
    gate.env = {**{k: v for k, v in gate.env.items() if not k.startswith(("GIT_AUTHOR",
                                                                           "GIT_COMMITTER"))},
                "HOME": str(repo.parent)}
    (repo / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")
    git(repo, "commit", "-qm", "session 1", "--", "tests/test_x.py", env=env)
    assert gate.after_session([], "r") == ([], "r")                 # session 1: nothing done
    git(repo, "checkout", "-q", "-b", "other", "origin/main", env=env)   # another host
    git(repo, "rm", "-q", "tests/test_other.py", env=env)
    git(repo, "commit", "-qm", "another host removes its test", env=env)
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD", env=env)        # fetched
    git(repo, "checkout", "-q", "main", env=env)
    git(repo, "rebase", "-q", "--autostash", "origin/main", env=env)            # --sync
    assert not (repo / "tests" / "test_other.py").exists()
    gate.session_starts()                                             # session 2
    finish(gate, "t1")
    assert gate.after_session([], "r")[0] == ["t1"]
    assert record(gate, "t1")["held"].startswith(
        "tamper check: tests/test_x.py:2: assertion removed or changed: assert 1 == 2; "
        "tests/test_x.py: the start's tests fail with the test side as it stood")
    assert "test_other" not in record(gate, "t1")["held"]


def test_a_session_that_changes_its_own_verify_line_is_a_finding(repo):
    gate = make_gate(repo, ["create|t1|One|-d|verify: false"])
    env = gate.env
    assert gate.task.call("update", "t1", "--description", "verify: true", env=env).ok
    finish(gate, "t1")
    assert gate.after_session([], "r")[0] == ["t1"]
    t = record(gate, "t1")
    assert t["held"].startswith("tamper check: task t1: its verify: line changed")
    assert "verify failed: `false` exited 1" in t["fail_reason"]   # the line it started with



def test_a_verify_line_changed_in_an_earlier_session_of_the_run_is_still_a_finding(repo):
    """The change and the `done` split over two sessions: the first session rewrites the
    line and marks nothing done (nothing is judged), the second marks the task done. The
    line the run started with still judges it, and the change is still a finding."""
    gate = make_gate(repo, ["create|t1|One|-d|verify: false"])
    assert gate.task.call("update", "t1", "--description", "verify: true", env=gate.env).ok
    assert gate.after_session([], "r") == ([], "r")                 # session 1: nothing done
    finish(gate, "t1")                                                 # session 2
    assert gate.after_session([], "r")[0] == ["t1"]
    t = record(gate, "t1")
    assert t["held"].startswith("tamper check: task t1: its verify: line changed")
    assert "verify failed: `false` exited 1" in t["fail_reason"]


@pytest.mark.parametrize("verify", ["false", None], ids=["run-command", "no-run-command"])
def test_a_verify_line_added_by_the_session_is_a_finding_and_never_the_judge(repo, verify):
    """t1 had no line: the run's command judges it, not `verify: true` the agent wrote in."""
    gate = make_gate(repo, ["create|t1|One|-d|Fix it."], **({"verify": verify} if verify else {}))
    assert gate.task.call("update", "t1", "--description", "Fix it.\nverify: true",
                          env=gate.env).ok
    finish(gate, "t1")
    assert gate.after_session([], "r")[0] == ["t1"]
    t = record(gate, "t1")
    assert t["held"].startswith("tamper check: task t1: its verify: line changed")
    assert ("verify failed: `false` exited 1" in t["fail_reason"]) == (verify is not None)

def test_the_task_data_carries_the_last_failure_under_its_task(repo):
    gate = make_gate(repo, ["create|t1|One", "create|t2|Two"], verify="echo broken; false")
    finish(gate, "t1")
    gate.after_session([], "r")
    data = "## Task t1\nid: t1\nstatus: open\n\n## Task t2\nid: t2\nstatus: open"
    assert gate.annotate(data) == (
        "## Task t1\nid: t1\nstatus: open\nverify_failed: |\n"
        f"  {gate.run.state.extra['verify']['t1']['reason'].split(chr(10))[0]}\n  broken\n\n"
        "## Task t2\nid: t2\nstatus: open")
    assert make_gate(repo, [], verify="true").annotate(data) == data


def test_stale_passes_are_checked_again_once_nothing_is_left(repo):
    gate = make_gate(repo, ["create|t1|One", "create|t2|Two"], verify="test -f ok")
    finish(gate, "t1")
    assert gate.after_session([], "r")[0] == []                 # t2 still open: no re-check
    (repo / "ok").unlink()
    git(repo, "commit", "-qam", "ok goes", env=_clean_environ())
    assert gate.task.call("_hold", "t2", "--reason", "later", env=gate.env).ok
    reopened = gate.recheck()
    assert [v.task for v in reopened] == ["t1"]
    assert record(gate, "t1")["fail_reason"].startswith(
        "verify failed on re-check (the tree moved since it passed): `test -f ok` exited 1")


def test_a_pass_on_uncommitted_work_is_checked_again_when_that_work_changed(repo):
    """Nothing is committed: t1 passed on the tree's uncommitted state, and the next session
    changed that state (still uncommitted, same HEAD). Its pass is stale all the same."""
    gate = make_gate(repo, ["create|t1|One", "create|t2|Two"], verify="grep -q good ok")
    (repo / "ok").write_text("good\n")
    finish(gate, "t1")
    assert gate.after_session([], "r")[0] == []
    (repo / "ok").write_text("broken\n")
    assert gate.task.call("_hold", "t2", "--reason", "later", env=gate.env).ok
    reopened = gate.recheck()
    assert [v.task for v in reopened] == ["t1"]
    assert record(gate, "t1")["fail_reason"].startswith(
        "verify failed on re-check (the tree moved since it passed): `grep -q good ok` exited 1")


def test_without_settings_or_verify_lines_the_gate_does_nothing(repo):
    gate = make_gate(repo, ["create|t1|One"])
    assert not options.read({}).armed
    finish(gate, "t1")
    assert gate.after_session([], "r") == ([], "r") and gate.base == ""
    assert not (repo / ".ralph" / "verify").exists()


def test_a_second_run_that_cannot_start_is_skipped_with_a_warning(repo):
    """git or the disk failing to make the scratch worktree is not the session's doing."""
    class Broken:
        def clean(self):
            pass

        def make(self, commit):
            raise OSError(28, "No space left on device")

    (repo / "tests").mkdir()
    (repo / "tests" / "test_x.py").write_text("def test_x():\n    assert 1 == 1\n")
    git(repo, "add", "-A", env=_clean_environ())
    git(repo, "commit", "-qm", "tests", env=_clean_environ())
    gate = make_gate(repo, ["create|t1|One"], verify=RUN_TESTS)
    gate.scratch = Broken()
    (repo / "tests" / "test_y.py").write_text("def test_y():\n    assert 2 == 2\n")
    finish(gate, "t1")
    assert gate.after_session([], "r") == ([], "r")
    assert record(gate, "t1")["status"] == "done"
    assert "Warning: verify: the second run could not start: [Errno 28] No space left on " \
           "device" in gate.reported

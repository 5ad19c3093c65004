"""Verified completion end to end: `ralph build --verify CMD` as a real process over the real
task CLI, in git repositories the tests build, with real test runners (pytest, `node --test`)
as the verify command and the stub agent tests/stubs/claude-verify doing what an agent would
(edit, commit, `task done`) from a shell script per session."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import RALPH, git, install_stub, read_jsonl, wait_for
from loophelp import killed_when

PYTEST = "python -m pytest -q -p no:cacheprovider"
FINISHED = "All tasks complete. Exiting loop."

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
TESTS = textwrap.dedent("""\
    import pytest

    from calc import add, sub


    def test_add():
        # the sum of two numbers
        result = add(2, 2)
        assert result == 4


    def test_sub():
        assert sub(5, 3) == 2
""")

CLAIM = '"$RALPH_TASK_SCRIPT" claim fix-add >/dev/null\n'
DONE = 'git add -A && git commit -qm "$1work" >/dev/null\n"$RALPH_TASK_SCRIPT" done fix-add >/dev/null\n'
FIX = "sed -i 's/return a - b/return a + b/; 0,/return a + b/! s/return a + b/return a - b/' calc.py\n"
LAZY = CLAIM + '"$RALPH_TASK_SCRIPT" done fix-add >/dev/null\n'


@pytest.fixture
def plan(tmp_path: Path, bin_dir: Path) -> Path:
    install_stub(bin_dir, "claude", "claude-verify")
    path = tmp_path / "plan"
    path.mkdir()
    return path


def sessions(plan: Path, *scripts: str, default: str | None = None) -> None:
    for n, script in enumerate(scripts, 1):
        (plan / f"session-{n}.sh").write_text("set -e\n" + script)
    if default is not None:
        (plan / "default.sh").write_text("set -e\n" + default)


@pytest.fixture
def project(git_repo: Path, base_env: dict, run_task) -> Path:
    """calc.py with a bug in add(), its pytest tests, one task to fix it."""
    (git_repo / ".gitignore").write_text(".ralph/\n")
    (git_repo / "calc.py").write_text(CALC)
    (git_repo / "tests").mkdir()
    (git_repo / "tests" / "test_calc.py").write_text(TESTS)
    (git_repo / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    git(git_repo, "add", "-A", env=base_env)
    git(git_repo, "commit", "-qm", "calc", env=base_env)
    assert run_task("create", "fix-add", "Fix add()").returncode == 0
    return git_repo


@pytest.fixture
def build(run_ralph, plan):
    def run(*args: str, timeout: float = 90):
        return run_ralph("build", *args, env={"STUB_PLAN": str(plan)}, timeout=timeout)
    return run


def task(run_task, slug: str = "fix-add") -> dict:
    out = run_task("_export-json").stdout
    return {t["id"]: t for t in map(json.loads, out.splitlines())}[slug]


def verify_events(repo: Path) -> list[dict]:
    return [e for path in sorted((repo / ".ralph" / "runs").glob("*/events.jsonl"))
            for e in read_jsonl(path) if e["event"] == "verify"]


def test_a_task_marked_done_without_the_fix_is_reopened_with_the_failing_test_named(
        build, plan, project, run_task, run_ralph):
    sessions(plan, LAZY)
    proc = build("-n", "1", "--verify", PYTEST)
    assert proc.returncode == 0, proc.stderr
    t = task(run_task)
    assert t["status"] == "open" and t["retry_count"] == 1 and t["result"] is None
    assert t["fail_reason"].startswith(f"verify failed: `{PYTEST}` exited 1 at ")
    assert "FAILED tests/test_calc.py::test_add" in t["fail_reason"]
    (event,) = verify_events(project)
    head = git(project, "rev-parse", "HEAD").strip()
    assert (event["verdict"], event["exit_code"], event["commit"], event["task"]) == (
        "failed", 1, head, "fix-add")
    assert len(event["tail_sha256"]) == 64 and event["findings"] == []
    stored = json.loads((project / ".ralph" / "verify" / "fix-add.json").read_text())
    assert stored["check"]["commit"] == head and "test_add" in stored["check"]["tail"]
    progress = (project / ".ralph" / "progress.md").read_text()
    assert "## Verification" in progress and "| fix-add | failed |" in progress
    status = json.loads(run_ralph("status", "--json").stdout)
    assert status["verify"]["fix-add"]["verdict"] == "failed"
    assert "fix-add  failed" in run_ralph("status").stdout
    assert f"verify: task fix-add reopened: verify failed: `{PYTEST}` exited 1 at " in proc.stderr


def test_the_next_session_sees_the_failure_in_peeks_markdown_and_the_fix_passes(
        build, plan, project, run_task):
    sessions(plan, LAZY, CLAIM + FIX + DONE)
    proc = build("--verify", PYTEST)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-2] == FINISHED
    prompts = [json.loads(line)["prompt"] for line in (plan / "prompts.jsonl").open()]
    assert len(prompts) == 2 and "verify_failed" not in prompts[0]
    assert "## Task fix-add" in prompts[1] and "verify_failed: |" in prompts[1]
    assert "FAILED tests/test_calc.py::test_add" in prompts[1]
    t = task(run_task)
    assert t["status"] == "done" and t["retry_count"] == 1
    # the fix left the tests as they were: one run of the command each time
    assert [(e["verdict"], e["runs"]) for e in verify_events(project)] == [
        ("failed", 1), ("passed", 1)]


def test_the_assignment_block_names_the_previous_verify_failure(build, plan, project):
    sessions(plan, '"$RALPH_TASK_SCRIPT" done fix-add >/dev/null\n', default="exit 0\n")
    proc = build("-n", "2", "--assign", "--verify", PYTEST)
    assert proc.returncode == 0, proc.stderr
    prompts = [json.loads(line)["prompt"] for line in (plan / "prompts.jsonl").open()]
    assert "Previous attempt failed: verify failed:" in prompts[1]
    assert "test_add" in prompts[1]


@pytest.mark.parametrize("cheat, kind, where", [
    ("sed -i '/assert result == 4/d' tests/test_calc.py\n", "assertion removed",
     "tests/test_calc.py:9"),
    ("sed -i 's/^def test_add/@pytest.mark.skip(reason=\"flaky\")\\ndef test_add/' "
     "tests/test_calc.py\n", "skip added: @pytest.mark.skip", "tests/test_calc.py:6"),
    # the repository's own git settings, which the session controls, do not blind the check
    ("printf 'tests/*.py -diff\\n' > .gitattributes\n"
     "sed -i '/assert result == 4/d' tests/test_calc.py\n", "assertion removed",
     "tests/test_calc.py:9"),
    ("git config diff.noprefix true\nsed -i '/assert result == 4/d' tests/test_calc.py\n",
     "assertion removed", "tests/test_calc.py:9"),
    ("git update-index --skip-worktree tests/test_calc.py\n"
     "sed -i '/assert result == 4/d' tests/test_calc.py\necho n > notes.txt\n",
     "hidden from git (skip-worktree)", "tests/test_calc.py"),
    # adding, which is never a finding, except what switches the existing tests off
    ("printf 'import sys\\nprint(\"1 passed\")\\nsys.exit(0)\\n' > pytest.py\n",
     "the start's tests fail with the test side as it stood: tests/test_calc.py::test_add",
     "pytest.py"),
    # the suite passes, but code is taken out of what a coverage threshold measures
    (FIX + "sed -i 's/^def sub(a, b):$/def sub(a, b):  # pragma: no cover/' calc.py\n",
     "coverage exclusion added: # pragma: no cover", "calc.py:5"),
    # the test passes against a stand-in for the function it tests
    ("sed -i 's/^def test_add():$/def test_add(monkeypatch):\\n    monkeypatch.setattr("
     "sys.modules[__name__], \"add\", lambda a, b: 4)/' tests/test_calc.py\n"
     "sed -i 's/^import pytest$/import sys\\n\\nimport pytest/' tests/test_calc.py\n",
     "the start's tests fail with the test side as it stood: tests/test_calc.py::test_add",
     "tests/test_calc.py"),
], ids=["deleted-assertion", "added-skip", "gitattributes-binary", "diff-noprefix",
        "skip-worktree", "runner-shadowed", "coverage-pragma", "code-replaced"])
def test_an_agent_that_weakens_the_test_gets_its_task_held_with_the_finding(
        build, plan, project, run_task, cheat, kind, where):
    sessions(plan, CLAIM + cheat + DONE)
    proc = build("-n", "1", "--verify", PYTEST)
    assert proc.returncode == 0, proc.stderr
    t = task(run_task)
    assert t["status"] == "open" and t["held"] and where in t["held"] and kind in t["held"]
    assert t["fail_reason"].startswith(f"tamper check: {where}: {kind}")
    (event,) = verify_events(project)
    assert event["verdict"] == "held" and event["exit_code"] == 0     # the weakened suite passes
    assert "verify failed:" not in t["fail_reason"]               # the session's tests passed
    assert any(f.startswith(f"{where}: {kind}") for f in event["findings"])


def test_a_test_weakened_in_one_session_and_done_in_the_next_is_held(build, plan, project,
                                                                        run_task):
    """The cheat split over two sessions, through the loop: the first weakens the test and
    commits, marking nothing done; the second marks the task done. The diff judged with the
    second runs from where the last judgement (here: the run's start) left the tree."""
    weaken = "sed -i '/assert result == 4/d' tests/test_calc.py\ngit commit -qam weaken\n"
    sessions(plan, CLAIM + weaken, LAZY)
    proc = build("-n", "2", "--verify", PYTEST)
    assert proc.returncode == 0, proc.stderr
    t = task(run_task)
    assert t["status"] == "open" and t["held"]
    assert "tests/test_calc.py:9: assertion removed or changed: assert result == 4" in t["held"]


def test_a_test_weakened_in_one_session_and_done_in_the_next_is_held_across_a_sync_rebase(
        build, plan, project, run_task, tmp_path):
    """The same in a fleet: between the two sessions, --sync rebases the first one's commit
    onto another host's, which deleted a test file of its own. That deletion is not the
    second session's; the weakening still is."""
    (project / "tests" / "test_extra.py").write_text("def test_extra():\n    assert True\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "extra")
    shared = tmp_path / "shared.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(shared))
    git(project, "remote", "add", "fleet", str(shared))         # origin's URL names the scope
    git(project, "push", "-q", "-u", "fleet", "main")
    weaken = "sed -i '/assert result == 4/d' tests/test_calc.py\ngit commit -qam weaken\n"
    another_host = (f"git clone -q {shared} {tmp_path / 'host2'}\ncd {tmp_path / 'host2'}\n"
                    "git rm -q tests/test_extra.py\ngit commit -qm 'host2 drops its test'\n"
                    "git push -q origin main\n")
    sessions(plan, CLAIM + weaken + another_host, LAZY)
    proc = build("-n", "2", "--sync", "--verify", PYTEST)
    assert proc.returncode == 0, proc.stderr
    assert "sync: main rebased onto fleet/main: 1 commit from fleet" in proc.stderr
    assert not (project / "tests" / "test_extra.py").exists()
    t = task(run_task)
    assert t["status"] == "open"
    assert t["held"].startswith("tamper check: tests/test_calc.py:9: assertion removed or "
                                "changed: assert result == 4; tests/test_calc.py: the start's "
                                "tests fail")
    assert "test_extra" not in t["held"]


def test_a_test_file_hidden_from_git_before_the_run_is_no_finding(build, plan, project,
                                                                   run_task):
    """A sparse checkout marks the files outside its cone skip-worktree, and some people mark
    a test file they keep local changes in: the session did not hide it, so an honest fix
    passes (a session that hides one is held, above)."""
    git(project, "update-index", "--skip-worktree", "tests/test_calc.py")
    sessions(plan, CLAIM + FIX + DONE)
    proc = build("-n", "1", "--verify", PYTEST)
    assert proc.returncode == 0, proc.stderr
    assert task(run_task)["status"] == "done"
    (event,) = verify_events(project)
    assert (event["verdict"], event["findings"]) == ("passed", [])


def test_tamper_warn_records_the_finding_and_reopens_when_the_tests_as_they_stood_fail(
        build, plan, project, run_task):
    """Under warn nothing is held, but a task is done only when the start's tests pass too."""
    (project / "ralph.yml").write_text("tamper: warn\n")
    sessions(plan, CLAIM + "sed -i '/assert result == 4/d' tests/test_calc.py\n" + DONE)
    proc = build("-n", "1", "--verify", PYTEST)
    assert proc.returncode == 0, proc.stderr
    t = task(run_task)
    assert t["status"] == "open" and not t["held"]
    assert t["fail_reason"].startswith("verify failed with the tests as they stood: ")
    assert "tests/test_calc.py::test_add" in t["fail_reason"].split("\n")[0]
    (event,) = verify_events(project)
    assert event["verdict"] == "failed" and "assertion removed" in event["findings"][0]


def test_a_verify_command_that_hangs_is_cut_by_its_timeout(build, plan, project, run_task):
    (project / "ralph.yml").write_text("verify_timeout: 1s\n")
    sessions(plan, CLAIM + FIX + DONE)
    proc = build("-n", "1", "--verify", "echo started; sleep 300", timeout=60)
    assert proc.returncode == 0, proc.stderr
    t = task(run_task)
    assert t["status"] == "open"
    assert t["fail_reason"].startswith("verify timed out: `echo started; sleep 300` ran longer "
                                       "than 1s at ")
    assert t["fail_reason"].endswith("\nstarted")
    (event,) = verify_events(project)
    assert (event["verdict"], event["timed_out"], event["exit_code"]) == ("timeout", True, None)


ADD_TESTS = textwrap.dedent("""\
    cat > tests/test_more.py <<'PY'
    from calc import add


    def test_add_zero():
        assert add(0, 3) == 3
    PY
    printf '\\n\\ndef test_add_negative():\\n    assert add(-1, -1) == -2\\n' >> tests/test_calc.py
    """)


def test_adding_tests_under_a_protected_path_is_never_a_finding(build, plan, project, run_task):
    (project / "ralph.yml").write_text('protect: "tests/**"\n')
    sessions(plan, CLAIM + FIX + ADD_TESTS + DONE)
    proc = build("-n", "1", "--verify", PYTEST)
    assert proc.returncode == 0, proc.stderr
    assert task(run_task)["status"] == "done"
    (event,) = verify_events(project)
    assert (event["verdict"], event["findings"]) == ("passed", [])


@pytest.mark.parametrize("change, finding, protect", [
    ("sed -i 's/# the sum of two numbers/# sum/' tests/test_calc.py\n",
     "tests/test_calc.py:7: protected file changed", '"tests/**"'),
    ("git rm -q tests/test_calc.py\n", "tests/test_calc.py: protected file deleted",
     "[tests/**, .github/**]"),                   # a ralph.yml list
], ids=["changed", "deleted"])
def test_changing_or_deleting_an_existing_test_under_a_protected_path_is_a_finding(
        build, plan, project, run_task, change, finding, protect):
    (project / "ralph.yml").write_text(f"protect: {protect}\n")
    sessions(plan, CLAIM + FIX + change + DONE)
    proc = build("-n", "1", "--verify", PYTEST)
    assert proc.returncode == 0, proc.stderr
    t = task(run_task)
    assert t["status"] == "open" and finding in t["held"]


def test_a_task_s_own_verify_line_wins_over_the_run_s_command(build, plan, project, run_task):
    assert run_task("update", "fix-add", "--description", "Fix it.\n\nverify: python -m pytest -q "
             "-p no:cacheprovider tests/test_calc.py::test_sub").returncode == 0
    sessions(plan, LAZY)
    proc = build("-n", "1", "--verify", "false")
    assert proc.returncode == 0, proc.stderr
    assert task(run_task)["status"] == "done"                # test_sub passes, `false` not run
    (event,) = verify_events(project)
    assert event["command"].endswith("tests/test_calc.py::test_sub")


def test_without_a_verify_setting_nothing_is_verified(build, plan, project, run_task):
    sessions(plan, LAZY)
    proc = build("-n", "1")
    assert proc.returncode == 0, proc.stderr
    assert task(run_task)["status"] == "done" and verify_events(project) == []
    assert not (project / ".ralph" / "verify").exists()


def test_a_stale_verification_is_run_again_before_all_tasks_complete(
        build, plan, project, run_task):
    assert run_task("update", "fix-add", "--description",
                    f"verify: {PYTEST} tests/test_calc.py::test_add").returncode == 0
    run_task("create", "notes", "Write notes", "-p", "3")
    # session 1 fixes add; session 2 does `notes` (its check passes) and breaks add again: the
    # run must not end complete on fix-add's stale pass
    breaks = ('"$RALPH_TASK_SCRIPT" claim notes >/dev/null\necho notes > NOTES\n'
              "sed -i 's/return a + b/return a + b + 1/' calc.py\n"
              'git add -A && git commit -qm notes >/dev/null\n'
              '"$RALPH_TASK_SCRIPT" done notes >/dev/null\n')
    sessions(plan, CLAIM + FIX + DONE, breaks)
    proc = build("-n", "2", "--verify", "test -f NOTES")
    assert proc.returncode == 0, proc.stderr
    assert FINISHED not in proc.stdout
    assert "Reached max iterations: 2" in proc.stdout
    t = task(run_task)
    assert t["status"] == "open" and t["retry_count"] == 1
    assert t["fail_reason"].startswith("verify failed on re-check (the tree moved since it "
                                       "passed): ")
    assert "FAILED tests/test_calc.py::test_add" in t["fail_reason"]
    assert task(run_task, "notes")["status"] == "done"
    assert [(e["task"], e["verdict"]) for e in verify_events(project)] == [
        ("fix-add", "passed"), ("notes", "passed"), ("fix-add", "failed")]


NODE_TEST = textwrap.dedent("""\
    const { test } = require('node:test');
    const assert = require('node:assert');
    const { add } = require('../calc.js');

    test('adds two numbers', () => {
      assert.strictEqual(add(2, 2), 4);
    });
""")


def node_project_with(test_text: str, git_repo: Path, base_env: dict, run_task) -> Path:
    """A project whose broken add() its node --test file `test_text` catches, committed, and
    a task to fix it."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed on this machine")
    (git_repo / ".gitignore").write_text(".ralph/\n")
    (git_repo / "calc.js").write_text("exports.add = (a, b) => a - b;\n")
    (git_repo / "test").mkdir()
    (git_repo / "test" / "calc.test.js").write_text(test_text)
    git(git_repo, "add", "-A", env=base_env)
    git(git_repo, "commit", "-qm", "calc.js", env=base_env)
    assert run_task("create", "fix-add", "Fix add()").returncode == 0
    return git_repo


@pytest.fixture
def node_project(git_repo: Path, base_env: dict, run_task) -> Path:
    return node_project_with(NODE_TEST, git_repo, base_env, run_task)


def test_node_test_failure_reopens_and_names_the_test(build, plan, node_project, run_task):
    sessions(plan, LAZY)
    proc = build("-n", "1", "--verify", "node --test")
    assert proc.returncode == 0, proc.stderr
    t = task(run_task)
    assert t["status"] == "open" and "verify failed: `node --test` exited 1" in t["fail_reason"]
    assert "adds two numbers" in t["fail_reason"]


def test_node_test_skip_is_held_and_the_fix_passes(build, plan, node_project, run_task):
    sessions(plan, CLAIM + "sed -i \"s/^test('adds/test.skip('adds/\" test/calc.test.js\n"
             + DONE, CLAIM + "sed -i 's/a - b/a + b/' calc.js\n" + DONE)
    proc = build("-n", "1", "--verify", "node --test")
    assert proc.returncode == 0, proc.stderr
    t = task(run_task)
    assert t["status"] == "open"
    assert "test/calc.test.js:5: skip added: test.skip" in t["held"]
    run_task("_unhold", "fix-add")
    git(node_project, "checkout", "-q", "--", ".")
    (plan / "session-1.sh").unlink()
    (plan / "prompts.jsonl").write_text("{}\n")                 # the next call is session 2
    proc = build("-n", "1", "--verify", "node --test")
    assert proc.returncode == 0, proc.stderr
    assert task(run_task)["status"] == "done"


def test_a_task_whose_check_was_cut_by_a_kill_9_is_judged_by_the_resumed_run(
        plan, project, run_task, base_env, tmp_path):
    """ralph.py dies while the verify command runs: the resumed run finds fix-add done with
    no verdict and judges it after its next session, instead of trusting it unchecked."""
    assert run_task("create", "other", "Other task").returncode == 0
    sessions(plan, LAZY, '"$RALPH_TASK_SCRIPT" claim other >/dev/null\n'
                         '"$RALPH_TASK_SCRIPT" done other >/dev/null\n')
    mark, release = tmp_path / "checking", tmp_path / "release"
    check = f'touch "{mark}"; while [ ! -e "{release}" ]; do sleep 0.05; done; {PYTEST}'
    env = {**base_env, "STUB_PLAN": str(plan)}
    killed_when(["build", "-n", "2", "--verify", check], cwd=project, env=env,
                ready=mark.exists, release=release)  # the orphaned check ends then; the resumed
    assert task(run_task)["status"] == "done"      # run's check does not wait
    done_at = task(run_task)["updated_at"]         # whole seconds: the resumed session starts
    wait_for(lambda: time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()) > done_at)   # later
    again = subprocess.run([sys.executable, str(RALPH), "build"], cwd=project, env=env,
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    t = task(run_task)
    assert t["status"] == "open" and "verify failed: " in t["fail_reason"]
    assert "FAILED tests/test_calc.py::test_add" in t["fail_reason"]
    assert [e["task"] for e in verify_events(project)] == ["fix-add", "other"]


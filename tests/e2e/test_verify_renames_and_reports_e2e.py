"""The verify gate with the real runners, end to end (docs/verify.md, docs/decisions/0049): a
test renamed in place is judged under its old name by the second run, so an honest rename ends
done and a rename that weakens a test the code fails is held; the first run names its failing
tests from the runner's own report, which is written outside the checkout."""
from __future__ import annotations

import json

from conftest import git
from test_verify_as_they_stood_e2e import (JS_COMMAND, NODE_FIX, held_for, js_project,  # noqa: F401
                                          node_project)
from test_verify_e2e import (CLAIM, DONE, FIX, LAZY, PYTEST, build, plan,  # noqa: F401
                             project, sessions, task, verify_events)

BREAK_ADD = "sed -i '0,/return a + b/ s/return a + b/return a - b/' calc.py\n"


def again(run_task, plan, script: str) -> None:
    """The task reopened for one more session running script."""
    assert run_task("_reopen", "fix-add", "--reason", "again").returncode == 0
    sessions(plan, script)
    (plan / "prompts.jsonl").unlink()


def stored(repo) -> dict:
    return json.loads((repo / ".ralph" / "verify" / "fix-add.json").read_text())


def test_pytest_a_test_renamed_in_place_ends_done_and_renamed_and_weakened_is_held(
        build, plan, project, run_task):
    rename = "sed -i 's/^def test_add():/def test_add_two_numbers():/' tests/test_calc.py\n"
    sessions(plan, CLAIM + FIX + rename + DONE)
    proc = build("-n", "1", "--verify", PYTEST)
    assert proc.returncode == 0, proc.stderr
    assert task(run_task)["status"] == "done", task(run_task)
    (event,) = verify_events(project)
    assert (event["verdict"], event["findings"], event["runs"]) == ("passed", [], 2)
    assert "no longer run by these names: test_add)" in proc.stderr
    assert (stored(project)["second"]["gone"], stored(project)["second"]["dropped"]) == (
        ["test_add"], [])
    # renamed again and made to pass with add() broken: the start's test fails as it stood
    weaken = ("sed -i 's/^def test_add_two_numbers():/def test_add_runs():/; "
              "s/assert result == 4/assert result in (0, 4)/' tests/test_calc.py\n")
    again(run_task, plan, CLAIM + BREAK_ADD + weaken + DONE)
    held_for(run_task, build("-n", "1", "--verify", PYTEST),
             "the start's tests fail with the test side as it stood: "
             "tests/test_calc.py::test_add_two_numbers",
             "test test_add_two_numbers of the start no longer runs")
    assert stored(project)["second"]["gone"] == []


def test_vitest_a_test_renamed_in_place_ends_done_and_renamed_and_weakened_is_held(
        build, plan, git_repo, base_env, run_task):
    js_project(git_repo, base_env, run_task, "vitest")
    rename = "sed -i 's/adds two numbers/adds pairs/' calc.test.js\n"
    sessions(plan, CLAIM + "sed -i 's/a - b/a + b/' calc.js\n" + rename + DONE)
    proc = build("-n", "1", "--verify", JS_COMMAND["vitest"], timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert task(run_task)["status"] == "done", task(run_task)
    (event,) = verify_events(git_repo)
    assert (event["verdict"], event["findings"], event["runs"]) == ("passed", [], 2)
    assert stored(git_repo)["second"]["gone"] == ["adds two numbers"]
    weaken = ("sed -i 's/a + b/a - b/' calc.js\n"
              "sed -i 's/adds pairs/adds/; s/2 \\* i/0/' calc.test.js\n")
    again(run_task, plan, CLAIM + weaken + DONE)
    held_for(run_task, build("-n", "1", "--verify", JS_COMMAND["vitest"], timeout=180),
             "the start's tests fail with the test side as it stood: calc.test.js > adds pairs",
             "test adds pairs of the start no longer runs")


def test_node_test_a_test_file_renamed_ends_done(build, plan, node_project, run_task):
    """node --test knows its tests by file, and its report names none: a file no longer run
    is no finding when the second run passed."""
    sessions(plan, CLAIM + NODE_FIX + "git mv test/calc.test.js test/add.test.js\n" + DONE)
    proc = build("-n", "1", "--verify", "node --test")
    assert proc.returncode == 0, proc.stderr
    assert task(run_task)["status"] == "done", task(run_task)
    assert (stored(node_project)["second"]["gone"], stored(node_project)["second"]["dropped"]) \
        == (["calc.test.js"], [])


def untracked(repo) -> list[str]:
    """The files git does not track, ralph's own under .ralph/ aside."""
    listed = git(repo, "status", "--porcelain", "--ignored", "--untracked-files=all")
    return [line for line in listed.splitlines() if not line[3:].startswith(".ralph/")]


# Run 1 names the failing tests from the report: the output's tail would name a decoy (pytest,
# its summary off) or nothing (jest, the test's name pushed out of the tail by its diff)
DECOY = "    print('FAILED tests/test_other.py::test_decoy')\n"


def test_pytest_run_1_names_its_failing_tests_from_the_junit_report(build, plan, project,
                                                                    run_task, base_env):
    tests = project / "tests" / "test_calc.py"
    tests.write_text(tests.read_text().replace("    result = add(2, 2)\n",
                                               DECOY + "    result = add(2, 2)\n"))
    git(project, "commit", "-qam", "a decoy", env=base_env)
    before = untracked(project)
    command = "python -m pytest -p no:cacheprovider -rN"       # the default verbosity
    sessions(plan, LAZY)
    proc = build("-n", "1", "--verify", command)
    assert proc.returncode == 0, proc.stderr
    reason = task(run_task)["fail_reason"]
    head, tail = reason.split("\n", 1)
    assert head.startswith(f"verify failed: `{command}` exited 1 at ")
    assert head.endswith(": tests/test_calc.py::test_add"), head
    assert "test_decoy" in tail and "generated xml file" not in tail    # the user's output
    (event,) = verify_events(project)
    assert (event["verdict"], event["exit_code"]) == ("failed", 1)
    assert untracked(project) == before                   # the report was written elsewhere


def test_jest_run_1_names_its_failing_tests_from_the_json_report(build, plan, git_repo,
                                                                 base_env, run_task):
    js_project(git_repo, base_env, run_task, "jest")
    before = untracked(git_repo)
    sessions(plan, LAZY)
    proc = build("-n", "1", "--verify", JS_COMMAND["jest"], timeout=180)
    assert proc.returncode == 0, proc.stderr
    head, tail = task(run_task)["fail_reason"].split("\n", 1)
    assert head.startswith(f"verify failed: `{JS_COMMAND['jest']}` exited 1 at ")
    assert head.endswith(": calc.test.js > adds two numbers"), head
    assert "Test results written to" not in tail     # the user's output, as without the report
    (event,) = verify_events(git_repo)
    assert (event["verdict"], event["exit_code"]) == ("failed", 1)
    assert untracked(git_repo) == before

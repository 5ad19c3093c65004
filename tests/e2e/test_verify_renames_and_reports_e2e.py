"""The verify gate with the real runners, end to end (docs/verify.md): the first run names its
failing tests from the runner's own report, which is written outside the checkout."""
from __future__ import annotations

from conftest import git
from test_verify_as_they_stood_e2e import JS_COMMAND, js_project
from test_verify_e2e import (LAZY, build, plan, project, sessions, task,  # noqa: F401
                             verify_events)


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

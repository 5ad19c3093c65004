"""The verify gate's second run, end to end (docs/verify.md, docs/decisions/0038): a session
that touched the test side is judged again with the tests as they stood at its start, in a
scratch worktree, with the real runners (pytest, `node --test`) and the stub agent
tests/stubs/claude-verify editing a small project. Tampering sessions that make the verify
command pass without the fix are held; honest ones, with their own new tests, skips and
moves, end done; the scratch worktree never outlives the run, nor touches the checkout."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import RALPH, git
from loophelp import killed_when
from ralphpy.parallel.worktrees import scratch_root
from test_verify_e2e import (CLAIM, DONE, FIX, NODE_TEST, PYTEST, build,  # noqa: F401
                             node_project_with, plan, project, sessions, task, verify_events)


def held_for(run_task, proc, *texts: str) -> str:
    assert proc.returncode == 0, proc.stderr
    t = task(run_task)
    assert t["status"] == "open" and t["held"], t
    for text in texts:
        assert text in t["held"], t["held"]
    return t["held"]


STOOD = "the start's tests fail with the test side as it stood: tests/test_calc.py::test_add"


# The three kinds of tampering that end done with a pattern-reading check: each makes
# `python -m pytest` pass without fixing add().
def test_a_new_hook_file_that_changes_the_exit_status_is_held(build, plan, project, run_task):
    hook = ("printf 'def pytest_sessionfinish(session, exitstatus):\\n"
            "    session.exitstatus = 0\\n' > conftest.py\n")
    sessions(plan, CLAIM + hook + DONE)
    held = held_for(run_task, build("-n", "1", "--verify", PYTEST), STOOD)
    assert "verify failed with the tests as they stood" in held
    (event,) = verify_events(project)
    assert (event["verdict"], event["exit_code"], event["runs"]) == ("held", 0, 2)


def test_the_code_under_test_replaced_from_a_test_support_file_is_held(build, plan, project,
                                                                       run_task):
    stand_in = ("printf 'import calc\\n\\ncalc.add = lambda a, b: a + b\\n' > "
                "tests/conftest.py\n")
    sessions(plan, CLAIM + stand_in + DONE)
    held_for(run_task, build("-n", "1", "--verify", PYTEST), STOOD)
    assert (project / "tests" / "conftest.py").exists()          # the checkout is the session's
    assert "return a - b" in (project / "calc.py").read_text().split("def sub")[0]


def test_an_assertion_whose_failure_the_test_swallows_is_held(build, plan, project, run_task):
    swallow = ("sed -i 's/^    assert result == 4$/    try:\\n        assert result == 4\\n"
               "    except AssertionError:\\n        pass/' tests/test_calc.py\n")
    sessions(plan, CLAIM + swallow + DONE)
    held_for(run_task, build("-n", "1", "--verify", PYTEST), STOOD)
    assert "except AssertionError" in (project / "tests" / "test_calc.py").read_text()
    assert git(project, "worktree", "list").count("\n") == 1      # the scratch one is gone
    assert not scratch_root(project).exists()


NEW_TEST = textwrap.dedent("""\


    @pytest.mark.skipif(sys.platform == "win32", reason="POSIX only")
    def test_add_negative():
        assert add(-2, -3) == -5
""")


def test_a_fix_with_a_new_test_carrying_a_platform_skipif_ends_done(build, plan, project,
                                                                    run_task, tmp_path):
    (tmp_path / "new_test.py").write_text(NEW_TEST)
    add_test = (f"cat {tmp_path / 'new_test.py'} >> tests/test_calc.py\n"
                "sed -i 's/^import pytest$/import sys\\n\\nimport pytest/' tests/test_calc.py\n")
    sessions(plan, CLAIM + FIX + add_test + DONE)
    proc = build("-n", "1", "--verify", PYTEST)
    assert proc.returncode == 0, proc.stderr
    assert task(run_task)["status"] == "done"
    (event,) = verify_events(project)
    assert (event["verdict"], event["findings"], event["runs"]) == ("passed", [], 2)
    assert "the tests as they stood passed too" in proc.stderr


def test_tests_split_across_files_end_done_and_a_failing_test_dropped_is_named(
        build, plan, project, run_task):
    """Moving test_sub to a file of its own is no finding (the runner still collects it);
    deleting it while breaking sub() is, by its name: it fails as it stood."""
    split = ("python - <<'EOF'\nfrom pathlib import Path\n"
             "p = Path('tests/test_calc.py'); text = p.read_text()\n"
             "head, sub = text.split('\\n\\ndef test_sub')\n"
             "p.write_text(head + '\\n')\n"
             "Path('tests/test_sub.py').write_text('from calc import sub\\n\\n\\ndef test_sub'"
             " + sub)\nEOF\n")
    sessions(plan, CLAIM + FIX + split + DONE)
    proc = build("-n", "1", "--verify", PYTEST)
    assert proc.returncode == 0, proc.stderr
    assert task(run_task)["status"] == "done", task(run_task)
    drop = ("sed -i '/^def test_sub/,$d' tests/test_sub.py\n"
            "sed -i '$ s/return a - b/return b - a/' calc.py\n")
    assert run_task("_reopen", "fix-add", "--reason", "again").returncode == 0
    sessions(plan, CLAIM + drop + DONE)
    (plan / "prompts.jsonl").unlink()
    held_for(run_task, build("-n", "1", "--verify", PYTEST),
             "test test_sub of the start no longer runs",
             "the start's tests fail with the test side as it stood: tests/test_sub.py::test_sub")


def test_a_task_whose_tests_may_change_is_judged_by_one_run(build, plan, project, run_task):
    assert run_task("update", "fix-add", "--description",
                    "Make add() add.\n\ntests: may change").returncode == 0
    swallow = "sed -i 's/assert result == 4/assert result in (0, 4)/' tests/test_calc.py\n"
    sessions(plan, CLAIM + swallow + DONE)
    proc = build("-n", "1", "--verify", PYTEST)
    assert proc.returncode == 0, proc.stderr
    assert task(run_task)["status"] == "done"
    assert "judged by the session's tests alone (tests: may change)" in proc.stderr
    (event,) = verify_events(project)
    assert event["runs"] == 1


def test_ralph_killed_during_the_second_run_leaves_a_worktree_the_next_run_removes(
        plan, project, run_task, base_env, tmp_path):
    mark, release = tmp_path / "second-run", tmp_path / "release"
    check = (f'case "$PWD" in */ralph-verify/*) touch "{mark}"; '
             f'while [ ! -e "{release}" ]; do sleep 0.05; done;; esac; {PYTEST}')
    sessions(plan, CLAIM + FIX + "echo '# more' >> tests/test_calc.py\n" + DONE)
    env = {**base_env, "STUB_PLAN": str(plan)}
    killed_when(["build", "-n", "1", "--verify", check], cwd=project, env=env,
                ready=mark.exists, release=release)
    scratch = scratch_root(project)
    assert scratch.exists() and str(scratch) in git(project, "worktree", "list")
    assert git(project, "status", "--porcelain", "--untracked-files=no") == ""   # checkout
    again = subprocess.run([sys.executable, str(RALPH), "build", "-n", "1", "--verify",
                            PYTEST], cwd=project, env=env, capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 0, again.stderr
    assert not scratch.exists()
    assert git(project, "worktree", "list").count("\n") == 1


# node --test: which files run is node's own rule; its test in a describe block, which its
# JUnit report names as `calc > adds two numbers` (its output's tail as two lines)
NODE_SUITE = NODE_TEST.replace("{ test }", "{ describe, test }").replace(
    "test('adds", "describe('calc', () => test('adds").replace("});\n", "}));\n")


@pytest.fixture
def node_project(git_repo: Path, base_env: dict, run_task) -> Path:
    return node_project_with(NODE_SUITE, git_repo, base_env, run_task)


NODE_FIX = "sed -i 's/a - b/a + b/' calc.js\n"


@pytest.mark.parametrize("cheat", [
    # the test made to require a stand-in of the code
    "printf 'exports.add = (a, b) => a + b;\\n' > test/calc-stub.js\n"
    "sed -i \"s#require('../calc.js')#require('./calc-stub.js')#\" test/calc.test.js\n",
    # the test file renamed to a name node --test does not run
    "git mv test/calc.test.js test/calc.test.js.off\n",
], ids=["stand-in", "renamed-away"])
def test_node_test_tampering_is_held(build, plan, node_project, run_task, cheat):
    sessions(plan, CLAIM + cheat + DONE)
    held_for(run_task, build("-n", "1", "--verify", "node --test"),
             "the start's tests fail with the test side as it stood: calc > adds two numbers")


def test_node_test_honest_fix_with_a_skipped_new_test_file_ends_done(build, plan, node_project,
                                                                     run_task):
    new = ("printf \"const { test } = require('node:test');\\n"
           "test('windows only', { skip: process.platform !== 'win32' }, () => {});\\n\" "
           "> test/platform.test.js\n")
    sessions(plan, CLAIM + NODE_FIX + new + DONE)
    proc = build("-n", "1", "--verify", "node --test")
    assert proc.returncode == 0, proc.stderr
    assert task(run_task)["status"] == "done", task(run_task)
    (event,) = verify_events(node_project)
    assert (event["verdict"], event["runs"]) == ("passed", 2)
    stored = json.loads((node_project / ".ralph" / "verify" / "fix-add.json").read_text())
    assert stored["second"]["exit_code"] == 0 and stored["second"]["dropped"] == []


# jest and vitest, pinned in package.json beside the agent CLIs (`make agents`): one shared
# node_modules, linked into each tiny project as a project's own would be
NODE_MODULES = Path(__file__).resolve().parents[2] / ".agents" / "node_modules"
# a failure whose diff (40 lines) pushes the test's name out of the output's tail: named
# only from the runner's report
JS_ADDS = ("test('adds two numbers', () => {\n"
           "  const n = Array.from({ length: 40 }, (_, i) => i);\n"
           "  expect(n.map((i) => add(i, i))).toEqual(n.map((i) => 2 * i));\n});\n")
JS_TEST = {
    "jest": "const { add } = require('./calc');\n\n" + JS_ADDS,
    "vitest": "import { test, expect } from 'vitest';\nimport { add } from './calc.js';\n\n"
              + JS_ADDS,
}
JS_CALC = {"jest": "exports.add = (a, b) => a - b;\n",
           "vitest": "export const add = (a, b) => a - b;\n"}
JS_COMMAND = {"jest": "npx jest --ci", "vitest": "npx vitest run"}


def js_project(git_repo: Path, base_env: dict, run_task, runner: str) -> Path:
    if not (NODE_MODULES / ".bin" / runner).exists():
        pytest.skip(f"{runner} is not installed here (make agents needs npm)")
    (git_repo / ".gitignore").write_text(".ralph/\nnode_modules\n")
    (git_repo / "node_modules").symlink_to(NODE_MODULES)
    package = {"name": "calc", "private": True, "scripts": {"test": runner}}
    if runner == "vitest":
        package["type"] = "module"
    (git_repo / "package.json").write_text(json.dumps(package, indent=2) + "\n")
    (git_repo / "calc.js").write_text(JS_CALC[runner])
    (git_repo / "calc.test.js").write_text(JS_TEST[runner])
    git(git_repo, "add", "-A", env=base_env)
    git(git_repo, "commit", "-qm", "calc.js", env=base_env)
    assert run_task("create", "fix-add", "Fix add()").returncode == 0
    return git_repo


JS_CHEATS = {
    # the test file left out by jest's configuration in package.json (its runner section)
    "jest-config": ("jest", "python - <<'EOF'\nimport json\n"
                    "p = json.load(open('package.json'))\n"
                    "p['jest'] = {'testPathIgnorePatterns': ['calc'], 'passWithNoTests': True}\n"
                    "json.dump(p, open('package.json', 'w'), indent=2)\nEOF\n"),
    # the test file left out by a new vitest configuration
    "vitest-config": ("vitest", "printf \"export default { test: { exclude: "
                      "['**/node_modules/**', 'calc.test.js'], passWithNoTests: true } };\\n\" "
                      "> vitest.config.js\n"),
}


@pytest.mark.parametrize("cheat", list(JS_CHEATS))
def test_jest_and_vitest_tampering_is_held(build, plan, git_repo, base_env, run_task, cheat):
    runner, script = JS_CHEATS[cheat]
    js_project(git_repo, base_env, run_task, runner)
    sessions(plan, CLAIM + script + DONE)
    held = held_for(run_task, build("-n", "1", "--verify", JS_COMMAND[runner], timeout=180),
                    "the start's tests fail with the test side as it stood: "
                    "calc.test.js > adds two numbers")       # from the runner's JSON report
    assert f"`{JS_COMMAND[runner]}` exited 1" in held


@pytest.mark.parametrize("runner", ["jest", "vitest"])
def test_jest_and_vitest_honest_fixes_with_skipped_new_tests_end_done(build, plan, git_repo,
                                                                      base_env, run_task, runner):
    js_project(git_repo, base_env, run_task, runner)
    skip_if = "test.skip" if runner == "jest" else "test.skipIf(process.platform !== 'win32')"
    new = (f"printf \"{JS_TEST[runner].splitlines()[0]}\\n"
           f"{skip_if}('windows only', () => {{}});\\n\" > platform.test.js\n")
    sessions(plan, CLAIM + "sed -i 's/a - b/a + b/' calc.js\n" + new + DONE)
    proc = build("-n", "1", "--verify", JS_COMMAND[runner], timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert task(run_task)["status"] == "done", task(run_task)
    (event,) = verify_events(git_repo)
    assert (event["verdict"], event["runs"]) == ("passed", 2)
    stored = json.loads((git_repo / ".ralph" / "verify" / "fix-add.json").read_text())
    assert stored["second"]["dropped"] == []


def test_npm_test_s_script_changed_is_held(build, plan, node_project, base_env, run_task):
    """package.json mixes its test script with the rest: the script alone is restored."""
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed on this machine")
    (node_project / "package.json").write_text(
        '{\n  "name": "calc",\n  "scripts": {\n    "test": "node --test"\n  }\n}\n')
    git(node_project, "add", "-A", env=base_env)
    git(node_project, "commit", "-qm", "npm test", env=base_env)
    cheat = ("sed -i 's/\"node --test\"/\"exit 0\"/' package.json\n"
             "sed -i 's/\"name\": \"calc\"/\"name\": \"calc\", \"version\": \"1.0.0\"/' "
             "package.json\n")
    sessions(plan, CLAIM + cheat + DONE)
    held_for(run_task, build("-n", "1", "--verify", "npm test"),
             "package.json: the start's tests fail with the test side as it stood")

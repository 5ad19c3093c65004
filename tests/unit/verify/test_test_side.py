"""verify.test_side and verify.runners on texts and small trees: which files are the test
side, a mixed file's runner section restored alone, a verify command recognised as a call of
a runner, failing tests named from the runner's report or its output."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ralphpy.verify import failures, runners, test_side


@pytest.mark.parametrize("path, side", [
    ("tests/test_calc.py", True), ("conftest.py", True), ("pkg/sitecustomize.py", True),
    ("pytest.ini", True), ("lib/x.pth", True), ("test/calc.js", True), ("calc-test.mjs", True),
    ("src/__mocks__/api.ts", True), ("jest.setup.js", True), ("vitest.config.ts", True),
    ("spec/fixtures/a.json", True), ("calc.py", False), ("src/testing.py", False),
    ("package.json", False), ("vite.config.ts", False), ("latest.js", False),
])
def test_the_test_side_by_path(path, side):
    assert test_side.is_test_side(path) is side


def test_protected_files_are_on_the_test_side():
    assert test_side.is_test_side("golden/out.txt", ("golden/",))


def test_pyproject_s_pytest_section_alone_is_restored():
    start = "[project]\nname = 'a'\n\n[tool.pytest.ini_options]\naddopts = '-q'\n"
    now = ("[project]\nname = 'b'\n\n[tool.pytest.ini_options]\naddopts = '-q -k easy'\n\n"
           "[tool.ruff]\nline-length = 99\n")
    text = test_side.restore_section("pyproject.toml", start, now)
    assert "name = 'b'" in text and "line-length = 99" in text
    assert "addopts = '-q'\n" in text and "-k easy" not in text
    assert "[tool:pytest]" not in test_side.restore_section(       # a section the session added
        "setup.cfg", None, "[metadata]\nname = a\n\n[tool:pytest]\naddopts = -x\n")


def test_package_json_s_jest_object_and_test_scripts_alone_are_restored():
    start = {"name": "a", "scripts": {"test": "jest", "build": "tsc"}}
    now = {"name": "a", "version": "2", "jest": {"testPathIgnorePatterns": ["calc"]},
           "scripts": {"test": "exit 0", "test:unit": "true", "build": "tsc -b"}}
    text = test_side.restore_section("package.json", json.dumps(start), json.dumps(now))
    assert json.loads(text) == {"name": "a", "version": "2",
                                "scripts": {"build": "tsc -b", "test": "jest"}}
    assert test_side.restore_section("package.json", "{}", "{not json") is None


@pytest.mark.parametrize("command, name", [
    ("python -m pytest -q tests", "pytest"), ("pytest", "pytest"), (".venv/bin/pytest -x", "pytest"),
    ("uv run pytest", "pytest"), ("node --test", "node --test"), ("npx jest --ci", "jest"),
    ("npx vitest run", "vitest"), ("npm test", "jest"), ("make test", None),
    ("pytest && echo ok", None), ("python -m unittest", None),
])
def test_a_verify_command_is_recognised_as_a_call_of_its_runner(tmp_path, command, name):
    (tmp_path / "package.json").write_text('{"scripts": {"test": "jest --ci"}}')
    found = runners.recognise(command, tmp_path)
    assert (found.name if found else None) == name


def test_npm_test_is_read_through_its_script(tmp_path):
    (tmp_path / "package.json").write_text('{"scripts": {"test": "jest --ci"}}')
    assert runners.recognise("npm test", tmp_path).argv == ("npx", "jest", "--ci")
    (tmp_path / "package.json").write_text('{"scripts": {"test": "python -m pytest -q"}}')
    assert runners.recognise("npm test", tmp_path).argv == ("python", "-m", "pytest", "-q")


def test_node_test_s_files_by_its_own_rules(tmp_path):
    for rel in ("test/a.js", "b.test.mjs", "c_test.cjs", "test-d.js", "lib/e.js",
                "node_modules/f/test.js", ".hidden/g.test.js"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    found = runners.tests(runners.Runner("node --test", ("node", "--test")), tmp_path, {}, 10)
    assert found == {"a.js", "b.test.mjs", "c_test.cjs", "test-d.js"}


def test_failing_tests_are_named_from_junit_xml_else_the_output(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text("")
    report = tmp_path / "report.xml"
    report.write_text('<testsuites><testsuite><testcase classname="tests.test_calc" '
                      'name="test_add"><failure message="x"/></testcase><testcase '
                      'classname="tests.test_calc" name="test_sub"/></testsuite></testsuites>')
    found = failures.outcomes(runners.Runner("pytest", ()), report, tmp_path)
    assert found == {"tests/test_calc.py::test_add": True, "tests/test_calc.py::test_sub": False}
    assert failures.named(found, "") == ["tests/test_calc.py::test_add"]
    tail = "✖ adds two numbers (1.2ms)\n  ● calc › adds\nnot ok 3 - subtracts\n"
    assert failures.named(failures.outcomes(None, Path("/nonexistent"), tmp_path), tail) == [
        "adds two numbers", "calc › adds", "subtracts"]


def test_a_report_that_cannot_be_read_falls_back_to_the_output_s_tail(tmp_path):
    jest, node = runners.Runner("jest", ("jest",)), runners.Runner("node --test", ("node",))
    report = tmp_path / "report"
    report.write_text('{"testResults": [')                  # cut short: the runner was killed
    assert failures.named(failures.outcomes(jest, report, tmp_path), "  ● calc › adds\n") == [
        "calc › adds"]
    assert failures.named(failures.outcomes(node, report, tmp_path), "✖ adds (1ms)\n") == ["adds"]


def test_the_runner_is_asked_for_its_report_beside_its_normal_output(tmp_path):
    report = tmp_path / "report"
    (tmp_path / "package.json").write_text('{"scripts": {"test": "vitest run"}}')
    vitest = runners.recognise("npm test", tmp_path)
    assert failures.asking(vitest, "npm test", {}, report) == (
        f"npm test -- --reporter=default --reporter=json --outputFile={report}", {})
    node = runners.recognise("node --test test/", tmp_path)
    command, env = failures.asking(node, "node --test test/", {"NODE_OPTIONS": "--x"}, report)
    assert command == "node --test test/"                  # node reads reporters after --test
    assert env["NODE_OPTIONS"].startswith("--x --test-reporter=spec")


def test_the_second_run_leaves_the_session_s_new_test_files_out_of_the_command(tmp_path):
    command = "python -m pytest -q tests/test_a.py ./tests/test_new.py::test_x"
    runner = runners.recognise(command, tmp_path)
    assert runners.without(runner, command, {"tests/test_new.py"}) == \
        "python -m pytest -q tests/test_a.py"
    alone = "pytest tests/test_new.py"
    assert runners.without(runners.recognise(alone, tmp_path), alone, {"tests/test_new.py"}) \
        is None
    assert runners.without(runner, command, {"tests/other.py"}) == command
    assert runners.without(None, "make test", {"tests/test_new.py"}) == "make test"


def test_a_mixed_file_changed_outside_its_runner_section_leaves_the_test_side_alone():
    start = "[project]\ndependencies = []\n\n[tool.pytest.ini_options]\naddopts = '-q'\n\n" \
            "[tool.ruff]\nline-length = 99\n"
    now = start.replace("dependencies = []", "dependencies = ['requests']")
    assert not test_side.section_changed("pyproject.toml", start, now)
    assert test_side.section_changed("pyproject.toml", start, now.replace("'-q'", "'-q -x'"))
    assert test_side.restore_section("pyproject.toml", start, now.replace("'-q'", "'-x'")) == now
    package = '{"name": "a", "scripts": {"test": "jest"}}'
    assert not test_side.section_changed(
        "package.json", package, '{"name": "a", "scripts": {"test": "jest", "lint": "x"}}')
    assert test_side.section_changed("package.json", package, '{"jest": {"bail": 1}}')


@pytest.mark.parametrize("runner, line, name", [
    ("pytest", "tests/test_calc.py::TestX::test_y[1]", "TestX::test_y[1]"),
    ("pytest", "3 tests collected in 0.01s", None),
    ("jest", "/repo/src/calc.test.js", "calc.test.js"),
    ("jest", "src/calc.test.js > adds", None),            # a test of its report: jest lists files
    ("vitest", "calc.test.js > calc > adds", "calc > adds"),
    ("node --test", "calc > adds", None),                   # its report names no file
])
def test_a_test_is_named_alike_from_the_runner_s_listing_and_its_report(runner, line, name):
    assert runners.test_id(runners.Runner(runner, ()), line) == name

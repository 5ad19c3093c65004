"""Owns which tests failed in a run of the verify command: from the report a recognised runner
(verify.runners) writes beside its output (JUnit XML or JSON), else from the output's tail.
Knows nothing of tasks, of git or of verdicts."""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Iterator, Mapping
from xml.etree import ElementTree

from ralphpy.verify.runners import NPM_TEST, Runner

# failing tests in a runner's summary: pytest, node's spec and TAP, jest, vitest
_FAILED_LINE = re.compile(r"^\s*(?:FAILED (?P<py>\S+)|✖ (?P<node>.+?)(?: \(\d[\d.]*ms\))?$"
                          r"|● (?P<jest>.+›.+)$|(?:FAIL|×) (?P<js>.+?)(?: \d+ms)?$"
                          r"|not ok \d+ - (?P<tap>.+)$)")
_MAX_NAMED = 10


def asking(runner: Runner | None, command: str, env: Mapping[str, str], report: Path
           ) -> tuple[str, dict[str, str]]:
    """The command and environment with the runner also writing its report to `report`."""
    if runner is None:
        return command, dict(env)
    # node takes reporter flags only right after --test, where `npm test -- ...` cannot put
    # them: both get theirs through the environment (each quotes a path with spaces)
    if runner.name in ("pytest", "node --test"):
        key, flags = ("PYTEST_ADDOPTS", shlex.quote(f"--junitxml={report}")) \
            if runner.name == "pytest" else ("NODE_OPTIONS", "--test-reporter=spec "
                                             "--test-reporter-destination=stdout --test-reporter"
                                             f'=junit "--test-reporter-destination={report}"')
        return command, {**env, key: f"{env.get(key, '')} {flags}".strip()}
    words = ["--json"] if runner.name == "jest" else ["--reporter=default", "--reporter=json"]
    words.append(f"--outputFile={report}")
    npm = ["--"] if shlex.split(command) in NPM_TEST else []     # to the script's runner
    return f"{command} {shlex.join(npm + words)}", dict(env)


def named(runner: Runner | None, report: Path, tail: str, tree: Path) -> list[str]:
    """The failing tests: from the runner's report when it names any, else from the tail."""
    read = {"pytest": _from_pytest, "node --test": _from_node}.get(
        runner.name if runner else "", _from_json)
    try:
        found = read(report, tree)
    except (OSError, ValueError, ElementTree.ParseError, KeyError, TypeError, AttributeError):
        found = []
    if not found:
        for line in tail.splitlines():
            if (m := _FAILED_LINE.match(line)):
                found.append(next(g for g in m.groups() if g).strip())
    return list(dict.fromkeys(found))[:_MAX_NAMED]


def _failed(case: ElementTree.Element) -> bool:
    return case.find("failure") is not None or case.find("error") is not None


def _from_pytest(report: Path, tree: Path) -> list[str]:
    """pytest's `tests.test_calc.TestX` + `test_y` as its node id `tests/test_calc.py::TestX::
    test_y`, when the module's file is in the tree."""
    found = []
    for case in filter(_failed, ElementTree.parse(report).getroot().iter("testcase")):
        classname, name = case.get("classname", ""), case.get("name", "")
        parts = classname.split(".")
        cut = next((cut for cut in range(len(parts), 0, -1)
                    if (tree / ("/".join(parts[:cut]) + ".py")).is_file()), 0)
        found.append("::".join(["/".join(parts[:cut]) + ".py", *parts[cut:], name]) if cut
                     else f"{classname}::{name}" if classname else name)
    return found


def _from_node(report: Path, tree: Path) -> list[str]:
    """node's JUnit XML: a suite for each `describe`, named `describe > test`."""
    def walk(node: ElementTree.Element, suites: list[str]) -> Iterator[str]:
        for child in node:
            if child.tag == "testsuite":
                yield from walk(child, [*suites, child.get("name", "")])
            elif child.tag == "testcase" and _failed(child):
                yield " > ".join([*suites, child.get("name", "")])
    return list(walk(ElementTree.parse(report).getroot(), []))


def _from_json(report: Path, tree: Path) -> list[str]:
    """jest's and vitest's JSON (one shape): `file > describe > test` of each failed test; a
    file that failed before its tests ran (an import error) by its name."""
    found = []
    for file in json.loads(report.read_text())["testResults"]:
        path = Path(file["name"])
        name = path.relative_to(tree).as_posix() if path.is_relative_to(tree) else file["name"]
        failed = [" > ".join([name, *t.get("ancestorTitles", []), t["title"]])
                  for t in file.get("assertionResults", []) if t.get("status") == "failed"]
        found += failed or ([name] if file.get("status") == "failed" else [])
    return found


__all__ = ["asking", "named"]

"""Owns a run of the verify command (both of the gate's) with a recognised runner asked for
its report, JUnit XML or JSON, and which tests failed: from that report, else from the
output's tail. Knows nothing of tasks or verdicts."""
from __future__ import annotations

import json
import re
import shlex
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Iterator, Mapping
from xml.etree import ElementTree

from ralphpy.verify import gate
from ralphpy.verify.runners import NPM_TEST, Runner, recognise

# failing tests in a runner's summary: pytest, node's spec and TAP, jest, vitest
_FAILED_LINE = re.compile(r"^\s*(?:FAILED (?P<py>\S+)|✖ (?P<node>.+?)(?: \(\d[\d.]*ms\))?$"
                          r"|● (?P<jest>.+›.+)$|(?:FAIL|×) (?P<js>.+?)(?: \d+ms)?$"
                          r"|not ok \d+ - (?P<tap>.+)$)")
_MAX_NAMED = 10


def run(command: str, tree: Path, env: Mapping[str, str], timeout_s: float
        ) -> tuple[gate.Check, dict[str, bool]]:
    """The command run in tree (verify.gate), a recognised runner writing its report outside
    the tree: the check, under the user's command, its failing tests named and without the
    runner's line about that report; and each test the report names, with whether it failed."""
    runner = recognise(command, tree)
    with tempfile.TemporaryDirectory(prefix="ralph-verify-") as tmp:
        report = Path(tmp) / "report"
        asked_command, asked_env = asking(runner, command, env, report)
        check = gate.run(asked_command, tree, asked_env, timeout_s, hide=Path(tmp).name)
        found = outcomes(runner, report, tree)
    failing = () if check.passed else tuple(named(found, check.tail))
    return replace(check, command=command, failing=failing), found


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


def outcomes(runner: Runner | None, report: Path, tree: Path) -> dict[str, bool]:
    """Each test of the runner's report (jest's and vitest's files too), with whether it
    failed; {} when there is none."""
    read = {"pytest": _from_pytest, "node --test": _from_node}.get(
        runner.name if runner else "", _from_json)
    found: dict[str, bool] = {}
    try:
        for name, failed in read(report, tree) if runner else ():
            found[name] = found.get(name, False) or failed       # a test may appear twice
    except (OSError, ValueError, ElementTree.ParseError, KeyError, TypeError, AttributeError):
        return {}
    return found


def named(found: Mapping[str, bool], tail: str) -> list[str]:
    """The failing tests: from the report when it names any, else from the output's tail."""
    failed = [name for name, failing in found.items() if failing]
    names = [name for name in failed if not any(o.startswith(f"{name} > ") for o in failed)]
    if not names:
        for line in tail.splitlines():
            if (m := _FAILED_LINE.match(line)):
                names.append(next(g for g in m.groups() if g).strip())
    return list(dict.fromkeys(names))[:_MAX_NAMED]


def _failed(case: ElementTree.Element) -> bool:
    return case.find("failure") is not None or case.find("error") is not None


def _from_pytest(report: Path, tree: Path) -> Iterator[tuple[str, bool]]:
    """pytest's `tests.test_calc.TestX` + `test_y` as its node id `tests/test_calc.py::TestX::
    test_y`, when the module's file is in the tree."""
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        parts = classname.split(".")
        cut = next((cut for cut in range(len(parts), 0, -1)
                    if (tree / ("/".join(parts[:cut]) + ".py")).is_file()), 0)
        yield ("::".join(["/".join(parts[:cut]) + ".py", *parts[cut:], name]) if cut
               else f"{classname}::{name}" if classname else name), _failed(case)


def _from_node(report: Path, tree: Path) -> Iterator[tuple[str, bool]]:
    """node's JUnit XML: a suite for each `describe`, named `describe > test`."""
    def walk(node: ElementTree.Element, suites: list[str]) -> Iterator[tuple[str, bool]]:
        for child in node:
            if child.tag == "testsuite":
                yield from walk(child, [*suites, child.get("name", "")])
            elif child.tag == "testcase":
                yield " > ".join([*suites, child.get("name", "")]), _failed(child)
    return walk(ElementTree.parse(report).getroot(), [])


def _from_json(report: Path, tree: Path) -> Iterator[tuple[str, bool]]:
    """jest's and vitest's JSON (one shape): `file > describe > test` of each test, then its
    file by its name (named alone when it failed before its tests ran: an import error)."""
    for file in json.loads(report.read_text())["testResults"]:
        path = Path(file["name"])
        name = path.relative_to(tree).as_posix() if path.is_relative_to(tree) else file["name"]
        for t in file.get("assertionResults", []):
            yield " > ".join([name, *t.get("ancestorTitles", []), t["title"]]), \
                t.get("status") == "failed"
        yield name, file.get("status") == "failed"


__all__ = ["run", "asking", "outcomes", "named"]

"""Owns asking a test runner, instead of emulating it: whether a verify command is a
recognised call of pytest, `node --test`, jest or vitest (`npm test` through package.json),
and which tests it runs in a tree. Knows nothing of tasks, of git or of verdicts."""
from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ralphpy import programs
from ralphpy.verify import patterns

_SHELL = re.compile(r"[;&|<>`$(){}]")           # more than one call: not recognised
NPM_TEST = (["npm", "test"], ["npm", "t"], ["npm", "run", "test"], ["npm", "run-script", "test"])
_NODE_FILE = re.compile(r"(^|/)test/.*\.[cm]?js$|" + patterns.NODE_TEST_NAME)
_VERBOSITY = re.compile(r"-[qv]+|--quiet|--verbose")


@dataclass(frozen=True)
class Runner:
    name: str                 # pytest | node --test | jest | vitest
    argv: tuple[str, ...]     # the call as the command makes it


def recognise(command: str, tree: Path) -> Runner | None:
    """The runner a verify command calls, or None (a shell pipeline, another tool)."""
    if _SHELL.search(command):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if words in NPM_TEST:                      # npm test: the script it runs, one level
        try:
            script = json.loads((tree / "package.json").read_text())["scripts"]["test"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        found = recognise(str(script), tree) if isinstance(script, str) else None
        if found and found.name in ("jest", "vitest") and found.argv[0] != "npx":
            return Runner(found.name, ("npx", *found.argv))  # npm puts node_modules/.bin first
        return found
    rest = words
    while rest and (rest[0] in ("npx", "uv", "poetry", "pipenv") or rest[0] == "run"):
        rest = rest[1:]
    if not rest:
        return None
    tool = rest[0].rsplit("/", 1)[-1]
    if re.fullmatch(r"python[\d.]*", tool) and rest[1:3] == ["-m", "pytest"] \
            or tool in ("pytest", "py.test"):
        return Runner("pytest", tuple(words))
    if tool == "node" and "--test" in rest:
        return Runner("node --test", tuple(words))
    if tool in ("jest", "vitest"):
        return Runner(tool, tuple(words))
    return None


def without(runner: Runner | None, command: str, added: set[str]) -> str | None:
    """The command without the test files the session added (not the start's tests); None
    when it named only such files; as it is when the runner is not recognised."""
    if runner is None or not added:
        return command
    words = list(runner.argv)
    kept = [w for w in words if w.split("::", 1)[0].removeprefix("./") not in added]
    if kept == words:
        return command
    named = [w for w in kept[1:] if not w.startswith("-") and ("/" in w or "." in w)]
    return shlex.join(kept) if named else None


def tests(runner: Runner, tree: Path, env: Mapping[str, str], timeout_s: float
          ) -> set[str] | None:
    """The tests the runner runs in tree, by name without their file (a test moved to another
    file still runs; node --test and jest list files, by name). None: the runner cannot say."""
    if runner.name == "node --test":
        return _node_files(runner, tree)
    if runner.name == "pytest":             # one -q lists node ids (-qq: files, -v: a tree)
        argv = [w for w in runner.argv if not _VERBOSITY.fullmatch(w)] + [
            "--collect-only", "-q", "-p", "no:cacheprovider"]
    elif runner.name == "jest":
        argv = [*runner.argv, "--listTests"]
    else:
        argv = _vitest_list(runner.argv)
    try:
        done = programs.run(argv, cwd=tree, env=env, timeout=timeout_s)
    except (OSError, programs.TimeoutExpired):
        return None
    if done.code not in ((0, 5) if runner.name == "pytest" else (0,)):  # 5: none collected
        return None
    return {name for line in done.out.splitlines() if (name := test_id(runner, line))}


def test_id(runner: Runner, listed: str) -> str | None:
    """A test as `tests` names it, from a line of the runner's listing or a name in its report
    (verify.failures); None for any other line."""
    if runner.name == "pytest":
        return listed.split("::", 1)[1] if "::" in listed else None
    if runner.name == "jest":                           # its files: absolute in the listing
        return Path(listed).name if listed.strip() and " > " not in listed else None
    return listed.split(" > ", 1)[1] if runner.name == "vitest" and " > " in listed else None


def _vitest_list(argv: tuple[str, ...]) -> list[str]:
    """`vitest run ARGS` asked as `vitest list ARGS`."""
    words = list(argv)
    at = next(i for i, w in enumerate(words) if w.rsplit("/", 1)[-1] == "vitest")
    rest = [w for w in words[at + 1:] if w not in ("run", "--run")]
    return words[:at + 1] + ["list", *rest]


def _node_files(runner: Runner, tree: Path) -> set[str]:
    """node --test's files: named after --test, else its default names (no node_modules)."""
    named = [w for w in runner.argv[runner.argv.index("--test") + 1:] if not w.startswith("-")]
    if named:
        return {Path(w).name for w in named if (tree / w).is_file()}
    found = set()
    for folder, dirs, files in os.walk(tree):
        dirs[:] = [d for d in dirs if d != "node_modules" and not d.startswith(".")]
        rel = Path(folder).relative_to(tree).as_posix()
        found |= {name for name in files
                  if _NODE_FILE.search(f"{rel}/{name}" if rel != "." else name)}
    return found


__all__ = ["NPM_TEST", "Runner", "recognise", "without", "tests", "test_id"]

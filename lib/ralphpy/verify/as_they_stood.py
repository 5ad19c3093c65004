"""Owns the verify command's second run, the tests as they stood (docs/decisions/0038): in a
scratch worktree of the session's tree, the test side (verify.test_side) from the session's
start, its new test files left out. Knows nothing of tasks, verdicts or where `Scratch` is."""
from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Protocol

from ralphpy.verify import failures, gate, runners, tamper, test_side


class Scratch(Protocol):                        # the caller's (parallel.worktrees)

    def clean(self) -> None: ...
    def make(self, commit: str) -> Path: ...
    def bring_in(self, tree: Path, scratch: Path) -> None: ...
    def remove(self, scratch: Path) -> None: ...


@dataclass
class Second:                                          # what the second run found
    check: gate.Check                                  # its failing: the start's tests
    dropped: list[str] = field(default_factory=list)   # the start's tests that no longer run
    gone: list[str] = field(default_factory=list)      # ... by name, but passed as they stood
    restored: list[str] = field(default_factory=list)  # the test side taken from the start
    collect_s: float = 0.0                             # the runner asked which tests run

    def as_record(self) -> dict:
        return {"exit_code": self.check.exit_code, "duration_s": self.check.duration_s,
                "timed_out": self.check.timed_out, "tail_sha256": self.check.tail_sha256,
                "failing": list(self.check.failing), "dropped": self.dropped, "gone": self.gone,
                "restored": self.restored, "collect_s": round(self.collect_s, 3)}


def touched(tree: Path, base: str, env: Mapping[str, str], protect: tuple[str, ...]
            ) -> dict[str, str]:
    """The test-side files the session changed, by path: `A` added (untracked too), `M`
    changed, `D` deleted (git's letters; a rename is a deletion and an addition)."""
    if not base:
        return {}
    changed: dict[str, str] = {}
    words = gate.git_out(tree, "diff", "--name-status", "--no-renames", "-z", base, "--",
                         env=env).split("\0")
    for status, path in ((words[i][:1], words[i + 1]) for i in range(0, len(words) - 1, 2)
                         if words[i]):
        if test_side.is_test_side(path, protect) or (test_side.mixed(path) and (
                status != "M" or test_side.section_changed(
                    path, gate.git_out(tree, "show", f"{base}:{path}", env=env),
                    tamper.read(tree / path)))):
            changed[path] = status
    changed.update({path: "A" for path in _untracked(tree, env)
                    if test_side.is_test_side(path, protect) or test_side.mixed(path)})
    return changed


def _untracked(tree: Path, env: Mapping[str, str]) -> list[str]:
    listed = gate.git_out(tree, "ls-files", "-z", "--others", "--exclude-standard", env=env)
    return [path for path in listed.split("\0") if path]


def _prepare(tree: Path, scratch: Path, base: str, changed: Mapping[str, str],
             env: Mapping[str, str]) -> list[str]:
    """Make scratch the session's tree with the test side of `base`; the paths restored."""
    for path in _untracked(tree, env):
        if path not in changed and (tree / path).is_file():      # the session's code
            (scratch / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(tree / path, scratch / path, follow_symlinks=False)
    restored, whole = [], []
    for path, status in sorted(changed.items()):
        target = scratch / path
        if test_side.mixed(path) and target.is_file():
            start = None if status == "A" else gate.git_out(tree, "show", f"{base}:{path}", env=env)
            text = test_side.restore_section(path, start, target.read_text(errors="replace"))
            if text is None:                    # cannot be split: the session's file is used
                continue
            target.write_text(text)
        elif status == "A":
            target.unlink(missing_ok=True)      # the session's new test-side file: left out
        else:
            whole.append(path)
        restored.append(path)
    if whole:                                   # as git has them: binary files, modes
        gate.git_out(scratch, "checkout", "-q", base, "--", *whole, env=env)
    return restored


def run(command: str, tree: Path, base: str, changed: Mapping[str, str],
        env: Mapping[str, str], timeout_s: float, scratch: Scratch) -> Second | None:
    """The second run; None when the command named only test files the session added. A
    recognised runner is asked which tests run at both ends."""
    runner = runners.recognise(command, tree)
    narrowed = runners.without(runner, command, {p for p, s in changed.items() if s == "A"})
    if narrowed is None:
        return None
    asked = time.monotonic()
    ended = runners.tests(runner, tree, env, timeout_s) if runner else None
    collect_s = time.monotonic() - asked
    if narrowed != command:
        command, runner = narrowed, runners.recognise(narrowed, tree)
    # the tree as the session left it, uncommitted changes included (`git stash create`
    # changes nothing), else HEAD
    place = scratch.make(gate.git(tree, "stash", "create", env=env)
                         or gate.git(tree, "rev-parse", "HEAD", env=env))
    try:
        restored = _prepare(tree, place, base, changed, env)
        scratch.bring_in(tree, place)
        asked = time.monotonic()
        started = runners.tests(runner, place, env, timeout_s) \
            if runner and ended is not None else None
        collect_s += time.monotonic() - asked
        check, outcomes = failures.run(command, place, env, timeout_s)
    finally:
        scratch.remove(place)
    # a test of the start no longer run by its name at the end ran here under it, its file
    # restored: one that did not fail here is no finding (docs/decisions/0049)
    absent = sorted(started - ended) if started is not None and ended is not None else []
    stood = {runners.test_id(runner, name) for name, failed in outcomes.items()
             if not failed} if absent and runner else set()
    if absent and runner.name == "node --test" and check.passed and outcomes \
            and not any(outcomes.values()):     # its report names no files: none failed
        stood |= set(absent)
    return Second(check, [t for t in absent if t not in stood], [t for t in absent if t in stood],
                  restored, collect_s)


__all__ = ["Scratch", "Second", "touched", "run"]

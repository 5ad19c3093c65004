"""Owns telling a test that moved from a test that was removed: what a diff adds to test files,
by file; a test function removed from one file and added under its name to another that a
runner collects as it collected the first (patterns.renamed_away) moved, and so did an
assertion removed in one and added in the other; so did a test whose every assertion arrives
in the body of one new test of such a file (moved and renamed at once); a test renamed where
it stands, its body left as it was, is still there. Knows nothing of findings (tamper.py)."""
from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field

from ralphpy.verify import patterns
from ralphpy.verify.diff_files import DiffFile


@dataclass
class Moves:
    """The test functions and assertions a diff adds, by the test files they are added to,
    and the files a test removed elsewhere moved to (`into`)."""
    tests: dict[str, set[str]] = field(default_factory=dict)        # name -> files
    assertions: dict[str, set[str]] = field(default_factory=dict)   # stripped line -> files
    into: set[str] = field(default_factory=set)                     # files a test moved to
    renamed: set[tuple[str, str]] = field(default_factory=set)      # (old file, test) moved
                                                                    # under another name

    @classmethod
    def of(cls, files: list[DiffFile]) -> "Moves":
        moves = cls()
        bodies: list[tuple[str, set[str]]] = []      # (file, an added test's assertions)
        for f in files:
            if f.new is None or not patterns.is_test_path(f.new):
                continue
            for _, text in f.added:
                for name in patterns.test_names(text):
                    moves.tests.setdefault(name, set()).add(f.new)
                if patterns.is_assertion(text):
                    moves.assertions.setdefault(text.strip(), set()).add(f.new)
            bodies += [(f.new, set(asserts)) for _, asserts in _tests(f.added)]
        for f in files:                     # a test gone from a test file, not re-added there
            if f.old is None or not patterns.is_test_path(f.old):
                continue
            kept = {n for _, text in f.added for n in patterns.test_names(text)} if f.new else ()
            for name, asserts in _tests(f.removed):
                if name in kept:
                    continue
                into = _still_collected(moves.tests.get(name, set()), f.old)
                if not into and asserts:    # moved and renamed: its assertions are all in
                    into = _still_collected({path for path, body in bodies    # one new test
                                             if body.issuperset(asserts)}, f.old)
                    if into:
                        moves.renamed.add((f.old, name))
                moves.into.update(into)
        return moves

    def test_moved(self, name: str, old: str) -> bool:
        return (old, name) in self.renamed or bool(
            _still_collected(self.tests.get(name, set()), old))

    def assertion_moved(self, text: str, old: str) -> bool:
        return bool(_still_collected(self.assertions.get(text.strip(), set()), old))


# What ends a test's body among a hunk's lines: any definition (a helper's, the next test's).
_DEFINES = re.compile(r"^\s*(?:async\s+)?def\s|^\s*class\s")


def _tests(lines: list[tuple[int, str]]) -> list[tuple[str, list[str]]]:
    """The tests a diff's added (or removed) lines define, each with the assertions (stripped)
    of its body: the lines right after its definition, up to a gap or another definition."""
    found: list[tuple[str, list[str]]] = []
    last = None
    for no, text in lines:
        names = patterns.test_names(text)
        if names:
            found.append((names[0], []))
        elif last is None or no != last + 1 or _DEFINES.match(text):
            found.append(("", []))                  # outside any test added here
        elif patterns.is_assertion(text):
            found[-1][1].append(text.strip())
        last = no
    return [(name, asserts) for name, asserts in found if name]


def _still_collected(paths: set[str], old: str) -> list[str]:
    """The files of `paths` other than `old` that a runner collects as it collected `old`."""
    return [path for path in paths if path != old and not patterns.renamed_away(old, path)]


def moved_out(f: DiffFile, old: str, moves: Moves) -> bool:
    """A deleted test file whose every test function and assertion moved to other files."""
    names = [n for _, text in f.removed for n in patterns.test_names(text)]
    return bool(names) and all(moves.test_moved(n, old) for n in names) and all(
        moves.assertion_moved(text, old) for _, text in f.removed
        if patterns.is_assertion(text))


def renamed_in_place(f: DiffFile, no: int) -> bool:
    """The test defined at old line `no` was renamed where it stands: the line after it stays,
    and right above that same line now is an added line defining a test under another name,
    so the body runs as that test. A name no runner collects defines no test (test_names)."""
    removed, added = sorted(n for n, _ in f.removed), sorted(n for n, _ in f.added)
    if no + 1 in set(removed):
        return False                                      # its first body line went too
    kept_above = no - 1 - bisect_left(removed, no)       # unchanged lines above it
    ends = set(added)
    return any(n + 1 not in ends and n - 1 - bisect_left(added, n) == kept_above
               and patterns.test_names(text) for n, text in f.added)


__all__ = ["Moves", "moved_out", "renamed_in_place"]

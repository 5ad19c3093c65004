"""Owns telling a test that moved from a test that was removed: what a diff adds to test files,
by file; a test function removed from one file and added under its name to another that a
runner collects as it collected the first (patterns.renamed_away) moved, and so did an
assertion removed in one and added in the other. Knows nothing of findings (tamper.py)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ralphkit.verify import patterns
from ralphkit.verify.diff_files import DiffFile


@dataclass
class Moves:
    """The test functions and assertions a diff adds, by the test files they are added to,
    and the files a test removed elsewhere moved to (`into`)."""
    tests: dict[str, set[str]] = field(default_factory=dict)        # name -> files
    assertions: dict[str, set[str]] = field(default_factory=dict)   # stripped line -> files
    into: set[str] = field(default_factory=set)                     # files a test moved to

    @classmethod
    def of(cls, files: list[DiffFile]) -> "Moves":
        moves = cls()
        for f in files:
            if f.new is None or not patterns.is_test_path(f.new):
                continue
            for _, text in f.added:
                for name in patterns.test_names(text):
                    moves.tests.setdefault(name, set()).add(f.new)
                if patterns.is_assertion(text):
                    moves.assertions.setdefault(text.strip(), set()).add(f.new)
        for f in files:                     # a test gone from a test file, not re-added there
            if f.old is None or not patterns.is_test_path(f.old):
                continue
            kept = {n for _, text in f.added for n in patterns.test_names(text)} if f.new else ()
            for name in {n for _, text in f.removed for n in patterns.test_names(text)}:
                if name not in kept:
                    moves.into.update(_still_collected(moves.tests.get(name, set()), f.old))
        return moves

    def test_moved(self, name: str, old: str) -> bool:
        return bool(_still_collected(self.tests.get(name, set()), old))

    def assertion_moved(self, text: str, old: str) -> bool:
        return bool(_still_collected(self.assertions.get(text.strip(), set()), old))


def _still_collected(paths: set[str], old: str) -> list[str]:
    """The files of `paths` other than `old` that a runner collects as it collected `old`."""
    return [path for path in paths if path != old and not patterns.renamed_away(old, path)]


def moved_out(f: DiffFile, old: str, moves: Moves) -> bool:
    """A deleted test file whose every test function and assertion moved to other files."""
    names = [n for _, text in f.removed for n in patterns.test_names(text)]
    return bool(names) and all(moves.test_moved(n, old) for n in names) and all(
        moves.assertion_moved(text, old) for _, text in f.removed
        if patterns.is_assertion(text))


__all__ = ["Moves", "moved_out"]

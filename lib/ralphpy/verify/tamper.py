"""Owns the tamper check's diff rules over a tree's diff from the session's start, each
finding naming the file and line. A few stand alone (verdicts.ALONE); the others (a test
deleted or renamed away, a test or an assertion removed, a skip added) only explain a failure
of the tests as they stood: the runner says which tests run and pass (docs/decisions/0038).
Knows nothing of tasks or of what is done with the findings."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ralphpy.verify import diff_files, gate, patterns, test_commands
from ralphpy.verify.diff_files import DiffFile


@dataclass(frozen=True)
class Finding:
    kind: str            # deleted_test, renamed_test, removed_test, removed_assertion,
    path: str            # added_skip, protected_path, hidden_path, test_command,
                         # coverage_excluded, verify_line, dropped_test, tests_as_they_stood
    line: int | None
    detail: str

    def text(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.detail}" if where else self.detail


def _file_findings(f: DiffFile, tree: Path, protect: tuple[str, ...],
                   olds: Mapping[str, str]) -> list[Finding]:
    found: list[Finding] = []
    old, new = f.old, f.new
    if old is None:                      # added: adding is no finding
        return found
    if new is None:
        if patterns.protected(old, protect):
            found.append(Finding("protected_path", old, None, "protected file deleted"))
        elif patterns.is_test_path(old):
            found.append(Finding("deleted_test", old, None, "test file deleted"))
    elif new != old:
        if patterns.renamed_away(old, new):
            found.append(Finding("renamed_test", old, None,
                                 f"test file renamed away to {new} (no longer collected)"))
        elif patterns.protected(old, protect) and not patterns.protected(new, protect):
            found.append(Finding("protected_path", old, None,
                                 f"protected file renamed to {new}"))
    path = new or old
    added_text = {text.strip() for _, text in f.added}
    if new is not None and patterns.is_test_path(old):
        added_names = {n for _, text in f.added for n in patterns.test_names(text)}
        for no, text in f.removed:
            found += [Finding("removed_test", old, no, f"test function {name} removed")
                      for name in patterns.test_names(text) if name not in added_names]
            if patterns.is_assertion(text) and text.strip() not in added_text:
                found.append(Finding("removed_assertion", old, no,
                                     f"assertion removed or changed: {text.strip()[:120]}"))
    if new is not None and patterns.is_test_path(new):       # a skip only skips in test code
        found += _added_skips(f, path)
    if new is not None and test_commands.applies(new):
        found += [Finding("test_command", path, no, detail) for no, detail in
                  test_commands.changes(f, read(tree / new), olds.get(old))]
    if new is not None and patterns.protected(old, protect) and (f.removed or f.binary):
        found.append(Finding("protected_path", path, f.first_change,
                             "protected file changed (only additions are allowed)"))
    return found


def _added_skips(f: DiffFile, path: str) -> list[Finding]:
    """Skip markers added to the file, not moved within it (removed there as well)."""
    was = Counter(marker for _, text in f.removed for marker in patterns.skips(text))
    found = []
    for no, text in f.added:
        for marker in patterns.skips(text):
            if was[marker] > 0:
                was[marker] -= 1                         # moved, not added
            else:
                found.append(Finding("added_skip", path, no, f"skip added: {marker}"))
    return found


def read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


# Code taken out of coverage in the code itself: coverage.py's `# pragma: no cover` and `no
# branch`, istanbul's, c8's and v8's `ignore` comments (a coverage configuration is on the
# test side instead: verify.test_side). Documentation may quote a marker.
_COVERAGE_MARKER = re.compile(r"(?P<py>#\s*pragma:?\s*no\s*(?:cover|branch))\b"
                              r"|(?:/\*|//)\s*(?P<js>(?:istanbul|c8|v8)\s+ignore)\b", re.I)
_PROSE = re.compile(r"\.(?:md|rst|txt|adoc)$")
# a `__main__` or `TYPE_CHECKING` guard: lines coverage.py's documentation suggests excluding
_IDIOM = re.compile(r"""^\s*if\s+(?:__name__\s*==\s*["']__main__["']|(?:typing\.)?TYPE_CHECKING)"""
                    r"\s*:")


def _coverage_excluded(files: list[DiffFile]) -> list[Finding]:
    """Each coverage marker the diff adds, unless its line was removed elsewhere (moved)."""
    removed = {text.strip() for f in files for _, text in f.removed}
    return [Finding("coverage_excluded", f.new, no, "coverage exclusion added: "
                    f"{m.group('py') or m.group('js')}")
            for f in files if f.new is not None and not _PROSE.search(f.new)
            for no, text in f.added if (m := _COVERAGE_MARKER.search(text))
            and text.strip() not in removed and not _IDIOM.match(text)]


# The repository's own settings must not change what the diff shows (the session controls
# them): a/ b/ prefixes whatever diff.noprefix or diff.mnemonicPrefix say, no textconv or
# external diff, and files that .gitattributes calls binary (`-diff`) read as text again.
_DIFF = ("diff", "-U0", "-M", "--no-color", "--no-ext-diff", "--no-textconv",
         "--src-prefix=a/", "--dst-prefix=b/")


def _ls_files(tree: Path, env: Mapping[str, str]) -> list[tuple[str, str]]:
    """(tag, path) of every tracked and untracked file, from one `git ls-files -v`."""
    listed = gate.git_out(tree, "ls-files", "-v", "--cached", "--others", "--exclude-standard",
                          "-z", env=env)
    return [(tag, path) for tag, _, path in (e.partition(" ") for e in listed.split("\0")) if path]


def _is_hidden(tag: str) -> bool:
    return tag == "S" or tag.islower()         # skip-worktree, assume-unchanged


def hidden_paths(tree: Path, env: Mapping[str, str]) -> frozenset[str]:
    """The files hidden from git now (a sparse checkout's): scan's `hidden_before`."""
    return frozenset(path for tag, path in _ls_files(tree, env) if _is_hidden(tag))


def _hidden(tree: Path, protect: tuple[str, ...], env: Mapping[str, str],
            hidden_before: frozenset[str]) -> list[Finding]:
    """What no diff shows: test or protected files hidden from git since the diff's start
    (`update-index --skip-worktree` or `--assume-unchanged`: missing from diffs and `dirty`)."""
    return [Finding("hidden_path", path, None, "hidden from git ("
                    f"{'skip-worktree' if tag == 'S' else 'assume-unchanged'}): its changes "
                    "are not seen") for tag, path in _ls_files(tree, env)
            if _is_hidden(tag) and path not in hidden_before
            and (patterns.is_test_path(path) or patterns.protected(path, protect))]


def scan(tree: Path, base: str, protect: tuple[str, ...] = (), *, env: Mapping[str, str],
         hidden_before: frozenset[str] = frozenset()) -> list[Finding]:
    """The findings of the tree's diff from base; hidden_before: hidden_paths at base."""
    if not base:
        return []
    files = diff_files.parse(gate.git_out(tree, *_DIFF, base, "--", env=env))
    marked = [f.new or f.old for f in files if f.binary and f.old and f.new
              and (patterns.is_test_path(f.old) or patterns.protected(f.old, protect))]
    if marked:                                   # `-diff` in .gitattributes: as text again
        again = {f.new or f.old: f for f in diff_files.parse(
            gate.git_out(tree, *_DIFF, "--text", base, "--", *marked, env=env))}
        files = [again.get(f.new or f.old, f) if (f.new or f.old) in marked else f
                 for f in files]
    hidden = _hidden(tree, protect, env, hidden_before)
    # a makefile as it was: which rule a removed line was in, which targets it had
    olds = {f.old: gate.git_out(tree, "show", f"{base}:{f.old}", env=env) for f in files
            if f.old and f.new and test_commands.is_makefile(f.old)}
    return [finding for f in files for finding in _file_findings(f, tree, protect, olds)] + \
        _coverage_excluded(files) + hidden


__all__ = ["Finding", "scan", "hidden_paths", "read"]

"""Owns the tamper check's diff rules over a tree's diff from the session's start, each
finding naming the file and line. A few stand alone (verdicts.ALONE); the others (a test
deleted or renamed away, an assertion removed, a skip added) only explain a failure
of the tests as they stood: the runner says which tests run and pass (docs/decisions/0038).
Knows nothing of tasks or of what is done with the findings."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ralphpy.verify import diff_files, gate, patterns, test_side
from ralphpy.verify.diff_files import DiffFile


@dataclass(frozen=True)
class Finding:
    kind: str            # deleted_test, renamed_test, removed_assertion,
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
    if new is not None and patterns.is_test_path(old):    # a test gone: the runner names it
        added_text = {text.strip() for _, text in f.added}
        found += [Finding("removed_assertion", old, no,
                          f"assertion removed or changed: {text.strip()[:120]}")
                  for no, text in f.removed
                  if patterns.is_assertion(text) and text.strip() not in added_text]
    if new is not None and patterns.is_test_path(new):       # a skip only skips in test code
        found += _added_skips(f, path)
    if new is not None and _test_command_file(new):
        found += [Finding("test_command", path, no, detail) for no, detail in
                  _test_command_changes(f, read(tree / new), olds.get(old))]
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


# Files that mix a runner's settings with others and cannot be restored apart
# (verify.test_side): a makefile's test target rule changed or defined again (a new target is
# no finding), a vite.config.* line of vitest's settings.
_MAKE_RULE = re.compile(r"^(?P<targets>[^\t#:=\s][^:=#]*?)\s*::?(?!=)")
_VITEST_KEY = re.compile(r"\b(?:test|include|exclude|dir|root|passWithNoTests|testNamePattern"
                         r"|setupFiles|globalSetup|allowOnly|bail|reporters|coverage)\b\s*:")
_MAKEFILE = re.compile(r"(^|/)(GNUmakefile|[Mm]akefile|[^/]*\.mk)$")


def _test_command_file(path: str) -> bool:
    """A file this rule reads (package.json's test scripts are restored by the second run)."""
    return bool(_MAKEFILE.search(path) or test_side.UNSPLIT.search(path))


def _make_rule_lines(lines: list[str]) -> dict[int, str]:
    """The lines (from 1) of a makefile's test target rules, each with its target. Blank
    lines and comments do not end a rule, anything else that is not a recipe or rule does."""
    rules: dict[int, str] = {}
    current = None
    for no, line in enumerate(lines, 1):
        if (m := _MAKE_RULE.match(line)):       # never a recipe line: those start with a tab
            current = next((t for t in m.group("targets").split()
                            if test_side.TEST_SCRIPT.match(t)), None)
        elif not line.startswith("\t") and line.strip() and not line.lstrip().startswith("#"):
            current = None
        if current and (m or line.startswith("\t")):
            rules[no] = current
    return rules


def _test_command_changes(f: DiffFile, new_text: str, old_text: str | None
                          ) -> list[tuple[int | None, str]]:
    """(line, detail) of each test rule the change touched (the old file's line for what was
    removed; old_text: which rule a removed line was in, which targets it had)."""
    if test_side.UNSPLIT.search(f.new or ""):
        return [(no, f"vitest settings changed in a file not restored apart: {text.strip()[:80]}")
                for no, text in f.removed + f.added if _VITEST_KEY.search(text)][:1]
    new_rules = _make_rule_lines(new_text.split("\n"))
    old_rules = _make_rule_lines((old_text or "").split("\n"))
    had = set(old_rules.values())
    changed: dict[str, int] = {}            # target -> the first line that says so
    for no, _ in f.removed:
        if no in old_rules:
            changed.setdefault(old_rules[no], no)
    for no, _ in f.added:
        if new_rules.get(no) in had:                        # a new target is an addition
            changed.setdefault(new_rules[no], no)
    return [(no, f"make target {target}: its rule changed") for target, no in changed.items()]


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
            if f.old and f.new and _MAKEFILE.search(f.old)}
    return [finding for f in files for finding in _file_findings(f, tree, protect, olds)] + \
        _coverage_excluded(files) + hidden


__all__ = ["Finding", "scan", "hidden_paths", "read"]

"""Owns the tamper check: the diff of a tree from the commit at session start (committed and
uncommitted changes to tracked files), read for deleted or renamed-away test files, removed
test functions and assertions, newly added skips and focus markers, lowered coverage
thresholds, code taken out of coverage, changed test scripts and make targets, and changes to
`protect:` paths. Adding is never a finding: a new file, a new test function or a new line in
an existing file (a skip marker, a Python test defined again, a `return` above a test's
assertions, a coverage exclusion and a test's replacement of what it asserts on excepted). A
test moved to another file the runner collects is not removed, and what switches it off there
is a finding even in a new file. Findings name the file and the line (of the new file; of the
old one for what was removed). Knows nothing of tasks or of what is done with the findings;
the rules' reading is patterns.py's, test_bodies.py's, replaced_code.py's,
swapped_imports.py's, moves.py's, moved_tests.py's, test_commands.py's, coverage_exclusions.py's
and runner_configs.py's (the JavaScript runners' configurations, read once), the diff's
diff_files.py's."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Mapping

from ralphpy import programs
from ralphpy.verify import (coverage_exclusions, diff_files, moved_tests, moves, patterns,
                             replaced_code, runner_configs, swapped_imports, test_bodies,
                             test_commands)
from ralphpy.verify.diff_files import DiffFile


@dataclass(frozen=True)
class Finding:
    kind: str            # deleted_test, renamed_test, removed_test, removed_assertion,
    path: str            # added_skip, lowered_threshold, protected_path, hidden_path,
                         # shadowed_runner, narrowed_tests, redefined_test, early_return,
                         # test_command, coverage_excluded, replaced_code
    line: int | None
    detail: str

    def text(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.detail}"

    def as_record(self) -> dict:
        return asdict(self)


def _switched_off(f: DiffFile) -> list[Finding]:
    """What added (a new file, or lines) switches existing tests off without touching them."""
    found: list[Finding] = []
    if f.new is None:
        return found
    if f.old is None and (runner := patterns.shadowed_runner(f.new)):
        found.append(Finding("shadowed_runner", f.new, None,
                             f"a module named like the test runner ({runner}) shadows it"))
    was = {text.strip() for _, text in f.removed}
    for no, text in f.added:
        if text.strip() not in was:
            found += [Finding("narrowed_tests", f.new, no,
                              f"test selection or outcome changed: {what}")
                      for what in patterns.selections(f.new, text)]
    return found


@dataclass
class _Scan:
    """What every file's rules may need of the whole scan, and the tree's files as read once
    for all of them."""
    tree: Path
    protect: tuple[str, ...]
    moved: moves.Moves
    olds: Mapping[str, str]                   # a file's text as the diff started, by old path
    deselected: frozenset[str] = frozenset()  # the marks pytest's `-m "not x"` leaves out
    texts: dict[str, str] = field(default_factory=dict)
    runners: Mapping[str, runner_configs.Config] = field(default_factory=dict)

    def text(self, path: str) -> str:
        """The file as the session left it ("" when it cannot be read)."""
        if path not in self.texts:
            self.texts[path] = _read(self.tree / path)
        return self.texts[path]


def _file_findings(f: DiffFile, s: _Scan) -> list[Finding]:
    found: list[Finding] = _switched_off(f)
    old, new, protect, moved = f.old, f.new, s.protect, s.moved
    if old is None:                      # added: only a test moved into it can be skipped
        return found + (_added_skips(f, new, [], s.deselected) + _shadowed_tests(f, new, s)
                        if new in moved.into else [])
    if new is None:
        if patterns.is_test_path(old) and not moves.moved_out(f, old, moved):
            found.append(Finding("deleted_test", old, None, "test file deleted"))
        elif patterns.protected(old, protect):
            found.append(Finding("protected_path", old, None, "protected file deleted"))
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
            for name in patterns.test_names(text):
                if name not in added_names and not moved.test_moved(name, old) \
                        and not moves.renamed_in_place(f, no):
                    found.append(Finding("removed_test", old, no,
                                         f"test function {name} removed"))
            if (patterns.is_assertion(text) and text.strip() not in added_text
                    and not moved.assertion_moved(text, old)):
                found.append(Finding("removed_assertion", old, no,
                                     f"assertion removed or changed: {text.strip()[:120]}"))
    if new is not None and patterns.is_test_path(new):       # a skip only skips in test code
        found += _added_skips(f, path, f.removed, s.deselected)
        found += _shadowed_tests(f, path, s)
    if moved_to := runner_configs.thresholds_file(s.runners, f):   # a move's, as one file's
        found += _threshold_findings(moved_to, moved_to.new or path, s)
    if new is not None and test_commands.applies(new):
        found += [Finding("test_command", path, no, detail) for no, detail in
                  test_commands.changes(f, s.text(new), s.olds.get(old))]
    if new is not None and patterns.protected(old, protect) and (f.removed or f.binary):
        found.append(Finding("protected_path", path, f.first_change,
                             "protected file changed (only additions are allowed)"))
    return found


def _added_skips(f: DiffFile, path: str, removed: list[tuple[int, str]],
                 deselected: frozenset[str]) -> list[Finding]:
    """Skip markers added to the file, not moved within it (in `removed` as well); a mark the
    test configuration deselects is one."""
    was: dict[str, int] = {}
    for _, text in removed:
        for marker in patterns.skips(text, deselected):
            was[marker] = was.get(marker, 0) + 1
    found = []
    for no, text in f.added:
        for marker in patterns.skips(text, deselected):
            if was.get(marker, 0) > 0:
                was[marker] -= 1                         # moved, not added
            else:
                found.append(Finding("added_skip", path, no, f"skip added: {marker}"))
    return found


def _shadowed_tests(f: DiffFile, path: str, s: _Scan) -> list[Finding]:
    """Existing tests that lines added beside them keep from running, or from testing the
    code: a test that replaces the function it asserts on, or imports a stand-in of it."""
    if not f.added:
        return []
    lines = s.text(path).split("\n")
    added = {no for no, _ in f.added}
    found = [] if not path.endswith(".py") else [
        Finding("redefined_test", path, no, f"test {name} defined again: the one at line "
                f"{first} no longer runs") for no, name, first in
        test_bodies.redefined_tests(lines, added, [text for _, text in f.removed])] + [
        Finding("added_skip", path, no, f"skip added: @pytest.fixture on {name} (a fixture "
                "is not collected)") for no, name in test_bodies.fixture_tests(lines)
        if no in added]
    return found + [
        Finding("early_return", path, first, f"return added in {name}: the assertions after "
                "it no longer run") for first, last, name in test_bodies.early_returns(lines)
        if added.intersection(range(first, last + 1))] + [
        Finding("replaced_code", path, no, f"{name} replaced in {test}: its assertions check "
                "the replacement, not the code") for no, test, name in
        replaced_code.replaced(lines) if no in added] + [
        Finding("replaced_code", path, no, detail) for no, detail in
        swapped_imports.swapped(f, lines, lambda name: (s.tree / name).is_file())]


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _threshold_findings(f: DiffFile, path: str, s: _Scan) -> list[Finding]:
    block = patterns.threshold_block(path, [s.text(path)] + [t for _, t in f.removed + f.added])
    return [Finding("lowered_threshold", (f.old or path) if removed else path, no, what)
            for removed, no, what in patterns.lowered_thresholds(f.removed, f.added, block)]


# The repository's own settings must not change what the diff shows (the session controls
# them): a/ b/ prefixes whatever diff.noprefix or diff.mnemonicPrefix say, no textconv or
# external diff, and files that .gitattributes calls binary (`-diff`) read as text again.
_DIFF = ("diff", "-U0", "-M", "--no-color", "--no-ext-diff", "--no-textconv",
         "--src-prefix=a/", "--dst-prefix=b/")


def _git_diff(tree: Path, base: str, env: Mapping[str, str], *paths: str,
              text: bool = False) -> str | None:
    try:
        done = programs.run([*programs.GIT, "-c", "core.quotepath=false", *_DIFF,
                             *(["--text"] if text else []), base, "--", *paths],
                            cwd=tree, env=env)
    except OSError:
        return None
    return done.stdout.decode("utf-8", "replace") if done.code == 0 else None


def _git_out(tree: Path, env: Mapping[str, str], *args: str) -> str:
    """What a git command that reads prints ("" when it fails)."""
    try:
        done = programs.run([*programs.GIT, *args], cwd=tree, env=env)
    except OSError:
        return ""
    return done.stdout.decode("utf-8", "replace") if done.code == 0 else ""


def _ls_files(tree: Path, env: Mapping[str, str]) -> list[tuple[str, str]]:
    """(tag, path) of every tracked and untracked file, from one `git ls-files -v`."""
    listed = _git_out(tree, env, "ls-files", "-v", "--cached", "--others", "--exclude-standard",
                      "-z")
    return [(tag, path) for tag, _, path in (e.partition(" ") for e in listed.split("\0")) if path]


def _is_hidden(tag: str) -> bool:
    return tag == "S" or tag.islower()         # skip-worktree, assume-unchanged


def hidden_paths(tree: Path, env: Mapping[str, str]) -> frozenset[str]:
    """The files git is told not to look at now (a sparse checkout's, the user's): where a
    session's diff starts, so that scan does not take them for the session's doing."""
    return frozenset(path for tag, path in _ls_files(tree, env) if _is_hidden(tag))


def _listed(tree: Path, protect: tuple[str, ...], env: Mapping[str, str],
            hidden_before: frozenset[str]) -> tuple[list[Finding], list[DiffFile]]:
    """What no diff shows: test or protected files git was told not to look at since the
    diff's start (`update-index --skip-worktree` or `--assume-unchanged`: their changes are
    missing from every diff and from `dirty`), and new files the session left untracked that
    can switch tests off or code out of coverage all the same (a conftest.py, a pytest.py, a
    .coveragerc: the runner or coverage reads them)."""
    hidden, untracked = [], []
    for tag, path in _ls_files(tree, env):
        if tag == "?" and (patterns.may_switch_off(path) or coverage_exclusions.is_config(path)):
            try:
                text = (Path(tree) / path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            untracked.append(DiffFile(None, path, added=list(enumerate(text.split("\n"), 1))))
        elif _is_hidden(tag) and path not in hidden_before and (
                patterns.is_test_path(path) or patterns.protected(path, protect)):
            how = "skip-worktree" if tag == "S" else "assume-unchanged"
            hidden.append(Finding("hidden_path", path, None,
                                  f"hidden from git ({how}): its changes are not seen"))
    return hidden, untracked


def scan(tree: Path, base: str, protect: tuple[str, ...] = (), *, env: Mapping[str, str],
         hidden_before: frozenset[str] = frozenset()) -> list[Finding]:
    """The findings of the tree's diff from base (a commit); [] when base is unknown.
    hidden_before: hidden_paths when base was taken."""
    if not base:
        return []
    protect = tuple(protect)
    diff = _git_diff(tree, base, env)
    if diff is None:
        return []
    files = diff_files.parse(diff)
    marked = [f.new or f.old for f in files if f.binary and f.old and f.new
              and (patterns.is_test_path(f.old) or patterns.protected(f.old, protect))]
    if marked:                                   # `-diff` in .gitattributes: as text again
        again = {f.new or f.old: f for f in diff_files.parse(_git_diff(tree, base, env, *marked,
                                                               text=True) or "")}
        files = [again.get(f.new or f.old, f) if (f.new or f.old) in marked else f
                 for f in files]
    hidden, untracked = _listed(tree, protect, env, hidden_before)
    moved = moves.Moves.of(files)
    # a makefile as it was (which rule a removed line was in, which targets it had), and a
    # coverage or runner configuration (which exclusions and test selections it had)
    olds = {f.old: _git_out(tree, env, "show", f"{base}:{f.old}") for f in files
            if f.old and f.new and (test_commands.is_makefile(f.old)
                                    or coverage_exclusions.is_config(f.old))}
    scanned = _Scan(tree, protect, moved, olds)
    # the marks `-m` leaves out, from pytest's options files at the top of the tree, where
    # pytest reads them (its rules read those files in any folder: a folder may be a rootdir)
    scanned.deselected = frozenset().union(*(patterns.deselected_markers(
        name, scanned.text(name).split("\n")) for name in patterns.PYTEST_CONFIGS))
    existed = cache(lambda: _git_out(tree, env, "ls-tree", "-r", "-z", "--name-only", base)
                    .split("\0"))                     # the files an exclude may switch off
    runners = scanned.runners = runner_configs.read(files + untracked, scanned.text, olds,
                                                   existed)      # each configuration read once
    excluded = [Finding("coverage_excluded", path, no, detail) for path, no, detail in
                coverage_exclusions.changes(files + untracked, scanned.text, olds,
                                            runner_configs.coverage(runners))]
    narrowed = [Finding("narrowed_tests", path, no, f"test selection or outcome changed: {what}")
                for path, no, what in runner_configs.selections(runners, existed)] + [
        Finding("renamed_test", old, None, what) for old, what in      # kept name, not its run
        moved_tests.out_of_run(files + untracked, scanned.text, existed)]
    return [finding for f in files + untracked
            for finding in _file_findings(f, scanned)] + narrowed + excluded + hidden


__all__ = ["Finding", "scan", "hidden_paths"]

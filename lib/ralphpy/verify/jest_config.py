"""Owns jest's configuration (jest.config.{js,ts,mjs,cjs,json}, and package.json's "jest"
object, no other key of it) as the tamper rules read it: which tests run
(`testPathIgnorePatterns`, `modulePathIgnorePatterns`, `testMatch`, `testRegex`, `roots`, and
at the top `rootDir`, where the roots are) and what coverage measures
(`coveragePathIgnorePatterns`, `collectCoverageFrom`), each entry with its line, and what a
change of them leaves out. js_config.py reads the file by block: a list written over several
lines is one setting, an entry on a line of its own is the setting's, and the settings of a
`projects` list's entries are read together.

A change leaves out: an entry added to an ignore pattern or a negation (`!**/hard/**`) added to
testMatch, that matches a test file of the start commit under the configuration's folder (build
output such as `/dist/`, or tests the diff adds, may be ignored: no test that ran is switched
off); an entry added to coveragePathIgnorePatterns, or a negation to collectCoverageFrom, that
matches a file of the start commit that is no test or type declaration; an entry of testMatch
or collectCoverageFrom that no entry of the new list covers (testMatch left out: jest's
default; collectCoverageFrom left out is none, as moved to another file it often is); a
testMatch set over jest's default; roots, or a rootDir, that leave out a JavaScript test file
of the start commit (a rootDir given by code, `__dirname`, is taken to be the configuration's
folder); testRegex changed. A change of testRegex or testMatch (one for the other too) is
judged by the files of the start commit the old patterns took for tests and the new ones no
longer do (below), the first named; where that cannot tell (a pattern it cannot read),
a testMatch entry no new one covers and any testRegex entry added or removed are findings (one
removed for jest's default testMatch none when that finds every test it found). Ignore patterns
are regular expressions matched against the path (`<rootDir>` the configuration's folder); an
entry this cannot compile is taken to match. A configuration the diff adds is compared with
nothing: each line naming one of these settings is a finding (and its rootDir as above), unless
its folder held no test of the start commit (a new package's). Entries are compared with the
file as the diff started, so an entry moved or a list reformatted is none. Pure functions over
the diff's files and texts; knows nothing of git (runner_configs.py reads both sides once, for
tamper.py and coverage_exclusions.py).

Which files jest takes for tests by its testRegex, else its testMatch (else jest's default
testMatch), and which of the start commit's a change of them leaves out: the files matched, not
the patterns' texts, are compared. A regular expression is read in the syntax JavaScript and
Python's `re` read alike (js_config.regex). A pattern this cannot read, or one given by code,
leaves the change not known (None), for the caller to judge by the text. jest matches testRegex
against a file's absolute path; here a path is taken from the configuration's folder with a "/"
before it, the tail of it that the project's own folders make (a `/test/` of the folders above,
where the repository is checked out, is not the project's): old settings that take no file
there (a pattern of those folders) leave the change not known too. testPathIgnorePatterns and
roots are not applied there (they are compared on their own): a file they kept out counts as
one taken."""
from __future__ import annotations

import posixpath
import re
from typing import Callable, Iterable, Mapping

from ralphpy.verify import js_config, patterns
from ralphpy.verify.diff_files import DiffFile
from ralphpy.verify.js_config import Change, Setting

_CONFIG = patterns.file_named(patterns.JEST_CONFIGS)
_PACKAGE = patterns.file_named(r"package\.json")
TESTS = frozenset({"testPathIgnorePatterns", "modulePathIgnorePatterns", "testMatch",
                   "testRegex", "roots", "rootDir"})
COVERAGE = frozenset({"coveragePathIgnorePatterns", "collectCoverageFrom"})
_TOP = frozenset({"rootDir", "coverageThreshold"})    # read at the top only, not in projects
_FOLDERS = frozenset({"roots", "rootDir"})            # where jest looks for tests
_ROOT = "/ROOT"          # where a start commit's path is taken to be, for a pattern to match


# jest's default testMatch, spelled in the globs js_config reads (`+(spec|test)` as one)
_TEST_MATCH = ["**/__tests__/**/*.{,m,c}{j,t}s{,x}", "**/{*.,}{spec,test}.{,m,c}{j,t}s{,x}"]


def _source(text: str) -> str:
    """A quoted regular expression's source: the JavaScript string's escapes undone."""
    return re.sub(r"\\(.)", r"\1", text)


def _glob(text: str) -> str:
    """A testMatch glob relative to the configuration's folder (jest's `<rootDir>/` off)."""
    return re.sub(r"^<rootDir>/", "", text)


def _entry(name: str, text: str) -> Callable[[str], bool] | None:
    """Whether a testMatch glob or testRegex entry matches a path (relative to the
    configuration's folder); None when this cannot read it."""
    if name == "testMatch":
        return js_config.matcher(_glob(text))
    rx = None if "<rootDir>" in text else js_config.regex(_source(text))
    return None if rx is None else lambda path: bool(rx.search(f"/{path}"))


def _runs(found: Mapping[str, Setting]) -> Callable[[str], bool] | None:
    """Whether jest takes a file (relative to the configuration's folder) for a test, by
    testRegex, else testMatch (a negation, `!**/hard/**`, taking files out), else its default
    testMatch; None when this cannot tell (a pattern given by code or not read)."""
    name = "testRegex" if "testRegex" in found else "testMatch"
    entries = js_config.texts(found, name) if name in found else _TEST_MATCH
    negation = name == "testMatch"
    kept = [_entry(name, t) for t in entries if not (negation and t[:1] == "!")]
    negated = [_entry(name, t[1:]) for t in entries if negation and t[:1] == "!"]
    if not kept or None in kept + negated:
        return None
    return lambda path: (any(m(path) for m in kept if m)
                         and not any(m(path) for m in negated if m))


def _takes(found: Mapping[str, Setting], path: str) -> bool | None:
    """Whether jest takes a file (relative to the configuration's folder) for a test by its
    testRegex or testMatch; None when this cannot tell."""
    runs = _runs(found)
    return None if runs is None else runs(path)


def tests_left_out(old: Mapping[str, Setting], new: Mapping[str, Setting],
             files: list[str]) -> list[str] | None:
    """The files (JavaScript and TypeScript of the start commit, relative to the
    configuration's folder) jest took for tests with the old settings and does not with the
    new; None when this cannot tell, or when the old settings took none (a pattern of the
    folders above the configuration's, which the path here does not show)."""
    return js_config.left_out(_runs(old), _runs(new), files)


def _leaves_out(name: str, text: str, config: str, left: list[str] | None) -> str | None:
    """How a finding of an entry removed ends: naming the first file of `left` the entry
    matched, "" when `left` is None (not known), None (no finding) when it matched none."""
    if left is None:
        return ""
    matches = _entry(name, text)
    return next((js_config.naming(config, [p]) for p in left if matches is None or matches(p)),
                None)


def is_config(path: str) -> bool:
    return bool(_CONFIG.search(path))


def settings(path: str, text: str) -> dict[str, Setting]:
    """The file's settings this module reads, by key, each with its quoted entries. In
    package.json only the "jest" object's; elsewhere any object's at the top of the file (a
    config assigned, exported or returned) or in its `projects`."""
    package = bool(_PACKAGE.search(path))

    def name(blocks: list, key: str) -> str | None:
        if key not in TESTS | COVERAGE | _TOP or not blocks or (
                package and blocks[1:2] != ["jest"]):
            return None
        inner = blocks[2:] if package else blocks[1:]
        return key if all(block in (None, "projects") for block in inner) and not (
            key in _TOP and inner) else None
    return js_config.settings(text, name)


def reads_tests(path: str, names: Iterable[str]) -> bool:
    """jest reads which tests to run from this configuration (its setting names): a
    jest.config.* (jest's defaults apply where it sets nothing), or test settings (a
    package.json may have none)."""
    return path.rpartition("/")[2].startswith("jest.config.") or any(n in TESTS for n in names)


def _matches(pattern: str, paths: list[str], glob: bool) -> bool:
    """A path (relative to the configuration's folder) the glob or regular expression matches;
    one this cannot read matches."""
    if glob:
        return js_config.matches_any(_glob(pattern), paths)
    rx = _ignore_rx(pattern)
    return rx is None or any(rx.search(f"{_ROOT}/{path}") for path in paths)


def _ignore_rx(pattern: str) -> re.Pattern | None:
    """An ignore pattern (matched against `_ROOT/` and the path from the rootDir) as Python
    reads it; None when it does not compile."""
    try:
        return re.compile(_source(pattern).replace("<rootDir>", _ROOT))
    except re.error:
        return None


def _join(base: str | None, folder: str | None) -> str | None:
    """A folder relative to `base`, from the repository's top ("" for it; None: outside it,
    or not known)."""
    if base is None or folder is None or folder.startswith("/"):
        return None
    joined = posixpath.normpath(f"{base}/{folder}" if base else folder or ".")
    return None if joined == ".." or joined.startswith("../") else "" if joined == "." else joined


def _root(root: str) -> str:
    """A root's folder relative to the rootDir."""
    return re.sub(r"^<rootDir>(?:/|$)", "", root.strip())


def _base(found: Mapping[str, Setting], config: str) -> str | None:
    """The rootDir's folder from the repository's top: the configuration's folder, or where
    rootDir's quoted parts go from it (one given by code, `__dirname`, is that folder)."""
    parts = js_config.texts(found, "rootDir")
    return _join(config.rpartition("/")[0], "/".join(parts) if parts else "")


def _roots_of(found: Mapping[str, Setting], base: str | None) -> list[str | None]:
    """The folders jest looks for tests in, from the repository's top (its rootDir, or
    each of its roots)."""
    if "roots" not in found:
        return [base]
    return [_join(base, _root(t)) for t in js_config.texts(found, "roots")]


def _under(path: str, folders: Iterable[str | None]) -> bool:
    return any(f is not None and (not f or path.startswith(f + "/")) for f in folders)


def changes(f: DiffFile, old: Mapping[str, Setting], new: Mapping[str, Setting],
            existed: Callable[[], Iterable[str]]) -> list[Change]:
    """What a diff's file leaves out of the test run and of coverage, from its settings as
    the diff started and now. existed: the start commit's files."""
    path = f.new or f.old or ""
    files = js_config.in_folder(path, existed())
    tests = [p for p in files if patterns.is_test_path(p)]
    code = [p for p in files if not patterns.is_test_path(p) and not p.endswith(".d.ts")]
    found = []
    changed = any((n in old, js_config.texts(old, n)) != (n in new, js_config.texts(new, n))
                  for n in ("testRegex", "testMatch"))
    left = tests_left_out(old, new, files) if changed else None   # None: by the text
    for name, setting in new.items():
        had = set(js_config.texts(old, name))
        for no, text in setting.entries:
            negated = name in ("testMatch", "collectCoverageFrom")
            if text in had or (negated and not text.startswith("!")) or name in _FOLDERS:
                continue
            if name == "testRegex" and left != []:
                found.append(Change(path, no, name, f"{name} {text}"
                                    + js_config.naming(path, left)))
            elif name != "testRegex" and _matches(
                    text[negated:], tests if name in TESTS else code, negated):
                found.append(Change(path, no, name, f"{name} {text}"))
    for name, default in (("testMatch", _TEST_MATCH), ("collectCoverageFrom", None)):
        now = [t for t in js_config.texts(new, name) if not t.startswith("!")] if name in new else (
            default if "testRegex" not in new else [])
        if name not in old or now is None:             # no collectCoverageFrom: the files
            continue                                   # tests load (the list moved, often)
        found += [Change(f.old or path, no, name, f"{name} {text} removed{named}")
                  for no, text in old[name].entries if not text.startswith("!")
                  and not any(js_config.covers(n, text) for n in now)
                  and (named := _leaves_out(
                      name, text, path, left if name == "testMatch" else None)) is not None]
    default = "testRegex" not in new and "testMatch" not in new    # jest's testMatch again
    found += [Change(f.old or path, no, "testRegex", f"testRegex {text} removed{named}")
              for no, text in old.get("testRegex", Setting(0)).entries
              if text not in js_config.texts(new, "testRegex")
              and (named := _leaves_out("testRegex", text, path, left)) is not None
              and not (left is None and default and all(
                  any(js_config.matches_any(g, [t]) for g in _TEST_MATCH)
                  for t in tests if _matches(text, [t], False)))]
    found += _default_narrowed(old, new, path, tests, left)
    found += _roots(old, new, path, f.old or path, existed)
    return js_config.one_a_line(found)


def _default_narrowed(old: Mapping[str, Setting], new: Mapping[str, Setting], path: str,
                      tests: list[str], left: list[str] | None) -> list[Change]:
    """A testMatch set where jest's default found the tests, that leaves one of them out
    (`left`: what it leaves out, None: the tests the default found that no entry matches)."""
    if "testMatch" not in new or "testMatch" in old or "testRegex" in old or "testRegex" in new:
        return []
    now = [t for t in js_config.texts(new, "testMatch") if not t.startswith("!")]
    if left == [] or left is None and not any(
            _matches(g, [t], True) for g in _TEST_MATCH for t in tests
            if not any(_matches(n, [t], True) for n in now)):
        return []
    line = new["testMatch"].first_line
    what = f"testMatch {', '.join(now) or '(set by code)'}{js_config.naming(path, left)}"
    return [Change(path, line, "testMatch", what)]


def _roots(old: Mapping[str, Setting], new: Mapping[str, Setting], path: str, old_path: str,
           existed: Callable[[], Iterable[str]]) -> list[Change]:
    """The rootDir or roots that held a test of the start commit (`existed`'s, from the
    repository's top) no root of the new file holds. A configuration moved to another folder
    (its tests with it, often) is not compared."""
    if not _FOLDERS.intersection([*old, *new]) or path.rpartition("/")[0] != old_path.rpartition(
            "/")[0]:
        return []
    tests = js_config.js_tests(existed())        # the whole start commit's: only where needed
    was_base, now_base = _base(old, old_path), _base(new, path)
    was, now = _roots_of(old, was_base), _roots_of(new, now_base)
    left = [t for t in tests if _under(t, was) and not _under(t, now)]
    if not left:
        return []
    if was_base != now_base:
        if "rootDir" not in new:
            return [Change(old_path, no, "rootDir", f"rootDir {text} removed")
                    for no, text in old["rootDir"].entries[:1]]
        line = new["rootDir"].first_line
        folder = "/".join(js_config.texts(new, "rootDir")) or "(set by code)"
        return [Change(path, line, "rootDir", f"rootDir {folder}")]
    if "roots" not in old:
        line = new["roots"].first_line
        roots = ", ".join(js_config.texts(new, "roots")) or "(set by code)"
        return [Change(path, line, "roots", f"roots {roots}")]
    return [Change(old_path, no, "roots", f"roots {text} removed")
            for no, text in old["roots"].entries
            if any(_under(t, [_join(was_base, _root(text))]) for t in left)]


def keeps_out(config: str, found: Mapping[str, Setting], path: str) -> str | None:
    """What keeps a file (from the repository's top) out of the tests jest runs with this
    configuration's settings (its roots, testPathIgnorePatterns, testRegex or testMatch), as
    a finding names it; "" when jest takes it; None when this cannot tell."""
    base = _base(found, config)
    roots = _roots_of(found, base)
    if base is None or None in roots:
        return None
    if not _under(path, roots):
        name = next((n for n in ("roots", "rootDir") if n in found), None)
        return (f"{name} {', '.join(js_config.texts(found, name))}" if name
                else f"not under the folder of {config}")
    ignores = (js_config.texts(found, "testPathIgnorePatterns")
               if "testPathIgnorePatterns" in found else ["/node_modules/"])   # jest's default
    if "testPathIgnorePatterns" in found and not ignores:
        return None                                          # given by code
    for pattern in ignores:
        if (rx := _ignore_rx(pattern)) is None:
            return None
        if rx.search(f"{_ROOT}/{path[len(base) + 1:] if base else path}"):
            return f"testPathIgnorePatterns {pattern} in {config}"
    rel = next(iter(js_config.in_folder(config, [path])), None)
    taken = None if rel is None else _takes(found, rel)
    name = "testRegex" if "testRegex" in found else "testMatch"
    what = ", ".join(js_config.texts(found, name)) or "(jest's default)"
    return None if taken is None else "" if taken else f"{name} {what} in {config}"


def _new_package(path: str, existed: Callable[[], Iterable[str]]) -> bool:
    """No test of the start commit under the configuration's folder."""
    return not any(patterns.is_test_path(p) for p in js_config.in_folder(path, existed()))


def selections(f: DiffFile, new: Mapping[str, Setting], changes: list[Change],
               existed: Callable[[], Iterable[str]]) -> list[tuple[str, int, str]]:
    """(path, line, what) of each change of a diff's jest configuration to which tests run.
    A setting read by block is no longer found on its key's line as well; one given by code
    (no quoted entry), testNamePattern, and a new configuration's, are found by the line.
    new: its settings now; changes: what their change leaves out."""
    if f.old is None:                     # by the line, but rootDir (no key of a line's)
        return [] if _new_package(f.new or "", existed) else [
            (f.new or "", no, key) for no, text in f.added for key in patterns.js_selections(text)
        ] + [(c.path, c.line, c.what) for c in changes if c.setting == "rootDir"]
    read = {name for name, setting in new.items() if setting.entries}
    was = {_bare(text) for _, text in f.removed}    # a line moved from JSON to JS is no new
    return [(f.new or "", no, key) for no, text in f.added if _bare(text) not in was
            for key in patterns.js_selections(text) if key not in read] + [
        (c.path, c.line, c.what) for c in changes if c.setting in TESTS]


def _bare(line: str) -> str:
    """A line without its spaces, quotes and separators."""
    return re.sub(r"[\s\"'`,;]", "", line)


def coverage(changes: list[Change]) -> list[Change]:
    """The changes that take code out of coverage."""
    return [c for c in changes if c.setting in COVERAGE]


__all__ = ["TESTS", "COVERAGE", "is_config", "settings", "changes", "keeps_out", "selections",
           "coverage", "tests_left_out"]

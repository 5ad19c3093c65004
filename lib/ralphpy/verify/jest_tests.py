"""Owns which files jest takes for tests by its testRegex, else its testMatch (else jest's
default testMatch), and which of the start commit's a change of them leaves out: the files
matched, not the patterns' texts, are compared. A glob is read as js_config.py reads globs; a
regular expression in the syntax JavaScript and Python's `re` read alike (js_config.regex). A
pattern this cannot read, or one given by code, leaves the change not known (None), for the
caller to judge by the text. jest matches testRegex against a file's absolute path; here a
path is taken from the configuration's folder with a "/" before it, the tail of it that the
project's own folders make (a `/test/` of the folders above, where the repository is checked
out, is not the project's): old settings that take no file there (a pattern of those folders)
leave the change not known too. testPathIgnorePatterns and roots are not applied here
(jest_config.py compares them on their own): a file they kept out counts as one taken. Pure
functions over settings and paths; knows nothing of diffs or git."""
from __future__ import annotations

import re
from typing import Callable, Mapping

from ralphpy.verify import js_config
from ralphpy.verify.js_config import Setting

# jest's default testMatch, spelled in the globs js_config reads (`+(spec|test)` as one)
TEST_MATCH = ["**/__tests__/**/*.{,m,c}{j,t}s{,x}", "**/{*.,}{spec,test}.{,m,c}{j,t}s{,x}"]


def source(text: str) -> str:
    """A quoted regular expression's source: the JavaScript string's escapes undone."""
    return re.sub(r"\\(.)", r"\1", text)


def glob(text: str) -> str:
    """A testMatch glob relative to the configuration's folder (jest's `<rootDir>/` off)."""
    return re.sub(r"^<rootDir>/", "", text)


def _entry(name: str, text: str) -> Callable[[str], bool] | None:
    """Whether a testMatch glob or testRegex entry matches a path (relative to the
    configuration's folder); None when this cannot read it."""
    if name == "testMatch":
        return js_config.matcher(glob(text))
    rx = None if "<rootDir>" in text else js_config.regex(source(text))
    return None if rx is None else lambda path: bool(rx.search(f"/{path}"))


def _runs(found: Mapping[str, Setting]) -> Callable[[str], bool] | None:
    """Whether jest takes a file (relative to the configuration's folder) for a test, by
    testRegex, else testMatch (a negation, `!**/hard/**`, taking files out), else its default
    testMatch; None when this cannot tell (a pattern given by code or not read)."""
    name = "testRegex" if "testRegex" in found else "testMatch"
    entries = js_config.texts(found, name) if name in found else TEST_MATCH
    negation = name == "testMatch"
    kept = [_entry(name, t) for t in entries if not (negation and t[:1] == "!")]
    negated = [_entry(name, t[1:]) for t in entries if negation and t[:1] == "!"]
    if not kept or None in kept + negated:
        return None
    return lambda path: (any(m(path) for m in kept if m)
                         and not any(m(path) for m in negated if m))


def takes(found: Mapping[str, Setting], path: str) -> bool | None:
    """Whether jest takes a file (relative to the configuration's folder) for a test by its
    testRegex or testMatch; None when this cannot tell."""
    runs = _runs(found)
    return None if runs is None else runs(path)


def left_out(old: Mapping[str, Setting], new: Mapping[str, Setting],
             files: list[str]) -> list[str] | None:
    """The files (JavaScript and TypeScript of the start commit, relative to the
    configuration's folder) jest took for tests with the old settings and does not with the
    new; None when this cannot tell, or when the old settings took none (a pattern of the
    folders above the configuration's, which the path here does not show)."""
    return js_config.left_out(_runs(old), _runs(new), files)


def leaves_out(name: str, text: str, config: str, left: list[str] | None) -> str | None:
    """How a finding of an entry removed ends: naming the first file of `left` the entry
    matched, "" when `left` is None (not known), None (no finding) when it matched none."""
    if left is None:
        return ""
    matches = _entry(name, text)
    return next((js_config.naming(config, [p]) for p in left if matches is None or matches(p)),
                None)


__all__ = ["TEST_MATCH", "takes", "left_out", "leaves_out", "source", "glob"]

"""Owns what the diff rules look for, line by line, as data: which paths are tests, which
lines assert something or skip or focus a test, and the `protect:` glob syntax. Pure
functions over paths and lines; knows nothing of git or of diffs."""
from __future__ import annotations

import re
from functools import lru_cache

# node --test's default file names outside a test folder (Node 20): test.js, test-*, *.test,
# *-test, *_test
NODE_TEST_NAME = r"(^|/)test(-[^/]*)?\.[cm]?js$|[-_.]test\.[cm]?js$"
# The file names the runners collect by name (pytest, go, node, jest, junit), whatever the
# directory: a test file renamed from one of these to another name in tests/ is renamed away.
_TEST_NAME = re.compile(r"(^|/)test_[^/]*\.py$|_test\.(py|go)$|\.(test|spec)\.[cm]?[jt]sx?$"
                        r"|(^|/)tests\.py$|Tests?\.(java|kt|cs)$|" + NODE_TEST_NAME)
_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|spec)/.*\.(py|[cm]?[jt]sx?|go|rs|rb|java|kt|cs|php|sh|bats)$"
    r"|(^|/)conftest\.py$|" + _TEST_NAME.pattern)     # tests.py: Django's runner

_ASSERTION = re.compile(
    r"^\s*assert\b|\bself\.assert\w*\s*\(|\bassert(?:\.\w+)?\s*\(|\bexpect\s*\("
    r"|\bt\.(?:Error|Errorf|Fatal|Fatalf|Fail)\b|\bassert(?:_eq|_ne)?!\s*\(|\.should\b"
    r"|\bassert(?:Equals?|True|False|That|Throws|NotNull|Null)\s*\(")

# Newly added skips and focus markers (a `.only` silently drops every other test), jest's
# `test.failing` and vitest's `test.fails` (they pass when the test fails), and code that
# switches a test off: `pytestmark`, SkipTest, expectedFailure, `__test__ = False`, go's
# `//go:build ignore`, a body under `if False:` (its asserts keep their text), `del test_x`.
SKIP = re.compile(
    r"@?\bpytest\.mark\.(?:skip|skipif|xfail)\b|\bpytest\.(?:skip|xfail|importorskip)\s*\("
    r"|\bunittest\.skip\w*|@(?:unittest\.)?skip(?:If|Unless)?\b|\bself\.skipTest\s*\("
    r"|\bSkipTest\b|\bexpectedFailure\b|^\s*(?:if|while)\s+(?:False|0|None)\s*:"
    r"|^\s*(?:if|while)\s*(?:\(\s*(?:false|0|null|undefined)\s*\)|\s(?:false|0)\s*\{)"
    r"|^\s*del\s+(?:test|Test)\w*"
    r"|\b(?:it|describe|test|suite|context)(?:\.concurrent)?\.(?:skip|only|todo|failing|fails)\b"
    r"|\bx(?:it|describe|test)\s*\("
    r"|\bf(?:it|describe)\s*\(|[{,]\s*(?:skip|only|todo)\s*:\s*(?!false)"
    r"|\bt\.(?:skip|todo)\s*\(|\bt\.Skip(?:Now|f)?\s*\(|@Disabled\b|@Ignore\b|#\[ignore\b"
    r"|\b__test__\s*=\s*False\b"                     # pytest and nose collect nothing there
    r"|^//\s*(?:go:build|\+build)\s+ignore\b")        # go builds and tests nothing there


def is_test_path(path: str) -> bool:
    return bool(_TEST_PATH.search(path))


def renamed_away(old: str, new: str) -> bool:
    """A rename after which the runner no longer collects the file: out of the test paths, or
    from a collected name (test_x.py) to one no runner collects (tests/x_checks.py)."""
    return is_test_path(old) and (not is_test_path(new) or (
        bool(_TEST_NAME.search(old)) and not _TEST_NAME.search(new)))


def is_assertion(line: str) -> bool:
    return bool(_ASSERTION.search(line))


def skips(line: str) -> list[str]:
    return [m.group(0).strip() for m in SKIP.finditer(line)]


@lru_cache(maxsize=256)
def glob_rx(glob: str) -> re.Pattern:
    """A glob as a regex of a whole path: `**/` and `**` cross folders, `*` and `?` do not."""
    return re.compile(re.escape(glob).replace(r"\*\*/", "(?:.*/)?").replace(r"\*\*", ".*")
                      .replace(r"\*", "[^/]*").replace(r"\?", "[^/]") + "$")


def protected(path: str, globs: tuple[str, ...]) -> bool:
    """`protect:` globs: `**` crosses folders, `*` does not; a glob without a slash also
    matches a file name in any folder; `dir/` means everything under dir."""
    for glob in globs:
        glob = glob.strip().removeprefix("./")
        glob += "**" if glob.endswith("/") else ""
        if glob_rx(glob).match(path if "/" in glob else path.rsplit("/", 1)[-1]) \
                or glob_rx(glob).match(path):
            return True
    return False


__all__ = ["is_test_path", "renamed_away", "is_assertion", "skips", "protected",
           "NODE_TEST_NAME"]

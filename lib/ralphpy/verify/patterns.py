"""Owns what the tamper check looks for, line by line, as data: which paths are tests, which
lines define a test, assert something, skip or focus a test, select which tests run, or set a
coverage threshold, which files configure the test runners, and the `protect:` glob syntax.
Pure functions over paths and lines; knows nothing of git or of diffs, or of a whole test's
body (test_bodies.py)."""
from __future__ import annotations

import re
from functools import lru_cache

JS_SCRIPT = re.compile(r"\.[cm]?[jt]sx?$")   # a JavaScript or TypeScript file's extension
_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|spec)/.*\.(py|[cm]?[jt]sx?|go|rs|rb|java|kt|cs|php|sh|bats)$"
    r"|(^|/)test_[^/]*\.py$|_test\.(py|go)$|(^|/)conftest\.py$"   # pytest, go
    r"|(^|/)tests\.py$"                                 # Django's runner: an app's tests.py
    r"|\.(test|spec)\.[cm]?[jt]sx?$"                  # node --test, jest, vitest, mocha
    r"|[-_]test\.[cm]?js$|(^|/)test-[^/]*\.[cm]?js$"   # node --test's other default names
    r"|(^|/)test\.[cm]?js$|Tests?\.(java|kt|cs)$")

# A test's definition: the name it is known by is group "name".
_TEST_DEF = (
    re.compile(r"^\s*(?:async\s+)?def\s+(?P<name>test\w*)\s*\("),           # pytest, unittest
    re.compile(r"^\s*class\s+(?P<name>Test\w*)\b"),
    re.compile(r"\b(?:it|test)\s*\(\s*(?P<q>['\"`])(?P<name>.+?)(?P=q)"),    # node --test, jest
    re.compile(r"^\s*func\s+(?P<name>Test\w*)\s*\("),                       # go
    re.compile(r"^\s*(?:pub\s+)?fn\s+(?P<name>test\w*)\s*\("),              # rust, by convention
)

_ASSERTION = re.compile(
    r"^\s*assert\b|\bself\.assert\w*\s*\(|\bassert(?:\.\w+)?\s*\(|\bexpect\s*\("
    r"|\bt\.(?:Error|Errorf|Fatal|Fatalf|Fail)\b|\bassert(?:_eq|_ne)?!\s*\(|\.should\b"
    r"|\bassert(?:Equals?|True|False|That|Throws|NotNull|Null)\s*\(")

# Newly added skips and focus markers (a `.only` silently drops every other test), jest's
# `test.failing` and vitest's `test.fails` (they pass when the test fails), and code
# that switches a test off: a mark set without a decorator (`pytestmark = pytest.mark.skip`),
# unittest's SkipTest and expectedFailure, `__test__ = False` on a module or class, go's
# `//go:build ignore` on a file, a test's body under `if False:` (its asserts keep their text,
# only their indent changes; `if (false) {` in JavaScript, `if false {` in Go and Rust), a
# test deleted from its module by name.
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

# What switches existing tests off without touching them, added anywhere it is read (a new
# file too): a module named like the runner shadows it (`python -m pytest` imports ./pytest.py),
# a pytest hook rewrites outcomes or drops collected tests, options deselect, filter or ignore
# tests or only collect them, settings change which files, classes and functions are tests or
# where they are looked for (not `-p no:cacheprovider` and its like: dropping a plugin is
# common and honest). Read in pytest's configuration files and conftest.py only: these explain
# a failure of the tests as they stood, the runner's own answers judge (verify.runners).
_RUNNER_MODULE = re.compile(r"(^|/)(?P<name>pytest|unittest|nose2?)\.py$")

# pytest's options files (pytest.toml since pytest 9); vitest's configuration (thresholds)
PYTEST_CONFIGS = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml",
                  "tox.ini", "setup.cfg")
VITEST_CONFIGS = r"vite(?:st)?\.config\.[cm]?[jt]s"


def file_named(*names: str) -> re.Pattern:
    """A pattern matching a path whose file name is one of `names` (regex alternatives)."""
    return re.compile(r"(^|/)(?:" + "|".join(names) + r")$")


_CONFIG_FILE = file_named(*map(re.escape, PYTEST_CONFIGS), r"conftest\.py")
_SELECTION = re.compile(
    r"--deselect\b|(?<![\w-])-[km](?=[\s=])|--ignore(?:-glob)?\b"
    r"|\bcollect_ignore\w*\s*[=+]"
    r"|--collect-only\b|(?<![\w-])--co\b"
    r"|^\s*(?:python_(?:files|classes|functions)|testpaths|norecursedirs)\s*="
    r"|\bpytest_(?:runtest_makereport|collection_modifyitems|report_teststatus"
    r"|runtest_call|pyfunc_call|ignore_collect)\b")
_TOML_OPTION = re.compile(r"(?<![\w-])-[km](?=[\"']\s*,)")   # addopts = ["-m", "not slow"]
_RUNS_MODULE = re.compile(r"(?:^|[\s/\"'=])(?:python[\d.]*|py)\s+$")  # `python -m pytest`
_VITEST_CONFIG_FILE = file_named(VITEST_CONFIGS)

# Coverage and quality thresholds: (key, number). coverageThreshold's members are on lines
# of their own, so its keys count only in files that mention coverageThreshold.
_THRESHOLD = re.compile(
    r"(?P<key>--cov-fail-under|fail[_-]under|--fail-under|min[_-]coverage|minimum_coverage"
    r"|--min-coverage)['\"]?\s*[=:\s]\s*['\"]?(?P<n>-?\d+(?:\.\d+)?)")
# Where a comment starts in the files thresholds live in: `#` (INI, TOML, YAML, shell, a
# Makefile), `;` at a line's start (INI), `//` (jest.config.js); `#` and `//` only at the start
# or after a space, so `http://host` and `a#b` stay text.
_COMMENT = re.compile(r"^\s*;|(?:^|\s)(?:#|//)")
_JEST_THRESHOLD = re.compile(
    r"(?P<key>branches|functions|lines|statements)['\"]?\s*:\s*(?P<n>-?\d+(?:\.\d+)?)")


# The file names the runners collect by name (pytest, go, node, jest, junit), whatever the
# directory: a test file renamed from one of these to another name in tests/ is renamed away.
_TEST_NAME = re.compile(
    r"(^|/)test_[^/]*\.py$|_test\.(py|go)$|\.(test|spec)\.[cm]?[jt]sx?$|(^|/)test\.[cm]?js$"
    r"|(^|/)tests\.py$|[-_]test\.[cm]?js$|(^|/)test-[^/]*\.[cm]?js$|Tests?\.(java|kt|cs)$")



def is_test_path(path: str) -> bool:
    return bool(_TEST_PATH.search(path))


def renamed_away(old: str, new: str) -> bool:
    """A rename after which the runner no longer collects the file: out of the test paths, or
    from a collected name (test_x.py) to one no runner collects (tests/x_checks.py)."""
    return is_test_path(old) and (not is_test_path(new) or (
        bool(_TEST_NAME.search(old)) and not _TEST_NAME.search(new)))


def shadowed_runner(path: str) -> str | None:
    """The test runner a file of this name shadows (pytest.py: pytest), or None."""
    m = _RUNNER_MODULE.search(path)
    return m.group("name") if m else None


def may_switch_off(path: str) -> bool:
    """A file whose mere presence or content can switch tests off (shadowed_runner,
    selections): read even when the session left it untracked."""
    return bool(_RUNNER_MODULE.search(path) or _CONFIG_FILE.search(path))


def selections(path: str, line: str) -> list[str]:
    """What in a line of a test configuration file or conftest.py deselects, filters, ignores
    or rewrites tests, or changes which are collected ([] in any other file)."""
    return _pytest_selections(path, line) if _CONFIG_FILE.search(path) else []


def _pytest_selections(path: str, line: str) -> list[str]:
    """A pyproject.toml's addopts may be a list: `"-m",` there is an option, in a
    conftest.py's code an argument (`git commit -m`, `python -m`)."""
    found = [m for m in _SELECTION.finditer(line)
             if not (m.group(0) == "-m" and _RUNS_MODULE.search(line[:m.start()]))]
    if path.endswith(".toml"):
        found += _TOML_OPTION.finditer(line)
    return [m.group(0).strip() for m in found]


def test_names(line: str) -> list[str]:
    return [m.group("name") for rx in _TEST_DEF for m in [rx.search(line)] if m]


def is_assertion(line: str) -> bool:
    return bool(_ASSERTION.search(line))


def skips(line: str) -> list[str]:
    """The skip markers in a line."""
    return [m.group(0).strip() for m in SKIP.finditer(line)]


def threshold_block(path: str, texts: list[str]) -> str | None:
    """The block whose members (`lines: 80`, on lines of their own) are thresholds in this
    file, as findings name it: jest's coverageThreshold, vitest's coverage.thresholds (in its
    configuration file); None."""
    if any("coverageThreshold" in text for text in texts):
        return "coverageThreshold"
    if _VITEST_CONFIG_FILE.search(path) and any("thresholds" in text for text in texts):
        return "coverage.thresholds"
    return None


def thresholds(line: str, block: str | None) -> list[tuple[str, float]]:
    """The thresholds a line sets, its comment aside: a threshold commented out is removed.
    block: threshold_block's, whose members the line may set."""
    line = _COMMENT.split(line, 1)[0]
    found = [(m.group("key").lstrip("-").replace("-", "_"), float(m.group("n")))
             for m in _THRESHOLD.finditer(line)]
    if block:
        found += [(f"{block}.{m.group('key')}", float(m.group("n")))
                  for m in _JEST_THRESHOLD.finditer(line)]
    return found


@lru_cache(maxsize=256)
def glob_rx(glob: str) -> re.Pattern:
    """A glob as a regular expression matching a whole path: `**/` and `**` cross folders,
    `*` and `?` do not."""
    out, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            out.append({"*": "[^/]*", "?": "[^/]"}.get(glob[i], re.escape(glob[i])))
            i += 1
    return re.compile("".join(out) + "$")


def protected(path: str, globs: tuple[str, ...]) -> bool:
    """`protect:` globs: `**` crosses folders, `*` does not; a glob without a slash also
    matches a file name in any folder; `dir/` means everything under dir."""
    for glob in globs:
        glob = glob.strip()
        glob = glob[2:] if glob.startswith("./") else glob
        if glob.endswith("/"):
            glob += "**"
        if glob_rx(glob).match(path):
            return True
        if "/" not in glob and glob_rx(glob).match(path.rsplit("/", 1)[-1]):
            return True
    return False


def lowered_thresholds(removed: list[tuple[int, str]], added: list[tuple[int, str]],
                       block: str | None) -> list[tuple[bool, int, str]]:
    """(on the removed side, line, what) of each threshold the change removes or lowers;
    block: threshold_block's."""
    before = {key: (no, n) for no, text in removed for key, n in thresholds(text, block)}
    after = {key: (no, n) for no, text in added for key, n in thresholds(text, block)}
    return [(True, old_no, f"{key} {n:g} removed") if key not in after else
            (False, after[key][0], f"{key} lowered from {n:g} to {after[key][1]:g}")
            for key, (old_no, n) in before.items() if key not in after or after[key][1] < n]


__all__ = ["is_test_path", "test_names", "is_assertion", "skips", "thresholds", "protected",
           "may_switch_off", "selections", "shadowed_runner", "SKIP", "PYTEST_CONFIGS",
           "file_named", "threshold_block", "lowered_thresholds", "glob_rx", "JS_SCRIPT"]

"""tamper.scan over jest's testRegex and testMatch changed: judged by the files of the start
commit the old patterns took for tests and the new ones no longer do, not by the patterns'
texts; and js_config.regex, the JavaScript regular expressions read as Python's."""
from __future__ import annotations

import json

import pytest

from ralphpy.verify import js_config
from test_runner_configs import write
from test_tamper import commit, repo, scan, texts  # noqa: F401  (repo: fixture)

SPEC_JS_OR_TS = r"(/test/.*\.spec\.[tj]s)$"


def package(jest: dict | None = None) -> str:
    return json.dumps({"name": "app", **({"jest": jest} if jest else {})}, indent=2) + "\n"


def regex_moved(path, tests: list[str]) -> str:
    """package.json's jest testRegex, `.spec.js` or `.spec.ts` under test/, and `tests`
    committed; then moved to a jest.config.js that takes `.spec.ts` only. The commit before."""
    write(path, {"package.json": package({"testRegex": SPEC_JS_OR_TS}),
                 "test/typescript/store.ts": "export {}\n",
                 **{name: "export {}\n" for name in tests}})
    base = commit(path, "jest")
    write(path, {"package.json": package(), "jest.config.js": "module.exports = {\n"
                 "  preset: 'ts-jest',\n  testRegex: '(/test/.*\\\\.spec\\\\.ts)$',\n};\n"})
    return base


def test_a_test_regex_narrowed_past_no_test_of_the_start_commit_is_no_finding(repo):
    """`.[tj]s` made `.ts` where the project has no `.spec.js` left, in the move of its
    configuration to jest.config.js: every test it ran, it runs."""
    path, _ = repo
    base = regex_moved(path, ["test/store.spec.ts", "test/compose.spec.ts"])
    assert scan(path, base) == []


def test_a_test_regex_narrowed_past_a_test_of_the_start_commit_names_it(repo):
    path, _ = repo
    base = regex_moved(path, ["test/store.spec.ts", "test/legacy.spec.js"])
    assert texts(scan(path, base)) == [
        "jest.config.js:3: test selection or outcome changed: testRegex "
        "(/test/.*\\\\.spec\\\\.ts)$ (leaves out test/legacy.spec.js)",
        "package.json:4: test selection or outcome changed: testRegex "
        "(/test/.*\\\\.spec\\\\.[tj]s)$ removed (leaves out test/legacy.spec.js)"]


JEST = "module.exports = {\n  verbose: true,\n  %s,\n};\n"


@pytest.mark.parametrize("old, new", [
    ("testRegex: ['/test/.*\\\\.spec\\\\.js$', '/test/.*\\\\.spec\\\\.ts$']",
     "testRegex: ['/test/.*\\\\.spec\\\\.[jt]s$']"),
    ("testRegex: '\\\\.spec\\\\.js$'", "testRegex: ['\\\\.spec\\\\.js$', '\\\\.e2e\\\\.js$']"),
    ("testMatch: ['**/*.test.js', '**/*.spec.js']", "testRegex: '\\\\.(test|spec)\\\\.js$'"),
    ("testRegex: '\\\\.(test|spec)\\\\.js$'", "testMatch: ['**/*.{test,spec}.js']"),
    ("testMatch: ['**/*.test.js', '**/*.spec.js']",
     "testMatch: ['<rootDir>/test/*.{test,spec}.js', '<rootDir>/src/**/*.spec.js']"),
    ("testRegex: '\\\\.(test|spec)\\\\.js$'", "testRegex: '/(test|src)/[^/]+\\\\.\\\\w+\\\\.js$'"),
], ids=["regex-list-merged", "regex-made-a-list", "match-made-a-regex", "regex-made-a-match",
        "match-narrowed-to-where-the-tests-are", "regex-rewritten"])
def test_patterns_that_still_take_every_test_of_the_start_commit_are_no_finding(repo, old,
                                                                              new):
    """Strings or lists, testMatch for testRegex or back: what is compared is the files."""
    path, _ = repo
    write(path, {"jest.config.js": JEST % old, "test/b.spec.js": "\n", "src/c.spec.js": "\n",
                 "src/c.js": "\n"})
    base = commit(path, "jest")
    write(path, {"jest.config.js": JEST % new})
    assert scan(path, base) == []


@pytest.mark.parametrize("old, new, expected", [
    ("testRegex: ['/test/.*\\\\.spec\\\\.js$', '/src/.*\\\\.spec\\\\.js$']",
     "testRegex: ['/test/.*\\\\.spec\\\\.js$']",
     "jest.config.js:3: test selection or outcome changed: testRegex /src/.*\\\\.spec\\\\.js$ "
     "removed (leaves out src/c.spec.js)"),
    ("testRegex: '\\\\.(test|spec)\\\\.js$'", "testMatch: ['**/*.test.js']",
     "jest.config.js:3: test selection or outcome changed: testRegex \\\\.(test|spec)\\\\.js$ "
     "removed (leaves out src/c.spec.js)"),
    ("testMatch: ['**/*.test.js', '**/*.spec.js']", "testRegex: '\\\\.test\\\\.js$'",
     "jest.config.js:3: test selection or outcome changed: testRegex \\\\.test\\\\.js$ "
     "(leaves out src/c.spec.js)"),
    ("testMatch: ['**/*.test.js', '**/*.spec.js']", "testMatch: ['**/*.test.js', "
     "'<rootDir>/test/**/*.spec.js']",
     "jest.config.js:3: test selection or outcome changed: testMatch **/*.spec.js removed "
     "(leaves out src/c.spec.js)"),
], ids=["regex-dropped-from-a-list", "regex-made-a-narrower-match", "match-made-a-narrower-regex",
        "match-narrowed"])
def test_patterns_that_leave_a_test_of_the_start_commit_out_name_it(repo, old, new, expected):
    path, _ = repo
    write(path, {"jest.config.js": JEST % old, "test/b.spec.js": "\n", "src/c.spec.js": "\n"})
    base = commit(path, "jest")
    write(path, {"jest.config.js": JEST % new})
    assert expected in texts(scan(path, base))


@pytest.mark.parametrize("new", [
    "testRegex: '(?<kind>spec)\\\\.js$'",                # a named group: no Python syntax
    "testRegex: '/home/ci/app/test/.*\\\\.spec\\\\.js$'",
], ids=["untranslated", "of-the-folders-above"])
def test_a_regex_this_cannot_compare_by_its_files_is_judged_by_its_line(repo, new):
    """Nothing is weaker than the line rule: a regular expression Python's `re` would read
    otherwise, or one that takes no file from the configuration's folder, is a finding as
    soon as it changed."""
    path, _ = repo
    old = "testRegex: '\\\\.spec\\\\.js$'"
    for was, now in ((old, new), (new, old)):
        write(path, {"jest.config.js": JEST % was, "test/b.spec.js": "\n"})
        base = commit(path, "jest")
        write(path, {"jest.config.js": JEST % now})
        assert [f.line for f in scan(path, base)] == [3]


@pytest.mark.parametrize("source, path, expected", [
    (SPEC_JS_OR_TS, "/test/a.spec.js", True),
    (r"(/__tests__/.*|(\.|/)(test|spec))\.[jt]sx?$", "/src/a.test.tsx", True),
    (r"\w+\.spec\.js$", "/src/é.spec.js", False),       # JavaScript's \w is ASCII's
    (r"(?=.*spec)\/[^/]+$", "/a.spec.js", True),
    (r"x[(]\d{2,}\u0041", "x(12A", True),
])
def test_a_javascript_regex_of_the_syntax_both_read_alike_is_translated(source, path,
                                                                      expected):
    rx = js_config.regex(source)
    assert rx is not None and bool(rx.search(path)) is expected


@pytest.mark.parametrize("source", [
    r"(?<name>a)", r"\k<name>", r"(?P<name>a)", r"(?i)a", r"\p{L}", r"[^]", r"\Aa\Z",
    r"[[a]", r"\8", r"a(",
])
def test_a_javascript_regex_python_reads_otherwise_is_not_translated(source):
    assert js_config.regex(source) is None

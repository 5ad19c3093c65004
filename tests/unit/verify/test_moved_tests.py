"""tamper.scan over a test file moved, its name kept, to where its runner's configuration
(vitest's, jest's) as the session left it does not take it: judged by the settings at both
ends, the move and an exclusion added for it in one diff are found together; a move the runner
still takes, or one its configuration follows, is none."""
from __future__ import annotations

import pytest

from ralphpy.verify import diff_files
from test_runner_configs import write
from test_tamper import commit, repo, scan, texts  # noqa: F401  (repo: fixture)

VITEST = "import { defineConfig } from 'vitest/config'\n\nexport default defineConfig({\n" \
         "  test: {\n%s  },\n})\n"
JEST = "module.exports = {\n%s};\n"
HARD = "import { expect, test } from 'vitest'\n\ntest('hard', () => {\n" \
       "  expect(1 + 1).toBe(2)\n})\n"
JS_HARD = "test('hard', () => {\n  expect(1 + 1).toBe(2);\n});\n"


def moved(path, config: dict[str, str], old: str, new: str,
          config_now: dict[str, str] | None = None) -> str:
    """`config` and a test at `old` committed, then the test moved to `new` (and the
    configuration made `config_now`). The commit before."""
    text = JS_HARD if old.endswith(".js") else HARD
    write(path, {**config, old: text, "src/easy.test.ts": HARD.replace("hard", "easy")})
    base = commit(path, "tests")
    write(path, {old: None, new: text, **(config_now or {})})
    return base


@pytest.mark.parametrize("config, new, why", [
    ({"vitest.config.ts": VITEST % "    exclude: ['legacy/**'],\n"}, "legacy/hard.test.ts",
     "test.exclude legacy/** in vitest.config.ts"),
    ({"vitest.config.ts": VITEST % "    include: ['src/**/*.test.ts'],\n"},
     "scratch/hard.test.ts", "test.include src/**/*.test.ts in vitest.config.ts"),
    ({"vitest.config.ts": VITEST % "    dir: 'src',\n"}, "lib/hard.test.ts", "test.dir src"),
    ({"vite.config.ts": VITEST % "    exclude: ['**/node_modules/**', '**/old/**'],\n"},
     "src/old/hard.test.ts", "test.exclude **/old/** in vite.config.ts"),
], ids=["into-an-exclude", "out-of-the-include", "out-of-dir", "vite-config"])
def test_a_test_moved_out_of_vitests_run_is_a_finding(repo, config, new, why):
    path, _ = repo
    base = moved(path, config, "src/hard.test.ts", new)
    assert texts(scan(path, base)) == [
        f"src/hard.test.ts: test file moved out of the run to {new} ({why})"]


@pytest.mark.parametrize("config, new, why", [
    ({"jest.config.js": JEST % "  testPathIgnorePatterns: ['/node_modules/', '/legacy/'],\n"},
     "legacy/hard.test.js", "testPathIgnorePatterns /legacy/ in jest.config.js"),
    ({"jest.config.js": JEST % "  roots: ['<rootDir>/src'],\n"}, "lib/hard.test.js",
     "roots <rootDir>/src"),
    ({"jest.config.js": JEST % "  testMatch: ['<rootDir>/src/**/*.test.js'],\n"},
     "scratch/hard.test.js", "testMatch <rootDir>/src/**/*.test.js in jest.config.js"),
    ({"jest.config.js": JEST % "  testRegex: '/src/.*\\\\.test\\\\.js$',\n"},
     "scratch/hard.test.js", "testRegex /src/.*\\\\.test\\\\.js$ in jest.config.js"),
], ids=["into-an-ignore-pattern", "out-of-roots", "out-of-testMatch", "out-of-testRegex"])
def test_a_test_moved_out_of_jests_run_is_a_finding(repo, config, new, why):
    path, _ = repo
    base = moved(path, config, "src/hard.test.js", new)
    assert texts(scan(path, base)) == [
        f"src/hard.test.js: test file moved out of the run to {new} ({why})"]


@pytest.mark.parametrize("config, config_now, new, why", [
    ({"vitest.config.ts": VITEST % "    environment: 'node',\n"},
     {"vitest.config.ts": VITEST % "    exclude: ['legacy/**'],\n"}, "legacy/hard.test.ts",
     "test.exclude legacy/** in vitest.config.ts"),
    ({"vitest.config.ts": VITEST % "    include: ['**/*.test.ts'],\n"},
     {"vitest.config.ts": VITEST % "    include: ['src/**/*.test.ts'],\n"},
     "scratch/hard.test.ts", "test.include src/**/*.test.ts in vitest.config.ts"),
    ({"jest.config.js": JEST % "  testEnvironment: 'node',\n"},
     {"jest.config.js": JEST % "  testPathIgnorePatterns: ['/legacy/'],\n"},
     "legacy/hard.test.ts", "testPathIgnorePatterns /legacy/ in jest.config.js"),
], ids=["vitest-exclude-added", "vitest-include-narrowed", "jest-ignore-added"])
def test_a_move_and_the_setting_that_keeps_it_out_in_one_diff_are_a_finding(
        repo, config, config_now, new, why):
    """The settings are read as the session left them: the exclusion added for the moved
    test matches no file of the start commit, and is found with the move."""
    path, _ = repo
    base = moved(path, config, "src/hard.test.ts", new, config_now)
    assert f"src/hard.test.ts: test file moved out of the run to {new} ({why})" in texts(
        scan(path, base))


def test_jests_settings_in_package_json_are_read(repo):
    path, _ = repo
    package = '{\n  "jest": {\n    "testPathIgnorePatterns": ["/legacy/"]\n  }\n}\n'
    base = moved(path, {"package.json": package}, "src/hard.test.js", "legacy/hard.test.js")
    assert texts(scan(path, base)) == [
        "src/hard.test.js: test file moved out of the run to legacy/hard.test.js "
        "(testPathIgnorePatterns /legacy/ in package.json)"]


@pytest.mark.parametrize("config, new, config_now", [
    ({"vitest.config.ts": VITEST % "    include: ['src/**/*.test.ts'],\n"},
     "src/math/hard.test.ts", None),
    ({"vitest.config.ts": VITEST % "    include: ['src/**/*.test.ts'],\n"},
     "lib/hard.test.ts",
     {"vitest.config.ts": VITEST % "    include: ['{src,lib}/**/*.test.ts'],\n"}),
    ({"vitest.config.ts": VITEST % "    exclude: ['legacy/**'],\n"}, "legacy/hard.test.ts",
     {"vitest.config.ts": VITEST % "    exclude: ['old/**'],\n"}),
    ({"vitest.config.ts": VITEST % "    include: files,\n"}, "scratch/hard.test.ts", None),
    ({"vitest.config.ts": VITEST % "    include: ['src/**/*.test.ts'],\n"},
     "packages/b/hard.test.ts", {"packages/b/vitest.config.ts": VITEST % "    dir: '.',\n"}),
    ({"jest.config.js": JEST % "  testPathIgnorePatterns: ['/legacy/'],\n"}, "lib/hard.test.ts",
     None),
    ({"jest.config.js": JEST % "  testPathIgnorePatterns: ['/legacy/(?<old>x)'],\n"},
     "legacy/hard.test.ts", None),
    ({}, "legacy/hard.test.ts", None),
], ids=["still-included", "include-follows", "exclude-follows", "include-by-code",
        "into-a-package-of-its-own", "jest-still-taken", "jest-pattern-not-read",
        "no-configuration"])
def test_a_move_the_runner_still_takes_or_cannot_be_told_is_no_finding(repo, config, new,
                                                                       config_now):
    path, _ = repo
    base = moved(path, config, "src/hard.test.ts", new, config_now)
    assert [t for t in texts(scan(path, base)) if "moved out of the run" in t] == []


def test_a_test_renamed_to_a_name_no_runner_takes_is_reported_once(repo):
    path, _ = repo
    base = moved(path, {"vitest.config.ts": VITEST % "    exclude: ['legacy/**'],\n"},
                 "src/hard.test.ts", "legacy/hard.ts")
    assert texts(scan(path, base)) == [
        "src/hard.test.ts: test file renamed away to legacy/hard.ts (no longer collected)"]


PY_HARD = "def test_hard():\n    total = 1 + 1\n    assert total == 2\n"


def py_moved(path, config: dict[str, str], new: str,
             config_now: dict[str, str] | None = None) -> str:
    write(path, {**config, "tests/test_hard.py": PY_HARD})
    base = commit(path, "tests")
    write(path, {"tests/test_hard.py": None, new: PY_HARD, **(config_now or {})})
    return base


@pytest.mark.parametrize("config, new, why", [
    ({"pytest.ini": "[pytest]\nnorecursedirs = disabled .*\n"}, "tests/disabled/test_hard.py",
     "norecursedirs disabled in pytest.ini"),
    ({"pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-q --ignore=tests/disabled"\n'},
     "tests/disabled/test_hard.py", "addopts --ignore=tests/disabled in pyproject.toml"),
    ({"pyproject.toml": '[tool.pytest.ini_options]\naddopts = ["--ignore", "tests/off"]\n'},
     "tests/off/test_hard.py", "addopts --ignore=tests/off in pyproject.toml"),
    ({"setup.cfg": "[coverage:report]\nfail_under = 90\n\n[tool:pytest]\n"
                   "addopts = --ignore-glob=*/disabled/*\n"},
     "tests/disabled/test_hard.py", "addopts --ignore-glob=*/disabled/* in setup.cfg"),
    ({"tox.ini": "[tox]\nenvlist = py3\n\n[pytest]\ntestpaths = tests\n"}, "scratch/test_hard.py",
     "testpaths tests in tox.ini"),
    ({"pytest.ini": "[pytest]\ntestpaths =\n    tests\n"}, "tests/build/test_hard.py",
     "norecursedirs build (pytest's default)"),
], ids=["norecursedirs", "ignore", "ignore-in-a-list", "ignore-glob", "out-of-testpaths",
        "default-norecursedirs"])
def test_a_test_moved_out_of_pytests_collection_is_a_finding(repo, config, new, why):
    path, _ = repo
    base = py_moved(path, config, new)
    assert texts(scan(path, base)) == [
        f"tests/test_hard.py: test file moved out of the run to {new} ({why})"]


def test_a_move_and_the_pytest_setting_that_keeps_it_out_in_one_diff_are_a_finding(repo):
    path, _ = repo
    base = py_moved(path, {"pytest.ini": "[pytest]\naddopts = -q\n"}, "tests/disabled/test_hard.py",
                    {"pytest.ini": "[pytest]\naddopts = -q\nnorecursedirs = disabled\n"})
    assert ("tests/test_hard.py: test file moved out of the run to tests/disabled/test_hard.py "
            "(norecursedirs disabled in pytest.ini)") in texts(scan(path, base))


@pytest.mark.parametrize("config, new, config_now", [
    ({"pytest.ini": "[pytest]\ntestpaths = tests\n"}, "tests/unit/test_hard.py", None),
    ({"pytest.ini": "[pytest]\ntestpaths = tests\n"}, "scratch/test_hard.py",
     {"pytest.ini": "[pytest]\ntestpaths = tests scratch\n"}),
    ({"pytest.ini": "[pytest]\nnorecursedirs = disabled\n"}, "tests/build/test_hard.py", None),
    ({}, "build/test_hard.py", None),
    ({"pytest.ini": "[pytest]\naddopts = '--ignore=tests/off\n"}, "tests/off/test_hard.py", None),
], ids=["still-under-testpaths", "testpaths-follow", "norecursedirs-replaces-the-default",
        "no-pytest-configuration", "addopts-not-read"])
def test_a_move_pytest_still_collects_or_cannot_be_told_is_no_finding(repo, config, new,
                                                                     config_now):
    path, _ = repo
    base = py_moved(path, config, new, config_now)
    assert [t for t in texts(scan(path, base)) if "moved out of the run" in t] == []


def test_a_files_text_as_the_diff_started_is_rebuilt_from_its_text_now():
    """A configuration's start-commit side comes from its text now and the -U0 diff."""
    diff = ("diff --git a/pytest.ini b/pytest.ini\n--- a/pytest.ini\n+++ b/pytest.ini\n"
            "@@ -2 +2 @@\n-testpaths = tests\n+testpaths = src\n"
            "@@ -3,0 +4,2 @@\n+norecursedirs = off\n+addopts = -q\n"
            "@@ -5 +6,0 @@\n-xfail_strict = true\n")
    now = "[pytest]\ntestpaths = src\nminversion = 7\nnorecursedirs = off\naddopts = -q\n" \
          "console_output_style = classic\n"
    f = diff_files.parse(diff)[0]
    assert diff_files.before(f, now) == ("[pytest]\ntestpaths = tests\nminversion = 7\n"
                                         "console_output_style = classic\nxfail_strict = true\n")

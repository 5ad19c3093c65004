"""tamper.scan over a test file moved, its name kept, to where its runner's configuration
(vitest's, jest's) as the session left it does not take it: judged by the settings at both
ends, the move and an exclusion added for it in one diff are found together; a move the runner
still takes, or one its configuration follows, is none."""
from __future__ import annotations

import pytest

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

"""tamper.scan over vitest's test.include and test.exclude changed: judged by the files of the
start commit the old settings took for tests and the new ones no longer do, not by the globs'
texts; and vitest_config.tests_left_out, which files those are."""
from __future__ import annotations

import pytest

from ralphpy.verify import vitest_config
from test_runner_configs import write
from test_tamper import commit, repo, scan, texts  # noqa: F401  (repo: fixture)

VITEST = "import { defineConfig } from 'vitest/config'\n\nexport default defineConfig({\n" \
         "  test: {\n    environment: 'node',\n%s  },\n})\n"
TESTS = {"src/a.test.ts": "export {}\n", "src/easy/b.test.ts": "export {}\n",
         "src/fixtures/data.ts": "export {}\n", "src/a.ts": "export {}\n"}


def changed(path, old: str, new: str, files: dict[str, str] | None = None) -> str:
    """vitest.config.ts with `old` in its test block and `files` committed (TESTS unless
    given; the repo has test/a.test.js), then `old` made `new`. The commit before."""
    write(path, {"vitest.config.ts": VITEST % old, **(TESTS if files is None else files)})
    base = commit(path, "vitest")
    write(path, {"vitest.config.ts": VITEST % new})
    return base


@pytest.mark.parametrize("old, new", [
    ("    include: ['**/*.test.ts'],\n", "    include: ['src/**/*.test.ts'],\n"),
    ("    include: ['**/*.{test,spec}.?(c|m)[jt]s?(x)'],\n", "    include: ['**/*.test.[jt]s'],\n"),
    ("", "    include: ['{src,test}/**/*.test.[jt]s'],\n"),
    ("    include: ['src/**/*.test.ts', 'lib/**/*.test.ts'],\n",
     "    include: ['src/**/*.test.ts'],\n"),
    ("", "    exclude: ['**/fixtures/**'],\n"),
    ("    include: ['src/**/*.test.ts'],\n",
     "    include: ['src/**/*.test.ts'],\n    exclude: ['lib/**'],\n"),
    ("    dir: 'src',\n    include: ['**/*.test.ts'],\n",
     "    dir: 'src',\n    include: ['{easy/,}*.test.ts'],\n"),
], ids=["include-narrowed-to-where-the-tests-are", "default-spelled-for-the-tests-there",
        "include-set-over-the-default", "include-of-no-test-dropped", "exclude-of-no-test",
        "exclude-of-tests-not-included", "include-under-dir"])
def test_settings_that_still_take_every_test_of_the_start_commit_are_no_finding(repo, old,
                                                                              new):
    """What is compared is the files vitest takes: a narrowing past no test of the start
    commit, or an exclude of files it did not take for tests, switches none off."""
    path, _ = repo
    lib = "'lib/**'" in new                       # a test there, not included before
    base = changed(path, old, new, {**TESTS, "lib/c.test.ts": "export {}\n"} if lib else None)
    assert scan(path, base) == []


@pytest.mark.parametrize("old, new, expected", [
    ("    include: ['**/*.test.ts'],\n", "    include: ['src/easy/**/*.test.ts'],\n",
     "vitest.config.ts:6: test selection or outcome changed: test.include **/*.test.ts removed "
     "(leaves out src/a.test.ts)"),
    ("", "    include: ['src/easy/**/*.test.ts'],\n",
     "vitest.config.ts:6: test selection or outcome changed: test.include src/easy/**/*.test.ts "
     "(leaves out src/a.test.ts)"),
    ("", "    exclude: ['src/easy'],\n",
     "vitest.config.ts:6: test selection or outcome changed: test.exclude src/easy "
     "(leaves out src/easy/b.test.ts)"),
    ("    exclude: ['**/fixtures/**'],\n", "    exclude: ['**/fixtures/**', 'src/*.ts'],\n",
     "vitest.config.ts:6: test selection or outcome changed: test.exclude src/*.ts "
     "(leaves out src/a.test.ts)"),
    ("    dir: 'src',\n", "    dir: 'src',\n    include: ['easy/*.test.ts'],\n",
     "vitest.config.ts:7: test selection or outcome changed: test.include easy/*.test.ts "
     "(leaves out src/a.test.ts)"),
], ids=["include-narrowed", "include-set-over-the-default", "exclude-of-a-folder",
        "exclude-added", "include-under-dir"])
def test_settings_that_leave_a_test_of_the_start_commit_out_name_it(repo, old, new, expected):
    path, _ = repo
    base = changed(path, old, new)
    assert texts(scan(path, base)) == [expected]


def test_a_configuration_in_a_folder_names_the_test_from_the_top(repo):
    path, _ = repo
    write(path, {"web/vitest.config.ts": VITEST % "    include: ['**/*.test.ts'],\n",
                 **{f"web/{name}": text for name, text in TESTS.items()}})
    base = commit(path, "web")
    write(path, {"web/vitest.config.ts": VITEST % "    include: ['src/*.test.ts'],\n"})
    assert texts(scan(path, base)) == [
        "web/vitest.config.ts:6: test selection or outcome changed: test.include **/*.test.ts "
        "removed (leaves out web/src/easy/b.test.ts)"]


@pytest.mark.parametrize("new", [
    "    include: ['src/**/*.+(test|spec).ts'],\n",      # an extglob this does not read
    "    include: [...easyTests],\n",                    # given by code
], ids=["unread-extglob", "by-code"])
def test_an_include_this_cannot_compare_by_its_files_is_judged_by_its_text(repo, new):
    """Nothing is weaker than the text rule: an entry removed that no new one covers."""
    path, _ = repo
    base = changed(path, "    include: ['src/**/*.test.ts'],\n", new)
    assert texts(scan(path, base)) == ["vitest.config.ts:6: test selection or outcome "
                                       "changed: test.include src/**/*.test.ts removed"]


def settings(block: str) -> dict:
    return vitest_config.settings(VITEST % block)


@pytest.mark.parametrize("old, new, expected", [
    ("", "    exclude: [],\n", []),                           # node_modules then taken
    ("", "    exclude: ['**/*.spec.ts'],\n", ["b.spec.ts"]),
    ("    include: ['**/*.ts'],\n", "", ["c.ts"]),
    ("", "    include: ['**/*.spec.ts'],\n", ["a.test.mjs", "d/x.test.tsx"]),
    ("    include: ['nothing/**'],\n", "", None),              # old took no file
])
def test_the_files_left_out_are_those_the_old_settings_took_and_the_new_do_not(old, new,
                                                                                 expected):
    files = ["a.test.mjs", "b.spec.ts", "c.ts", "d/x.test.tsx", "node_modules/m/e.test.js",
             "README.md"]
    assert vitest_config.tests_left_out(settings(old), settings(new), files) == expected

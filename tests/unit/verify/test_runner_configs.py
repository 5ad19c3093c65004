"""tamper.scan over a JavaScript runner's configuration compared wherever the runner reads it:
moved between the files of its folder (package.json's "jest" and jest.config.js, vite.config
and vitest.config), and the folder it looks for tests in (jest's rootDir, vitest's root)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from conftest import _clean_environ, git
from test_tamper import commit, edit, repo, scan, texts  # noqa: F401  (repo: fixture)

PACKAGE = textwrap.dedent("""\
    {
      "name": "app",
      "jest": {
        "roots": ["<rootDir>/src", "<rootDir>/test"],
        "testMatch": ["**/*.test.js", "**/*.test.ts"],
        "testPathIgnorePatterns": ["/node_modules/"],
        "coveragePathIgnorePatterns": ["/src/generated/"],
        "collectCoverageFrom": ["src/**/*.ts", "!src/generated/**"],
        "coverageThreshold": {
          "global": {
            "lines": 80
          }
        }
      }
    }
""")
JEST_CONFIG = textwrap.dedent("""\
    module.exports = {
      roots: ['<rootDir>/src', '<rootDir>/test'],
      testMatch: ['**/*.test.js', '**/*.test.ts'],
      testPathIgnorePatterns: ['/node_modules/'],
      coveragePathIgnorePatterns: ['/src/generated/'],
      collectCoverageFrom: ['src/**/*.ts', '!src/generated/**'],
      coverageThreshold: {
        global: {
          lines: 80,
        },
      },
    };
""")
NO_JEST = '{\n  "name": "app"\n}\n'


def write(path: Path, files: dict[str, str | None]) -> None:
    for name, text in files.items():
        if text is None:
            (path / name).unlink()
            continue
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A", env=_clean_environ())


def move(path: Path, to: str) -> str:
    """jest's configuration in one of its files and tests under src/ committed, then moved,
    faithfully, to the other (`to`); the commit before the move."""
    before, after = ({"package.json": PACKAGE},
                     {"package.json": NO_JEST, "jest.config.js": JEST_CONFIG})
    if to == "package.json":
        before, after = ({"package.json": NO_JEST, "jest.config.js": JEST_CONFIG},
                         {"package.json": PACKAGE, "jest.config.js": None})
    write(path, {"src/hard/x.test.ts": "export {}\n", "src/easy/sum.test.ts": "export {}\n",
                 "src/hard.ts": "export {}\n", "src/generated/api.ts": "export {}\n", **before})
    base = commit(path, "jest")
    write(path, after)
    return base


@pytest.mark.parametrize("to", ["jest.config.js", "package.json"])
def test_jest_s_configuration_moved_to_its_other_file_is_no_finding(repo, to):
    """package.json's "jest" object made a jest.config.js, or back: the same settings, where
    jest reads them now."""
    path, _ = repo
    base = move(path, to)
    assert scan(path, base) == []


@pytest.mark.parametrize("to, old, new, expected", [
    ("jest.config.js", "'**/*.test.ts']", "'src/easy/**/*.test.ts']",
     "package.json:5: test selection or outcome changed: testMatch **/*.test.ts removed "
     "(leaves out src/hard/x.test.ts)"),
    ("jest.config.js", "['/node_modules/']", "['/node_modules/', '/src/hard/']",
     "jest.config.js:4: test selection or outcome changed: testPathIgnorePatterns /src/hard/"),
    ("jest.config.js", "lines: 80", "lines: 40",
     "jest.config.js:9: coverageThreshold.lines lowered from 80 to 40"),
    ("jest.config.js", "['/src/generated/']", "['/src/generated/', '/src/hard']",
     "jest.config.js:5: coverage exclusion added: coveragePathIgnorePatterns /src/hard"),
    ("package.json", '"**/*.test.ts"]', '"src/easy/**/*.test.ts"]',
     "jest.config.js:3: test selection or outcome changed: testMatch **/*.test.ts removed "
     "(leaves out src/hard/x.test.ts)"),
    ("package.json", '"<rootDir>/src", ', "",
     "jest.config.js:2: test selection or outcome changed: roots <rootDir>/src removed"),
    ("package.json", '"src/**/*.ts", ', '"src/easy/**/*.ts", ',
     "jest.config.js:6: coverage exclusion added: collectCoverageFrom src/**/*.ts removed"),
    ("package.json", '"lines": 80', "",
     "jest.config.js:9: coverageThreshold.lines 80 removed"),
], ids=["test-match-narrowed", "test-ignored", "threshold-lowered", "coverage-ignored",
        "back-test-match-narrowed", "back-root-dropped", "back-coverage-narrowed",
        "back-threshold-dropped"])
def test_a_narrowing_hidden_in_jest_s_configuration_s_move_is_a_finding(repo, to, old, new,
                                                                      expected):
    """Compared with where jest read its settings before: an entry dropped is named in the
    file it left, one added in the file it went to."""
    path, _ = repo
    base = move(path, to)
    edit(path, to, old, new)
    assert texts(scan(path, base)) == [expected]


def test_jest_s_configuration_moved_but_not_out_of_its_old_file_is_read_as_before(repo):
    """Only a move is compared across files: a jest.config.js added beside package.json's
    "jest" object, which still holds its settings, is a new configuration, read by the line."""
    path, _ = repo
    write(path, {"package.json": PACKAGE, "src/hard/x.test.ts": "export {}\n"})
    base = commit(path, "jest")
    write(path, {"jest.config.js": JEST_CONFIG})
    assert "jest.config.js:3: test selection or outcome changed: testMatch" in texts(
        scan(path, base))


VITEST = textwrap.dedent("""\
    import { defineConfig } from 'vitest/config'

    export default defineConfig({
      test: {
        include: ['src/**/*.test.ts'],
        exclude: ['src/generated/**'],
        coverage: { exclude: ['src/generated/**'] },
      },
    })
""")
VITE = "export default defineConfig({\n  plugins: [],\n})\n"


def test_vitest_s_configuration_moved_from_vite_s_file_is_compared_where_it_was(repo):
    """vite.config.ts's `test` block made a vitest.config.ts: the same settings are no
    finding, an exclude added in the move is."""
    path, _ = repo
    write(path, {"vite.config.ts": VITE.replace("  plugins: [],\n", "  plugins: [],\n"
                                                + VITEST[VITEST.index("  test:"):-4]),
                 "src/hard.test.ts": "export {}\n", "src/generated/api.ts": "export {}\n"})
    base = commit(path, "vite")
    write(path, {"vite.config.ts": VITE, "vitest.config.ts": VITEST})
    assert scan(path, base) == []
    edit(path, "vitest.config.ts", "['src/generated/**'],\n", "['src/generated/**', "
         "'src/hard*'],\n")
    assert texts(scan(path, base)) == [
        "vitest.config.ts:6: test selection or outcome changed: test.exclude src/hard* "
        "(leaves out src/hard.test.ts)"]


@pytest.fixture
def web(repo) -> tuple[Path, str]:
    """The repo with a package under web/: a jest and a vitest configuration of no settings
    these rules read, tests in src/ and test/, Python tests beside them: (path, base)."""
    path, _ = repo
    write(path, {"web/jest.config.js": "module.exports = {\n  verbose: true,\n};\n",
                 "web/vitest.config.ts": "export default {\n  test: {\n  },\n}\n",
                 "web/src/a.test.ts": "export {}\n", "web/src/a.ts": "export {}\n",
                 "web/test/b.test.ts": "export {}\n", "web/py/test_c.py": "\n"})
    return path, commit(path, "web")


@pytest.mark.parametrize("name, old, new, expected", [
    ("web/jest.config.js", "  verbose", "  rootDir: 'src',\n  verbose",
     ["web/jest.config.js:2: test selection or outcome changed: rootDir src"]),
    ("web/jest.config.js", "  verbose", "  rootDir: path.resolve(__dirname, 'test'),\n  verbose",
     ["web/jest.config.js:2: test selection or outcome changed: rootDir test"]),
    ("web/jest.config.js", "  verbose", "  testMatch: ['**/src/**/*.test.ts'],\n  verbose",
     ["web/jest.config.js:2: test selection or outcome changed: testMatch **/src/**/*.test.ts "
      "(leaves out web/test/b.test.ts)"]),
    ("web/vitest.config.ts", "export default {\n", "export default {\n  root: 'src',\n",
     ["web/vitest.config.ts:2: test selection or outcome changed: root src"]),
    ("web/vitest.config.ts", "  test: {\n", "  test: {\n    root: './test',\n",
     ["web/vitest.config.ts:3: test selection or outcome changed: test.root test"]),
], ids=["jest-root-dir", "jest-root-dir-by-a-call", "jest-test-match-over-the-default",
        "vite-root", "vitest-test-root"])
def test_a_root_that_leaves_tests_of_the_start_commit_out_is_a_finding(web, name, old, new,
                                                                      expected):
    """jest looks for tests under its rootDir, vitest under its root (`dir` the row of
    test_tamper's): one that no longer holds a test file of the start commit switches it off,
    and so does a testMatch set over jest's default."""
    path, base = web
    edit(path, name, old, new)
    assert texts(scan(path, base)) == expected


@pytest.mark.parametrize("name, old, new", [
    ("web/jest.config.js", "  verbose", "  rootDir: '.',\n  verbose"),
    ("web/jest.config.js", "  verbose", "  rootDir: __dirname,\n  verbose"),
    ("web/jest.config.js", "  verbose", "  rootDir: '..',\n  verbose"),
    ("web/jest.config.js", "  verbose", "  testMatch: ['**/*.test.[jt]s'],\n  verbose"),
    ("web/vitest.config.ts", "export default {\n", "export default {\n  root: __dirname,\n"),
    ("web/vitest.config.ts", "  test: {\n", "  test: {\n    root: fileURLToPath(new URL('./', "
     "import.meta.url)),\n"),
    ("web/vite.config.ts", None, "export default {\n  root: 'src',\n}\n"),
], ids=["jest-root-dir-here", "jest-root-dir-by-code", "jest-root-dir-above",
        "jest-test-match-of-every-test", "vite-root-by-code", "vitest-root-here",
        "vite-s-own-root"])
def test_a_root_that_holds_every_test_of_the_start_commit_is_no_finding(web, name, old, new):
    """Python tests beside them are no JavaScript runner's; vite's root in a file with no
    `test` settings is the app's, not vitest's."""
    path, base = web
    if old is None:
        write(path, {name: new})
    else:
        edit(path, name, old, new)
    assert scan(path, base) == []


def test_jest_s_root_dir_in_package_json_or_a_new_configuration_is_read(repo):
    path, _ = repo
    write(path, {"src/a.test.js": "\n"})
    base = commit(path, "tests")
    edit(path, "package.json", '"jest": {\n', '"jest": {\n    "rootDir": "src",\n')
    assert texts(scan(path, base)) == [
        "package.json:3: test selection or outcome changed: rootDir src"]
    edit(path, "package.json", '    "rootDir": "src",\n', "")
    write(path, {"jest.config.js": "module.exports = {\n  rootDir: 'test',\n};\n"})
    assert texts(scan(path, base)) == [
        "jest.config.js:2: test selection or outcome changed: rootDir test"]

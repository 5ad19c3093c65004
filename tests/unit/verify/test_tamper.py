"""tamper.scan over real git repositories: a base commit, then the changes a session makes
(committed or not); each rule finds what it should and nothing when tests are only added."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from conftest import _clean_environ, git
from ralphpy.verify import tamper

PY_TEST = textwrap.dedent("""\
    import pytest


    def test_one():
        value = 1
        assert value == 1


    def test_two():
        assert 2 == 2
""")
JS_TEST = textwrap.dedent("""\
    const { test, describe } = require('node:test');
    const assert = require('node:assert');

    test('adds', () => {
      assert.strictEqual(1 + 1, 2);
    });
""")


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    """A repository with tests, a coverage threshold and a workflow; returns (path, base)."""
    path = tmp_path / "repo"
    files = {"tests/test_a.py": PY_TEST, "test/a.test.js": JS_TEST,
             "src/app.py": "X = 1\n", "setup.cfg": "[coverage:report]\nfail_under = 90\n",
             "package.json": '{\n  "jest": {\n    "coverageThreshold": {\n      "global": {\n'
                             '        "lines": 80\n      }\n    }\n  }\n}\n',
             ".github/workflows/ci.yml": "run: pytest --cov-fail-under=85\n"}
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "init", "-q", "-b", "main", env=_clean_environ())
    return path, commit(path, "base")


def commit(path: Path, message: str) -> str:
    """Commit every change in the tree; the new HEAD, a scan's base."""
    env = _clean_environ()
    git(path, "add", "-A", env=env)
    git(path, "commit", "-qm", message, env=env)
    return git(path, "rev-parse", "HEAD", env=env).strip()


def edit(path: Path, name: str, old: str, new: str) -> None:
    text = (path / name).read_text()
    assert old in text
    (path / name).write_text(text.replace(old, new, 1))


def scan(path: Path, base: str, protect: tuple[str, ...] = ()) -> list[tamper.Finding]:
    return tamper.scan(path, base, protect, env=_clean_environ())


def texts(found: list[tamper.Finding]) -> list[str]:
    return [f.text() for f in found]


def test_no_change_and_added_tests_are_never_findings(repo):
    path, base = repo
    assert scan(path, base, ("tests/**",)) == []
    (path / "tests" / "test_new.py").write_text("import pytest\n\n\n@pytest.mark.skip\n"
                                                "def test_new():\n    assert True\n")
    (path / "tests" / "test_a.py").write_text(PY_TEST + "\n\ndef test_three():\n"
                                              "    assert 3 == 3\n\n\n@pytest.fixture\n"
                                              "def client():\n    return 3\n")
    edit(path, "test/a.test.js", "});\n", "});\n\ntest('more', () => {\n"
         "  assert.ok(true);\n});\n")
    assert scan(path, base, ("tests/**", "test/**")) == []


@pytest.mark.parametrize("old, new, expected", [
    ("    assert value == 1\n", "", "tests/test_a.py:6: assertion removed or changed: "
     "assert value == 1"),
    ("def test_one", "@pytest.mark.skip(reason='later')\ndef test_one",
     "tests/test_a.py:4: skip added: @pytest.mark.skip"),
    ("    value = 1\n", "    pytest.skip('slow')\n    value = 1\n",
     "tests/test_a.py:5: skip added: pytest.skip("),
    ("def test_two", "@pytest.mark.xfail\ndef test_two",
     "tests/test_a.py:9: skip added: @pytest.mark.xfail"),
    # a module's marks without a decorator, unittest's own ways, and code switched off
    ("import pytest\n", "import pytest\npytestmark = pytest.mark.skip\n",
     "tests/test_a.py:2: skip added: pytest.mark.skip"),
    ("    value = 1\n", "    raise unittest.SkipTest('later')\n    value = 1\n",
     "tests/test_a.py:5: skip added: SkipTest"),
    ("def test_two", "@unittest.expectedFailure\ndef test_two",
     "tests/test_a.py:9: skip added: expectedFailure"),
    ("    assert value == 1\n", "    if False:\n        assert value == 1\n",
     "tests/test_a.py:6: skip added: if False:"),
    ("    assert 2 == 2\n", "    assert 2 == 2\n\n\ndel test_two\n",
     "tests/test_a.py:13: skip added: del test_two"),
    ("import pytest\n", "import pytest\n__test__ = False\n",
     "tests/test_a.py:2: skip added: __test__ = False"),
], ids=["assertion", "mark-skip", "pytest-skip", "xfail", "pytestmark",
        "SkipTest", "expectedFailure", "if-False", "del", "__test__"])
def test_weakened_python_tests_are_found_with_file_and_line(repo, old, new, expected):
    path, base = repo
    edit(path, "tests/test_a.py", old, new)
    assert expected in texts(scan(path, base))


@pytest.mark.parametrize("old, new, expected", [
    ("test('adds'", "test.skip('adds'", "test/a.test.js:4: skip added: test.skip"),
    ("test('adds'", "test.only('adds'", "test/a.test.js:4: skip added: test.only"),
    ("test('adds', () =>", "test('adds', { skip: true }, () =>",
     "test/a.test.js:4: skip added: { skip:"),
    ("  assert.strictEqual(1 + 1, 2);\n", "", "test/a.test.js:5: assertion removed"),
    ("test('adds', () =>", "test('adds', { timeout: 1000, skip: true }, () =>",
     "test/a.test.js:4: skip added: , skip:"),
    ("test('adds', () => {\n", "test('adds', (t) => {\n  t.skip();\n",
     "test/a.test.js:5: skip added: t.skip("),
    ("  assert.strictEqual(1 + 1, 2);\n", "  if (false) {\n  assert.strictEqual(1 + 1, 2);\n"
     "  }\n", "test/a.test.js:5: skip added: if (false)"),
    ("test('adds'", "test.failing('adds'", "test/a.test.js:4: skip added: test.failing"),
    ("test('adds'", "test.fails('adds'", "test/a.test.js:4: skip added: test.fails"),
    ("test('adds'", "test.concurrent.skip('adds'",
     "test/a.test.js:4: skip added: test.concurrent.skip"),
], ids=["skip", "only", "skip-option", "assertion", "skip-option-not-first", "t-skip",
        "if-false", "jest-failing", "vitest-fails",
        "concurrent-skip"])
def test_weakened_node_tests_are_found(repo, old, new, expected):
    path, base = repo
    edit(path, "test/a.test.js", old, new)
    assert any(t.startswith(expected) for t in texts(scan(path, base)))


MATH_FACTORY = ("jest.mock('../src/math', () => ({\n  ...jest.requireActual('../src/math'),\n"
                "  sum: jest.fn(() => 2),\n}));\n")


@pytest.mark.parametrize("old, new, expected", [
    ("package calc", "//go:build ignore\n\npackage calc",
     "calc_test.go:1: skip added: //go:build ignore"),
    ("package calc", "// +build ignore\n\npackage calc",
     "calc_test.go:1: skip added: // +build ignore"),
], ids=["build-ignore", "old-build-ignore"])
def test_a_go_test_switched_off_is_a_finding(repo, old, new, expected):
    path, _ = repo
    (path / "calc_test.go").write_text('package calc\n\nimport "testing"\n\n'
                                       'func TestAdd(t *testing.T) {\n\tif Add(1, 1) != 2 {\n'
                                       '\t\tt.Errorf("wrong")\n\t}\n}\n')
    base = commit(path, "go")
    edit(path, "calc_test.go", old, new)
    assert texts(scan(path, base)) == [expected]


TWO = "def test_two():\n    assert 2 == 2\n"


def test_deleted_and_renamed_away_test_files_are_findings_even_when_committed(repo):
    path, base = repo
    env = _clean_environ()
    git(path, "rm", "-q", "tests/test_a.py", env=env)
    git(path, "mv", "test/a.test.js", "test/a.js.bak", env=env)
    git(path, "commit", "-qm", "gone", env=env)
    found = texts(scan(path, base))
    assert "tests/test_a.py: test file deleted" in found
    assert "test/a.test.js: test file renamed away to test/a.js.bak (no longer collected)" in found


@pytest.mark.parametrize("name", ["calc_test.js", "lib/calc-test.mjs", "test-calc.cjs",
                                  "app/tests.py"])
def test_test_files_named_as_node_and_django_collect_them_are_test_files(repo, name):
    """node --test collects *_test.js, *-test.js and test-*.js wherever they are; Django's
    runner collects an app's tests.py."""
    path, _ = repo
    (path / name).parent.mkdir(parents=True, exist_ok=True)
    (path / name).write_text("assert(1)\n")
    base = commit(path, "a test")
    git(path, "rm", "-q", name, env=_clean_environ())
    assert texts(scan(path, base)) == [f"{name}: test file deleted"]


def test_a_test_renamed_within_tests_to_a_name_pytest_does_not_collect_is_a_finding(repo):
    path, base = repo
    env = _clean_environ()
    git(path, "mv", "tests/test_a.py", "tests/a_checks.py", env=env)
    git(path, "commit", "-qm", "moved", env=env)
    assert texts(scan(path, base)) == [
        "tests/test_a.py: test file renamed away to tests/a_checks.py (no longer collected)"]


VITEST_CONFIG = textwrap.dedent("""\
    export default defineConfig({
      test: {
        coverage: { provider: 'v8', thresholds: {
          lines: 80,
          functions: 75,
        } },
      },
    });
""")


@pytest.mark.parametrize("name, old, new, expected", [
    ("src/app.py", "X = 1\n", "X = 1\n\n\ndef f():  # pragma: no cover\n    return 2\n",
     "src/app.py:4: coverage exclusion added: # pragma: no cover"),
    ("src/calc.js", None, "/* istanbul ignore next */\nfunction f() { return 1; }\n",
     "src/calc.js:1: coverage exclusion added: istanbul ignore"),
], ids=["pragma", "istanbul"])
def test_code_taken_out_of_coverage_is_a_finding(repo, name, old, new, expected):
    """A threshold holds however little is tested when the untested code is excluded."""
    path, base = repo
    if old is None:
        (path / name).write_text(new)
        git(path, "add", "-A", env=_clean_environ())
    else:
        edit(path, name, old, new)
    assert texts(scan(path, base)) == [expected]


def test_coverage_exclusions_moved_reformatted_removed_or_idiomatic_are_no_findings(repo):
    path, _ = repo
    (path / "setup.cfg").write_text("[coverage:run]\nomit = src/a.py, src/b.py\n\n"
                                    "[coverage:report]\nfail_under = 90\nexclude_also =\n"
                                    "    def __repr__\n    raise NotImplementedError\n")
    (path / "src" / "app.py").write_text("X = 1\n\n\ndef g():  # pragma: no cover\n"
                                         "    return 2\n")
    base = commit(path, "exclusions")
    (path / "setup.cfg").write_text("[coverage:run]\nomit =\n    src/b.py\n    src/a.py\n\n"
                                    "[coverage:report]\nfail_under = 90\nexclude_also =\n"
                                    "    def __repr__\n")
    (path / "src" / "app.py").write_text("X = 1\n")
    (path / "src" / "util.py").write_text("def g():  # pragma: no cover\n    return 2\n\n\n"
                                          "if __name__ == '__main__':  # pragma: no cover\n"
                                          "    g()\n")
    (path / "README.md").write_text("Exclude a line with `# pragma: no cover` or "
                                    "`/* istanbul ignore next */`.\n")
    git(path, "add", "-A", env=_clean_environ())
    assert scan(path, base) == []


VITEST_SELECTION = textwrap.dedent("""\
    import { configDefaults, defineConfig } from 'vitest/config'

    export default defineConfig({
      optimizeDeps: { exclude: ['fsevents'] },
      test: {
        include: ['src/**/*.test.ts'],
        exclude: [...configDefaults.exclude],
        coverage: {
          include: ['src/**'],
          exclude: ['src/generated/**'],
        },
      },
    })
""")


JEST_CONFIG = textwrap.dedent("""\
    module.exports = {
      roots: [
        '<rootDir>/src',
        '<rootDir>/test',
      ],
      testMatch: [
        '**/*.test.js',
        '**/*.test.ts',
      ],
      testPathIgnorePatterns: [
        '/node_modules/',
      ],
      collectCoverageFrom: [
        'src/**/*.ts',
      ],
      coveragePathIgnorePatterns: [
        '/node_modules/',
      ],
    };
""")


def test_protected_paths_may_grow_but_not_change(repo):
    path, base = repo
    protect = (".github/**", "src/")
    edit(path, ".github/workflows/ci.yml", "run:", "steps: []\nrun:")        # only an addition
    assert scan(path, base, protect) == []
    edit(path, "src/app.py", "X = 1", "X = 2")
    assert texts(scan(path, base, protect)) == [
        "src/app.py:1: protected file changed (only additions are allowed)"]
    assert scan(path, base, ()) == []                           # not protected: fine


def test_an_unknown_base_gives_no_findings(repo):
    path, _ = repo
    assert scan(path, "", ("**",)) == []


def test_a_skip_like_option_in_application_code_is_not_a_finding(repo):
    path, base = repo
    edit(path, "src/app.py", "X = 1\n", "X = 1\nOPTIONS = { skip: True }\n")
    assert scan(path, base) == []


MAKEFILE = ".PHONY: test\n\ntest:\n\tpython -m pytest -q\n\nlint:\n\truff .\n"
PACKAGE = '{\n  "scripts": {\n    "test": "node --test",\n    "lint": "eslint ."\n  }\n}\n'


@pytest.fixture
def scripted(repo) -> tuple[Path, str]:
    """The repo with a Makefile, package.json scripts and a vite.config.ts committed."""
    path, _ = repo
    (path / "Makefile").write_text(MAKEFILE)
    (path / "web").mkdir()
    (path / "web" / "package.json").write_text(PACKAGE)
    (path / "vite.config.ts").write_text("export default {\n  plugins: [],\n};\n")
    return path, commit(path, "scripts")


@pytest.mark.parametrize("name, old, new, expected", [
    ("Makefile", "\tpython -m pytest -q\n", "\t@exit 0\n\tpython -m pytest -q\n",
     ["Makefile:4: make target test: its rule changed"]),
    ("Makefile", "\tpython -m pytest -q\n", "",
     ["Makefile:4: make target test: its rule changed"]),
    ("Makefile", "\truff .\n", "\truff .\n\ntest:\n\t@true\n",
     ["Makefile:9: make target test: its rule changed"]),
    ("Makefile", "\truff .\n", "\truff check .\n\ntest-e2e:\n\tpytest e2e\n", []),
    ("vite.config.ts", "  plugins: [],\n", "  plugins: [],\n  test: { exclude: ['a.test.ts'] },\n",
     ["vite.config.ts:3: vitest settings changed in a file not restored apart: test: "
      "{ exclude: ['a.test.ts'] },"]),
    ("vite.config.ts", "  plugins: [],\n", "  plugins: [react()],\n", []),
], ids=["make-exit-added", "make-line-removed", "make-rule-again", "new-target-and-other-rule",
        "vite-test-block", "vite-plugins"])
def test_changes_to_what_the_test_command_runs_are_findings(scripted, name, old, new,
                                                              expected):
    """`make test` and vitest in vite.config.* read these, which the second run cannot
    restore apart from the rest of their file. New targets, other rules and other settings
    are no finding."""
    path, base = scripted
    edit(path, name, old, new)
    assert texts(scan(path, base)) == expected

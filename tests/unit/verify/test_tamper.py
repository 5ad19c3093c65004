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
    ("def test_two():\n    assert 2 == 2\n", "", "tests/test_a.py:9: test function test_two "
     "removed"),
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
    ("    assert 2 == 2\n", "    assert 2 == 2\n\n\ndef test_one():\n    pass\n",
     "tests/test_a.py:13: test test_one defined again: the one at line 4 no longer runs"),
    ("    value = 1\n", "    return\n    value = 1\n",
     "tests/test_a.py:5: return added in test_one: the assertions after it no longer run"),
    ("    value = 1\n", "    if True:\n        return\n    value = 1\n",
     "tests/test_a.py:5: return added in test_one: the assertions after it no longer run"),
    ("    value = 1\n", "    if 1: return None  # later\n    value = 1\n",
     "tests/test_a.py:5: return added in test_one: the assertions after it no longer run"),
    ("def test_two", "@pytest.fixture\ndef test_two",
     "tests/test_a.py:9: skip added: @pytest.fixture on test_two (a fixture is not collected)"),
    ("def test_one", "@pytest.fixture(scope='module')\n@other\nasync def test_one",
     "tests/test_a.py:4: skip added: @pytest.fixture on test_one (a fixture is not collected)"),
    ("import pytest\n", "import pytest\n__test__ = False\n",
     "tests/test_a.py:2: skip added: __test__ = False"),
    ("    value = 1\n", "    with open(__file__) as f:\n        return\n    value = 1\n",
     "tests/test_a.py:6: return added in test_one: the assertions after it no longer run"),
    ("    value = 1\n    assert value == 1\n", "    value = 1\n    try:\n"
     "        with mock.patch('os.getcwd'):\n            if True:\n                return\n"
     "            assert value == 1\n    finally:\n        pass\n",
     "tests/test_a.py:8: return added in test_one: the assertions after it no longer run"),
], ids=["assertion", "function", "mark-skip", "pytest-skip", "xfail", "pytestmark",
        "SkipTest", "expectedFailure", "if-False", "del", "redefined", "early-return",
        "return-under-if-True", "return-under-if-1", "fixture", "fixture-with-arguments",
        "__test__", "return-in-with", "return-in-try-and-with"])
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
    ("  assert.strictEqual", "  return;\n  assert.strictEqual",
     "test/a.test.js:5: return added in adds: the assertions after it no longer run"),
    ("  assert.strictEqual", "  if (true) {\n    return;\n  }\n  assert.strictEqual",
     "test/a.test.js:5: return added in adds: the assertions after it no longer run"),
    ("test('adds'", "test.failing('adds'", "test/a.test.js:4: skip added: test.failing"),
    ("test('adds'", "test.fails('adds'", "test/a.test.js:4: skip added: test.fails"),
    ("test('adds'", "test.concurrent.skip('adds'",
     "test/a.test.js:4: skip added: test.concurrent.skip"),
], ids=["skip", "only", "skip-option", "assertion", "skip-option-not-first", "t-skip",
        "if-false", "early-return", "return-under-if-true", "jest-failing", "vitest-fails",
        "concurrent-skip"])
def test_weakened_node_tests_are_found(repo, old, new, expected):
    path, base = repo
    edit(path, "test/a.test.js", old, new)
    assert any(t.startswith(expected) for t in texts(scan(path, base)))


def test_moved_tests_and_returns_that_leave_assertions_running_are_not_findings(repo):
    """A test moved within its file is defined once; a return under a condition (also in a
    `with` block), in a loop, in a helper nested in a test or after the last assertion
    switches nothing off for good."""
    path, base = repo
    one = "def test_one():\n    value = 1\n    assert value == 1\n"
    text = PY_TEST.replace(one, "") + textwrap.dedent("""\


        def test_one():
            def helper(x):
                return
                assert x
            value = 1
            if value > 1:
                return
            with open(__file__) as f:
                if f.closed:
                    return
                for line in f:
                    return
                with_helper = lambda: 1
            with pytest.raises(ValueError):
                return
            assert value == 1
            return


        class TestThree:
            def test_three(self):
                assert 3 == 3
        """)
    (path / "tests" / "test_a.py").write_text(text)
    assert scan(path, base) == []


def test_returns_in_node_tests_that_leave_assertions_running_are_not_findings(repo):
    """A return in a helper nested in a test, under a real condition or after the last
    assertion, and a constant condition without a return, switch nothing off."""
    path, base = repo
    edit(path, "test/a.test.js", "  assert.strictEqual(1 + 1, 2);\n", textwrap.indent(
        textwrap.dedent("""\
            const check = (x) => {
              return;
              assert.ok(x);
            };
            if (process.env.SLOW) {
              return;
            }
            if (true) {
              check(1);
            }
            assert.strictEqual(1 + 1, 2);
            return;
            """), "  "))
    assert scan(path, base) == []


@pytest.mark.parametrize("name, old, new, expected", [
    ("tests/test_a.py", "    value = 1\n",
     "    monkeypatch.setattr(app, 'one', lambda: 1)\n    value = app.one()\n",
     "tests/test_a.py:7: one replaced in test_one: its assertions check the replacement, not "
     "the code"),
    ("tests/test_a.py", "def test_two():\n    assert 2 == 2\n",
     "def test_two():\n    with mock.patch('src.app.double', return_value=2):\n"
     "        assert app.double(1) == 2\n",
     "tests/test_a.py:12: double replaced in test_two"),
    ("tests/test_a.py", "def test_two():\n",
     "@mock.patch.object(Calc, 'two', return_value=2)\ndef test_two(two):\n"
     "    assert Calc().two() == 2\n",
     "tests/test_a.py:11: two replaced in test_two"),
    ("tests/test_a.py", "    value = 1\n",
     "    mocker.patch.object(Calc, 'one', return_value=1)\n    calc = Calc()\n"
     "    assert calc.one() == 1\n    value = 1\n",
     "tests/test_a.py:7: one replaced in test_one"),
    ("test/a.test.js", "  assert.strictEqual",
     "  jest.spyOn(math, 'sum').mockReturnValue(2);\n  assert.strictEqual(math.sum(1, 1), 2);\n"
     "  assert.strictEqual",
     "test/a.test.js:5: sum replaced in adds"),
    ("test/a.test.js", "  assert.strictEqual",
     "  math.sum = vi.fn(() => 2);\n  expect(math.sum(1, 1)).toBe(2);\n  assert.strictEqual",
     "test/a.test.js:5: sum replaced in adds"),
    # a name the test file imports, replaced where the test looks it up
    ("tests/test_a.py", "    value = 1\n",
     "    monkeypatch.setattr(sys.modules[__name__], 'one', lambda: 1)\n    value = one()\n",
     "tests/test_a.py:7: one replaced in test_one"),
    ("tests/test_a.py", "    value = 1\n", "    one = lambda: 1\n    value = one()\n",
     "tests/test_a.py:7: one replaced in test_one"),
    ("tests/test_a.py", "    value = 1\n", "    def one():\n        return 1\n\n"
     "    value = one()\n", "tests/test_a.py:7: one replaced in test_one"),
], ids=["monkeypatch", "patch-in-with", "patch-object-decorator", "instance", "jest-spyon",
        "assigned-vi-fn", "module-of-the-test", "name-bound-again", "nested-def"])
def test_a_test_made_to_check_a_replacement_of_the_code_is_found(repo, name, old, new,
                                                                 expected):
    """A test that replaces a function and then asserts on that function's result passes
    whatever the code does (the Python test file imports `one` by name first)."""
    path, base = repo
    if name == "tests/test_a.py":
        edit(path, name, "import pytest\n", "import pytest\n\nfrom src.app import one\n")
        base = commit(path, "the test imports one")
    edit(path, name, old, new)
    found = texts(scan(path, base))
    assert any(t.startswith(expected) for t in found), found


MATH_FACTORY = ("jest.mock('../src/math', () => ({\n  ...jest.requireActual('../src/math'),\n"
                "  sum: jest.fn(() => 2),\n}));\n")


@pytest.mark.parametrize("imports, added, new, expected", [
    # the module the test imports, replaced by a mock factory of the file (jest hoists it)
    ("const { sum } = require('../src/math');\n", MATH_FACTORY,
     "  assert.strictEqual(sum(1, 1), 2);", "test/a.test.js:6: sum replaced in adds"),
    ("import { sum as add } from '../src/math.js';\n",
     "vi.mock('../src/math', () => ({ sum: vi.fn(() => 2) }));\n",
     "  expect(add(1, 1)).toBe(2);", "test/a.test.js:4: add replaced in adds"),
    ("import * as math from '../src/math';\n", MATH_FACTORY.replace("jest.", "vi."),
     "  expect(math.sum(1, 1)).toBe(2);", "test/a.test.js:6: sum replaced in adds"),
    # an automocked module's function given a result in the test
    ("import { sum } from '../src/math';\njest.mock('../src/math');\n", "",
     "  sum.mockReturnValue(2);\n  expect(sum(1, 1)).toBe(2);",
     "test/a.test.js:7: sum replaced in adds"),
    ("import { sum } from '../src/math';\nvi.mock('../src/math');\n", "",
     "  vi.mocked(sum).mockReturnValueOnce(2);\n  expect(sum(1, 1)).toBe(2);",
     "test/a.test.js:7: sum replaced in adds"),
], ids=["jest-mock-factory", "vi-mock-factory-one-line", "namespace-import", "automock",
        "vi-mocked"])
def test_a_node_test_made_to_check_a_mocked_module_s_function_is_found(repo, imports, added,
                                                                      new, expected):
    """The test file imported the module before; the change mocks its function (a module
    factory, or a result given to an automock) and asserts on what that function returns."""
    path, _ = repo
    header = "const assert = require('node:assert');\n"
    edit(path, "test/a.test.js", header, header + imports)
    base = commit(path, "the test imports the module")
    edit(path, "test/a.test.js", header + imports, header + imports + added)
    edit(path, "test/a.test.js", "  assert.strictEqual(1 + 1, 2);",
         new + "\n  assert.strictEqual(1 + 1, 2);")
    found = texts(scan(path, base))
    assert any(t.startswith(expected) for t in found), found


@pytest.mark.parametrize("imports, added, new", [
    # the code under test (cart) is asserted on; its dependency (math) is mocked
    ("const { sum } = require('../src/math');\nconst { total } = require('../src/cart');\n",
     MATH_FACTORY, "  assert.strictEqual(total([1, 1]), 2);"),
    # the name the assertion calls is imported from another module than the one mocked
    ("import { sum } from '../src/real-math';\n", MATH_FACTORY,
     "  expect(sum(1, 1)).toBe(2);"),
    # a mock the test made itself, given a result, is no code of the project
    ("", "", "  const cb = jest.fn();\n  cb.mockReturnValue(3);\n  expect(cb()).toBe(3);"),
    # a mocked dependency's result, the code under test asserted on
    ("import { sum } from '../src/math';\nimport { total } from '../src/cart';\n"
     "jest.mock('../src/math');\n", "",
     "  sum.mockReturnValue(2);\n  expect(total([1, 1])).toBe(2);\n"
     "  expect(sum).toHaveBeenCalledWith(1, 1);"),
    # a dependency's function of the same name as the code under test's
    ("import * as tc from '@actions/tool-cache';\nimport { find } from '../src/install';\n"
     "jest.mock('@actions/tool-cache');\n", "",
     "  (tc.find as jest.Mock).mockReturnValue('/opt');\n  expect(find('3.12')).toBe('/opt');"),
    # a handle on the mocked module's function, checked for the calls the code made
    ("import * as github from '@actions/github';\nimport { download } from '../src/dl';\n",
     "jest.mock('@actions/github', () => ({\n  getOctokit: jest.fn(),\n}));\n",
     "  const octokit = github.getOctokit('token');\n  download();\n"
     "  expect(octokit).toHaveBeenCalledWith('x');"),
], ids=["dependency-factory", "other-module", "own-mock", "dependency-automock",
        "same-name-elsewhere", "calls-checked"])
def test_a_node_test_mocking_a_dependency_is_no_finding(repo, imports, added, new):
    path, base = repo
    header = "const assert = require('node:assert');\n"
    if imports:
        edit(path, "test/a.test.js", header, header + imports)
        base = commit(path, "the test imports the modules")
    edit(path, "test/a.test.js", header + imports, header + imports + added)
    edit(path, "test/a.test.js", "  assert.strictEqual(1 + 1, 2);",
         new + "\n  assert.strictEqual(1 + 1, 2);")
    assert scan(path, base) == []


@pytest.mark.parametrize("imports, new", [
    ("import src.app as a\n", "    monkeypatch.setattr('src.app.one', lambda: 1)\n"
                              "    assert a.one() == 1\n"),
    ("from src import app as a\n", "    mocker.patch('src.app.one', return_value=1)\n"
                                   "    value = a.one()\n    assert value == 1\n"),
    ("from src.app import (\n    zero,\n    one,\n)\n", "    one = lambda: 1\n"
                                                        "    assert one() == 1\n"),
], ids=["module-alias", "from-import-alias", "multi-line-import"])
def test_a_python_test_replacing_what_it_imports_under_another_name_is_found(repo, imports,
                                                                             new):
    path, _ = repo
    edit(path, "tests/test_a.py", "import pytest\n", "import pytest\n" + imports)
    base = commit(path, "the test imports the module")
    edit(path, "tests/test_a.py", "    value = 1\n", new + "    value = 1\n")
    found = texts(scan(path, base))
    assert any(" one replaced in test_one: " in t for t in found), found


def test_replacing_a_dependency_or_spying_through_is_no_finding(repo):
    """Replacing what the code under test calls, a spy that calls the real function, a mock's
    own checks, a test client's `patch`, a replacement after the last assertion, and one on a
    module the test imported the function from by name (Python keeps the original) leave the
    assertions checking the code."""
    path, base = repo
    edit(path, "tests/test_a.py", "import pytest\n", "import pytest\n\nfrom src.app import one\n")
    base = commit(path, "the test imports one")
    edit(path, "tests/test_a.py", "    value = 1\n", textwrap.indent(textwrap.dedent("""\
        monkeypatch.setattr(app, "one", lambda: 2)
        assert one() == 1
        monkeypatch.setattr(subprocess, "run", fake_run)
        mocker.patch("src.app.fetch", return_value=1)
        assert cli.run(["x"]) == 0
        code = cli.run(["y"])
        assert code == 0
        api.get.assert_called_once_with("x")
        client.patch("double")
        assert double(1) == 2
        value = 1
        """), "    "))
    edit(path, "tests/test_a.py", "    assert 2 == 2\n",
         "    assert 2 == 2\n    monkeypatch.setattr(calc, 'two', lambda: 2)\n")
    edit(path, "test/a.test.js", "  assert.strictEqual(1 + 1, 2);\n",
         "  jest.spyOn(math, 'sum');\n  assert.strictEqual(math.sum(1, 1), 2);\n"
         "  assert.strictEqual(1 + 1, 2);\n")
    assert scan(path, base) == []


@pytest.mark.parametrize("old, new, expected", [
    ("\tif Add", "\tif true {\n\t\treturn\n\t}\n\tif Add",
     "calc_test.go:6: return added in TestAdd: the assertions after it no longer run"),
    ("package calc", "//go:build ignore\n\npackage calc",
     "calc_test.go:1: skip added: //go:build ignore"),
    ("package calc", "// +build ignore\n\npackage calc",
     "calc_test.go:1: skip added: // +build ignore"),
], ids=["early-return", "build-ignore", "old-build-ignore"])
def test_a_go_test_switched_off_is_a_finding(repo, old, new, expected):
    path, _ = repo
    (path / "calc_test.go").write_text('package calc\n\nimport "testing"\n\n'
                                       'func TestAdd(t *testing.T) {\n\tif Add(1, 1) != 2 {\n'
                                       '\t\tt.Errorf("wrong")\n\t}\n}\n')
    base = commit(path, "go")
    edit(path, "calc_test.go", old, new)
    assert texts(scan(path, base)) == [expected]


@pytest.mark.parametrize("name, old, new, expected", [
    ("tests/test_a.py", "def test_two():", "def test_two_numbers_are_equal():", []),
    ("tests/test_a.py", "def test_two():", "async def test_two_later():", []),
    ("test/a.test.js", "test('adds',", "test('adds two numbers',", []),
    ("tests/test_a.py", "def test_two():", "def check_two():",
     ["tests/test_a.py:9: test function test_two removed"]),
    ("tests/test_a.py", "def test_two():\n", "def helper():\n    pass\n\n\ndef test_new():\n",
     []),
    ("tests/test_a.py", "def test_two():\n", "def test_new():\n    pass\n\n\ndef helper():\n",
     ["tests/test_a.py:9: test function test_two removed"]),
    ("tests/test_a.py", "def test_two():\n    assert 2 == 2\n", "def test_new():\n    pass\n",
     ["tests/test_a.py:9: test function test_two removed",
      "tests/test_a.py:10: assertion removed or changed: assert 2 == 2"]),
], ids=["python", "python-async", "node", "renamed-out-of-collection", "helper-above",
        "body-given-to-a-helper", "body-replaced"])
def test_a_test_renamed_in_place_is_no_finding_unless_its_body_no_longer_runs_as_a_test(
        repo, name, old, new, expected):
    """Renaming a test where it stands keeps its body running; a name the runner does not
    collect, a helper put between the new name and the old body, or a new body, does not."""
    path, base = repo
    edit(path, name, old, new)
    assert texts(scan(path, base)) == expected


TWO = "def test_two():\n    assert 2 == 2\n"


@pytest.mark.parametrize("dest, text, expected", [
    ("tests/test_b.py", TWO, []),
    ("tests/test_b.py", "import pytest\n\n\n@pytest.mark.skip\n" + TWO,
     ["tests/test_b.py:4: skip added: @pytest.mark.skip"]),
    ("tests/test_b.py", "def test_two():\n    return\n    assert 2 == 2\n",
     ["tests/test_b.py:2: return added in test_two: the assertions after it no longer run"]),
    ("tests/test_b.py", "def test_two():\n    assert 2 == 3\n",
     ["tests/test_a.py:10: assertion removed or changed: assert 2 == 2"]),
    ("tests/helpers.py", TWO, ["tests/test_a.py:9: test function test_two removed",
                               "tests/test_a.py:10: assertion removed or changed: assert 2 == 2"]),
], ids=["moved", "moved-and-skipped", "moved-and-returned", "moved-and-changed",
        "moved-out-of-collection"])
def test_a_test_moved_to_another_collected_test_file_is_no_finding(repo, dest, text, expected):
    """A test moved to another file still runs: no finding, unless it moved to a file no
    runner collects, or was changed, skipped or cut short on the way."""
    path, base = repo
    edit(path, "tests/test_a.py", "\n\n" + TWO, "")
    (path / dest).write_text(text)
    git(path, "add", "-A", env=_clean_environ())
    assert texts(scan(path, base)) == expected


@pytest.mark.parametrize("dest, text, expected", [
    ("tests/test_b.py", "def test_two_is_two():\n    assert 2 == 2\n", []),
    ("tests/test_b.py", "import pytest\n\n\n@pytest.mark.skip\ndef test_two_is_two():\n"
                        "    assert 2 == 2\n",
     ["tests/test_b.py:4: skip added: @pytest.mark.skip"]),
    ("tests/test_b.py", "def test_two_is_two():\n    pass\n\n\ndef helper():\n"
                        "    assert 2 == 2\n",
     ["tests/test_a.py:9: test function test_two removed"]),
    ("tests/helpers.py", "def test_two_is_two():\n    assert 2 == 2\n",
     ["tests/test_a.py:9: test function test_two removed",
      "tests/test_a.py:10: assertion removed or changed: assert 2 == 2"]),
], ids=["python", "moved-renamed-and-skipped", "assertion-given-to-a-helper",
        "out-of-collection"])
def test_a_test_moved_to_another_file_under_a_new_name_is_no_finding(repo, dest, text,
                                                                     expected):
    """Moved and renamed at once: its assertions arrive in the body of a new test of a file
    the runner collects. In a helper, or in a file no runner collects, it is removed; what
    switches it off where it arrived is a finding."""
    path, base = repo
    edit(path, "tests/test_a.py", "\n\n" + TWO, "")
    (path / dest).parent.mkdir(exist_ok=True)
    (path / dest).write_text(text)
    git(path, "add", "-A", env=_clean_environ())
    assert texts(scan(path, base)) == expected


def test_a_node_test_moved_to_another_file_under_a_new_name_is_no_finding(repo):
    path, base = repo
    (path / "test" / "a.test.js").write_text(JS_TEST.split("test('adds'")[0])
    (path / "test" / "sum.test.js").write_text(JS_TEST.replace("test('adds'",
                                                               "test('adds two numbers'"))
    git(path, "add", "-A", env=_clean_environ())
    assert scan(path, base) == []


def test_a_test_file_split_into_others_is_no_finding_unless_something_stayed_behind(repo):
    path, base = repo
    env = _clean_environ()
    one, two = PY_TEST.split("\n\n\n")[1], TWO
    (path / "tests" / "test_one.py").write_text(one)
    (path / "tests" / "test_two.py").write_text(two)
    (path / "tests" / "test_a.py").unlink()
    git(path, "add", "-A", env=env)
    assert scan(path, base) == []
    (path / "tests" / "test_two.py").unlink()
    git(path, "add", "-A", env=env)
    assert texts(scan(path, base)) == ["tests/test_a.py: test file deleted"]


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


@pytest.mark.parametrize("name, old, new, expected", [
    ("setup.cfg", "fail_under = 90", "fail_under = 50",
     "setup.cfg:2: fail_under lowered from 90 to 50"),
    ("setup.cfg", "fail_under = 90\n", "", "setup.cfg:2: fail_under 90 removed"),
    (".github/workflows/ci.yml", "85", "0", ".github/workflows/ci.yml:1: cov_fail_under "
     "lowered from 85 to 0"),
    ("package.json", '"lines": 80', '"lines": 10', "package.json:5: coverageThreshold.lines "
     "lowered from 80 to 10"),
    ("setup.cfg", "fail_under = 90", "# fail_under = 90", "setup.cfg:2: fail_under 90 removed"),
    ("setup.cfg", "fail_under = 90", "; fail_under = 90", "setup.cfg:2: fail_under 90 removed"),
    (".github/workflows/ci.yml", "pytest --cov", "pytest  # --cov",
     ".github/workflows/ci.yml:1: cov_fail_under 85 removed"),
    ("package.json", '"lines": 80', '// "lines": 80', "package.json:5: coverageThreshold.lines "
     "80 removed"),
    ("vitest.config.ts", "lines: 80", "lines: 40",
     "vitest.config.ts:4: coverage.thresholds.lines lowered from 80 to 40"),
    ("vitest.config.ts", "      functions: 75,\n", "",
     "vitest.config.ts:5: coverage.thresholds.functions 75 removed"),
], ids=["fail_under", "fail_under-removed", "cov-fail-under", "jest", "commented-out",
        "ini-comment", "trailing-comment", "js-comment", "vitest", "vitest-removed"])
def test_lowered_thresholds_are_findings(repo, name, old, new, expected):
    path, base = repo
    if name == "vitest.config.ts":
        (path / name).write_text(VITEST_CONFIG)
        base = commit(path, "vitest's thresholds")
    edit(path, name, old, new)
    assert expected in texts(scan(path, base))


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


def test_raising_a_threshold_is_not_a_finding(repo):
    path, base = repo
    edit(path, "setup.cfg", "fail_under = 90", "fail_under = 95")
    assert scan(path, base) == []


@pytest.mark.parametrize("name, old, new, expected", [
    ("src/app.py", "X = 1\n", "X = 1\n\n\ndef f():  # pragma: no cover\n    return 2\n",
     "src/app.py:4: coverage exclusion added: # pragma: no cover"),
    ("src/calc.js", None, "/* istanbul ignore next */\nfunction f() { return 1; }\n",
     "src/calc.js:1: coverage exclusion added: istanbul ignore"),
    ("setup.cfg", "[coverage:report]\n", "[coverage:run]\nomit =\n    src/app.py\n\n"
     "[coverage:report]\n", "setup.cfg:3: coverage exclusion added: omit src/app.py"),
    ("setup.cfg", "fail_under = 90\n", "fail_under = 90\nexclude_also =\n    def f\n",
     "setup.cfg:4: coverage exclusion added: exclude_also def f"),
    ("package.json", '"jest": {\n', '"jest": {\n    "coveragePathIgnorePatterns": ["/src/"],\n',
     "package.json:3: coverage exclusion added: coveragePathIgnorePatterns /src/"),
    ("pyproject.toml", None, '[tool.coverage.run]\nomit = [\n  "src/*",\n]\n',
     "pyproject.toml:3: coverage exclusion added: omit src/*"),
    (".nycrc.json", None, '{\n  "exclude": ["src/app.js"]\n}\n',
     ".nycrc.json:2: coverage exclusion added: exclude src/app.js"),
], ids=["pragma", "istanbul", "omit", "exclude_also", "jest", "pyproject", "nyc"])
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


def config_repo(repo, config: str, text: str, files: tuple[str, ...]) -> tuple[Path, str]:
    """The repo with a runner's configuration and the files it selects from committed:
    (path, base)."""
    path, _ = repo
    (path / config).write_text(text)
    for name in files:
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text("export {}\n")
    return path, commit(path, config)


@pytest.fixture
def vitest_repo(repo) -> tuple[Path, str]:
    """The repo with a vitest configuration and tests under src/ committed: (path, base)."""
    return config_repo(repo, "vitest.config.ts", VITEST_SELECTION,
                       ("src/hard.test.ts", "src/easy/sum.test.ts", "src/hard.ts"))


@pytest.mark.parametrize("old, new, expected", [
    ("[...configDefaults.exclude]", "[...configDefaults.exclude, 'src/hard.test.ts']",
     "vitest.config.ts:7: test selection or outcome changed: test.exclude src/hard.test.ts "
     "(leaves out src/hard.test.ts)"),
    ("    exclude: [...configDefaults.exclude],\n", "    exclude: [\n"
     "      ...configDefaults.exclude,\n      '**/hard*',\n    ],\n",
     "vitest.config.ts:9: test selection or outcome changed: test.exclude **/hard* "
     "(leaves out src/hard.test.ts)"),
    ("'src/**/*.test.ts'", "'src/easy/**/*.test.ts'", "vitest.config.ts:6: test selection or "
     "outcome changed: test.include src/**/*.test.ts removed (leaves out src/hard.test.ts)"),
    ("['src/**/*.test.ts']", "easyTests", "vitest.config.ts:6: test selection or outcome "
     "changed: test.include src/**/*.test.ts removed"),
    ("  test: {\n", "  test: {\n    dir: 'src/easy',\n",
     "vitest.config.ts:6: test selection or outcome changed: test.dir src/easy"),
    ("  test: {\n", "  test: {\n    typecheck: { enabled: true, exclude: ['src/hard*'] },\n",
     "vitest.config.ts:6: test selection or outcome changed: test.typecheck.exclude src/hard*"),
    ("['src/generated/**']", "['src/generated/**', 'src/hard.ts']",
     "vitest.config.ts:10: coverage exclusion added: coverage.exclude src/hard.ts"),
    ("['src/**']", "['src/easy/**']",
     "vitest.config.ts:9: coverage exclusion added: coverage.include src/** removed"),
], ids=["exclude", "exclude-own-line", "include-narrowed", "include-from-code", "dir-added",
        "typecheck-exclude", "coverage-exclude", "coverage-include-narrowed"])
def test_vitest_tests_left_out_by_its_configuration_are_findings(vitest_repo, old, new,
                                                                expected):
    """vitest's `test` block selects the test files that run (include, exclude, dir), its
    `coverage` block what coverage measures: an exclude added under `test` switches tests
    off, it does not take code out of coverage."""
    path, base = vitest_repo
    edit(path, "vitest.config.ts", old, new)
    assert texts(scan(path, base)) == [expected]


@pytest.mark.parametrize("old, new", [
    ("'src/**/*.test.ts'", "'src/**/*.test.ts', 'tests/**/*.test.ts'"),
    ("'src/**/*.test.ts'", "'src/**/*.{test,spec}.ts'"),
    ("'src/**/*.test.ts'", "'./src/**/*.test.[jt]s?(x)'"),
    ("'src/**/*.test.ts'", "'**/*.test.ts'"),
    ("    include: ['src/**/*.test.ts'],\n", "    include: [\n      'src/**/*.test.ts',\n"
     "    ],\n"),
    ("  optimizeDeps: { exclude: ['fsevents'] },\n",
     "  optimizeDeps: {\n    exclude: ['fsevents', 'lightningcss'],\n  },\n"),
    ("  test: {\n", "  test: {\n    server: { deps: { inline: ['redux'] } },\n"
     "    benchmark: { include: ['bench/**'], exclude: ['src/**'] },\n"),
    ("['src/generated/**']", "[]"),
    ("['src/**']", "['src/**', 'lib/**']"),
    ("      exclude: ['src/generated/**'],\n", ""),
    ("    include: ['src/**/*.test.ts'],\n    exclude: [...configDefaults.exclude],\n",
     "    exclude: [...configDefaults.exclude],\n    include: ['src/**/*.test.ts'],\n"),
    ("    include: ['src/**/*.test.ts'],\n", ""),
    ("['src/generated/**']", "['src/generated/**', 'src/**/*.test.ts', '**/*.d.ts']"),
    ("// comment", ""),
], ids=["include-grows", "include-widened", "include-widened-extglob", "include-anywhere",
        "include-reformatted", "optimize-deps", "other-blocks", "coverage-exclude-removed",
        "coverage-include-grows", "coverage-exclude-line-removed", "settings-moved",
        "include-left-to-the-default", "coverage-exclude-tests-and-declarations",
        "commented-out"])
def test_vitest_selections_widened_or_moved_and_other_settings_are_no_findings(vitest_repo,
                                                                              old, new):
    path, base = vitest_repo
    if old == "// comment":
        (path / "vitest.config.ts").write_text(VITEST_SELECTION.replace(
            "  test: {", "  // test: { exclude: ['src/hard.test.ts'] }\n  test: {"))
    else:
        edit(path, "vitest.config.ts", old, new)
    assert scan(path, base) == []


def test_a_vitest_projects_list_made_shorter_is_a_finding(vitest_repo):
    """`projects` names the configurations vitest runs: one dropped drops its tests, one added
    (here an inline project) is no finding."""
    path, _ = vitest_repo
    edit(path, "vitest.config.ts", "  test: {\n", "  test: {\n    projects: ['packages/*'],\n")
    base = commit(path, "projects")
    edit(path, "vitest.config.ts", "['packages/*']", "['packages/*', { test: { name: 'unit' } }]")
    assert scan(path, base) == []
    edit(path, "vitest.config.ts", "'packages/*',", "'packages/easy',")
    assert texts(scan(path, base)) == ["vitest.config.ts:6: test selection or outcome changed: "
                                       "test.projects packages/* removed"]


def test_vitest_excluding_tests_the_diff_adds_is_no_finding(vitest_repo):
    """Playwright's end-to-end tests, new in the diff, kept out of vitest's run: no test of
    the start commit is switched off. Excluding ones that were there is a finding."""
    path, base = vitest_repo
    (path / "e2e").mkdir()
    (path / "e2e" / "login.spec.ts").write_text("import { test } from '@playwright/test'\n")
    edit(path, "vitest.config.ts", "[...configDefaults.exclude]",
         "[...configDefaults.exclude, 'e2e/**']")
    git(path, "add", "-A", env=_clean_environ())
    assert scan(path, base) == []
    base = commit(path, "playwright")
    edit(path, "vitest.config.ts", "'e2e/**'", "'e2e/**', 'src/easy/**'")
    assert texts(scan(path, base)) == [
        "vitest.config.ts:7: test selection or outcome changed: test.exclude src/easy/** "
        "(leaves out src/easy/sum.test.ts)"]


def test_a_vitest_dir_widened_or_removed_is_no_finding(vitest_repo):
    """`dir` is where vitest looks for test files: a parent of the old one, or none (the
    root), looks in more places."""
    path, _ = vitest_repo
    edit(path, "vitest.config.ts", "  test: {\n", "  test: {\n    dir: './src/easy',\n")
    base = commit(path, "dir")
    edit(path, "vitest.config.ts", "'./src/easy'", "path.join(import.meta.dirname, 'src')")
    assert scan(path, base) == []
    edit(path, "vitest.config.ts", "    dir: path.join(import.meta.dirname, 'src'),\n", "")
    assert scan(path, base) == []
    edit(path, "vitest.config.ts", "  test: {\n", "  test: {\n    dir: 'lib',\n")
    assert texts(scan(path, base)) == [
        "vitest.config.ts:6: test selection or outcome changed: test.dir lib"]


def test_a_vitest_dir_that_holds_every_test_of_its_folder_is_no_finding(vitest_repo):
    path, _ = vitest_repo
    for name, text in [("web/tests/app.test.ts", "export {}\n"), ("web/scripts/build.ts", ""),
                       ("web/vitest.config.ts", "export default {\n  test: {\n  },\n}\n")]:
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    base = commit(path, "web")
    edit(path, "web/vitest.config.ts", "  test: {\n", "  test: {\n    dir: 'tests',\n")
    assert scan(path, base) == []
    edit(path, "web/vitest.config.ts", "'tests'", "'tests/unit'")
    assert texts(scan(path, base)) == [
        "web/vitest.config.ts:3: test selection or outcome changed: test.dir tests/unit"]


def test_a_new_vitest_project_excluding_existing_tests_is_a_finding(vitest_repo):
    """A config the session adds is read as well (its `test` in a `projects` list), even
    left untracked."""
    path, _ = vitest_repo
    (path / "web" / "src").mkdir(parents=True)
    (path / "web" / "src" / "hard.test.ts").write_text("export {}\n")
    base = commit(path, "web")
    (path / "web" / "vite.config.mts").write_text(
        "export default defineConfig(({ mode }) => ({\n  test: {\n    projects: [{\n"
        "      extends: true,\n      test: { name: 'unit', exclude: ['src/hard.test.ts'] },\n"
        "    }],\n  },\n}))\n")
    assert texts(scan(path, base)) == ["web/vite.config.mts:5: test selection or outcome "
                                       "changed: test.exclude src/hard.test.ts "
                                       "(leaves out web/src/hard.test.ts)"]


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


@pytest.fixture
def jest_repo(repo) -> tuple[Path, str]:
    """The repo with a jest configuration of multi-line lists and tests under src/ committed:
    (path, base)."""
    return config_repo(repo, "jest.config.js", JEST_CONFIG,
                       ("src/hard/x.test.ts", "src/easy/sum.test.ts", "src/hard.ts"))


@pytest.mark.parametrize("name, old, new, expected", [
    ("jest.config.js", "    '/node_modules/',\n  ],\n  collectCoverageFrom",
     "    '/node_modules/',\n    '/src/hard/',\n  ],\n  collectCoverageFrom",
     "jest.config.js:12: test selection or outcome changed: testPathIgnorePatterns /src/hard/"),
    ("jest.config.js", "  collectCoverageFrom: [\n", "  modulePathIgnorePatterns: [\n"
     "    '<rootDir>/src/hard',\n  ],\n  collectCoverageFrom: [\n",
     "jest.config.js:14: test selection or outcome changed: modulePathIgnorePatterns "
     "<rootDir>/src/hard"),
    ("jest.config.js", "    '**/*.test.ts',\n", "",
     "jest.config.js:8: test selection or outcome changed: testMatch **/*.test.ts removed "
     "(leaves out src/easy/sum.test.ts)"),
    ("jest.config.js", "'**/*.test.ts'", "'src/easy/**/*.test.ts'",
     "jest.config.js:8: test selection or outcome changed: testMatch **/*.test.ts removed "
     "(leaves out src/hard/x.test.ts)"),
    ("jest.config.js", "    '**/*.test.ts',\n", "    '**/*.test.ts',\n    '!**/hard/**',\n",
     "jest.config.js:9: test selection or outcome changed: testMatch !**/hard/**"),
    ("jest.config.js", "    '<rootDir>/src',\n", "",
     "jest.config.js:3: test selection or outcome changed: roots <rootDir>/src removed"),
    ("jest.config.js", "'<rootDir>/src'", "'<rootDir>/src/easy'",
     "jest.config.js:3: test selection or outcome changed: roots <rootDir>/src removed"),
    ("package.json", '"jest": {\n', '"jest": {\n    "testRegex": "easy",\n',
     "package.json:3: test selection or outcome changed: testRegex easy "
     "(leaves out src/hard/x.test.ts)"),
    ("package.json", '"jest": {\n',
     '"jest": {\n    "testPathIgnorePatterns": ["/node_modules/", "/test/"],\n',
     "package.json:3: test selection or outcome changed: testPathIgnorePatterns /test/"),
    ("jest.config.js", "    '/node_modules/',\n  ],\n};", "    '/node_modules/',\n"
     "    '/src/hard',\n  ],\n};",
     "jest.config.js:18: coverage exclusion added: coveragePathIgnorePatterns /src/hard"),
    ("jest.config.js", "    'src/**/*.ts',\n", "    'src/**/*.ts',\n    '!src/hard.ts',\n",
     "jest.config.js:15: coverage exclusion added: collectCoverageFrom !src/hard.ts"),
], ids=["ignore-own-line", "module-path-ignore-block", "test-match-line-removed",
        "test-match-narrowed", "test-match-negation", "roots-line-removed", "roots-narrowed",
        "test-regex", "ignore-one-line-once", "coverage-ignore-own-line",
        "collect-coverage-negation"])
def test_jest_tests_left_out_by_its_configuration_are_findings(jest_repo, name, old, new,
                                                              expected):
    """jest's settings are read by block, in jest.config.* and package.json's "jest" object:
    an entry added on a line of its own, or a line of a list removed, changes which tests run
    or what coverage measures as much as a line that names the setting; reported once."""
    path, base = jest_repo
    edit(path, name, old, new)
    assert texts(scan(path, base)) == [expected]


@pytest.mark.parametrize("old, new", [
    ("    '/node_modules/',\n  ],\n  collectCoverageFrom",
     "    '/node_modules/',\n    '/dist/',\n    '<rootDir>/build/',\n  ],\n  collectCoverageFrom"),
    ("    '<rootDir>/test',\n", "    '<rootDir>/test',\n    '<rootDir>/lib',\n"),
    ("'**/*.test.ts'", "'**/*.test.{ts,tsx}'"),
    ("  testPathIgnorePatterns: [\n    '/node_modules/',\n  ],\n",
     "  testPathIgnorePatterns: ['/node_modules/'],\n"),
    ("    '<rootDir>/src',\n    '<rootDir>/test',\n",
     "    '<rootDir>/test',\n    '<rootDir>/src',\n"),
    ("  roots: [\n    '<rootDir>/src',\n    '<rootDir>/test',\n  ],\n", ""),
    ("    '/node_modules/',\n  ],\n};", "    '/node_modules/',\n    '/test/',\n  ],\n};"),
    ("    'src/**/*.ts',\n", "    'src/**/*.ts',\n    'lib/**/*.ts',\n    '!src/**/*.d.ts',\n"),
    ("  collectCoverageFrom: [\n    'src/**/*.ts',\n  ],\n", ""),
], ids=["ignore-build-output", "root-added", "test-match-widened", "list-reformatted",
        "entries-moved", "roots-left-to-the-default", "coverage-ignore-tests",
        "collect-coverage-grows", "collect-coverage-moved-out"])
def test_jest_selections_widened_moved_or_of_build_output_are_no_findings(jest_repo, old, new):
    """An ignore pattern that matches no test of the start commit (build output, `/dist/`)
    switches none off; a root added or a list reformatted narrows nothing."""
    path, base = jest_repo
    edit(path, "jest.config.js", old, new)
    assert scan(path, base) == []


def test_jest_ignoring_tests_the_diff_adds_or_a_new_package_s_config_is_no_finding(jest_repo):
    """Playwright's tests, new in the diff, kept out of jest's run; a new package with its own
    jest configuration: no test of the start commit is switched off."""
    path, base = jest_repo
    for name, text in [("e2e/login.spec.ts", "import { test } from '@playwright/test'\n"),
                       ("packages/web/src/a.test.ts", "export {}\n"),
                       ("packages/web/jest.config.js", "module.exports = {\n  roots: "
                        "['<rootDir>/src'],\n  testPathIgnorePatterns: ['/node_modules/', "
                        "'/dist/'],\n  coveragePathIgnorePatterns: ['/generated/'],\n};\n")]:
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    edit(path, "jest.config.js", "    '/node_modules/',\n  ],\n  collectCoverageFrom",
         "    '/node_modules/',\n    '<rootDir>/e2e/',\n  ],\n  collectCoverageFrom")
    git(path, "add", "-A", env=_clean_environ())
    assert scan(path, base) == []


def test_jest_lists_outside_its_block_in_package_json_are_no_findings(repo):
    path, _ = repo
    edit(path, "package.json", "{\n", '{\n  "ava": {\n    "testPathIgnorePatterns": [\n'
         '      "x"\n    ]\n  },\n')
    base = commit(path, "ava")
    edit(path, "package.json", '      "x"\n', '      "x",\n      "/test/"\n')
    assert scan(path, base) == []
    edit(path, "package.json", '"jest": {\n', '"jest": {\n    "roots": [\n'
         '      "<rootDir>/src"\n    ],\n')
    assert texts(scan(path, base)) == ["package.json:10: test selection or outcome changed: "
                                       "roots <rootDir>/src"]


def test_a_jest_test_regex_left_to_jest_s_default_is_no_finding(repo):
    """The whole jest block moved or left to jest's defaults: its testMatch finds the tests
    the regular expression found."""
    path, _ = repo
    edit(path, "package.json", '"jest": {\n', '"jest": {\n    "testRegex": "\\\\.test\\\\.js$",\n')
    base = commit(path, "testRegex")
    edit(path, "package.json", '    "testRegex": "\\\\.test\\\\.js$",\n', "")
    assert scan(path, base) == []


def test_an_untracked_coverage_configuration_is_read(repo):
    """A .coveragerc the session created and left out of git still configures coverage.py."""
    path, base = repo
    (path / ".coveragerc").write_text("[run]\nomit =\n    src/app.py\n")
    assert texts(scan(path, base)) == [".coveragerc:3: coverage exclusion added: omit src/app.py"]


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


def test_a_mark_the_test_configuration_deselects_is_a_skip(repo):
    """With `-m "not slow"` in addopts, marking a test slow switches it off like a skip."""
    path, _ = repo
    (path / "pyproject.toml").write_text('[tool.pytest.ini_options]\n'
                                         'addopts = ["-q", "-m", "not slow and not db"]\n')
    base = commit(path, "markers")
    edit(path, "tests/test_a.py", "def test_one", "@pytest.mark.fast\ndef test_one")
    edit(path, "tests/test_a.py", "def test_two", "@pytest.mark.slow\ndef test_two")
    assert texts(scan(path, base)) == [
        "tests/test_a.py:10: skip added: pytest.mark.slow (left out by -m)"]


def test_a_skip_like_option_in_application_code_is_not_a_finding(repo):
    path, base = repo
    edit(path, "src/app.py", "X = 1\n", "X = 1\nOPTIONS = { skip: True }\n")
    assert scan(path, base) == []


@pytest.mark.parametrize("name, text, expected", [
    ("pytest.py", "import sys\nprint('1 passed')\nsys.exit(0)\n",
     "pytest.py: a module named like the test runner (pytest) shadows it"),
    ("tests/conftest.py", "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
                          "def pytest_runtest_makereport(item, call):\n    yield\n",
     "tests/conftest.py:5: test selection or outcome changed: pytest_runtest_makereport"),
    ("pytest.ini", "[pytest]\naddopts = --deselect tests/test_a.py::test_one\n",
     "pytest.ini:2: test selection or outcome changed: --deselect"),
    ("setup.cfg", "[coverage:report]\nfail_under = 90\n[tool:pytest]\naddopts = -p no:warnings"
                  " -k 'not test_one'\n",
     "setup.cfg:4: test selection or outcome changed: -k"),
    ("pytest.ini", "[pytest]\npython_functions = check_*\n",
     "pytest.ini:2: test selection or outcome changed: python_functions ="),
    ("pyproject.toml", '[tool.pytest.ini_options]\ntestpaths = ["docs"]\n',
     "pyproject.toml:2: test selection or outcome changed: testpaths ="),
    ("tox.ini", "[pytest]\naddopts = --collect-only\n",
     "tox.ini:2: test selection or outcome changed: --collect-only"),
    ("jest.config.js", "module.exports = {\n  testPathIgnorePatterns: ['/test/'],\n};\n",
     "jest.config.js:2: test selection or outcome changed: testPathIgnorePatterns"),
    ("pytest.ini", "[pytest]\naddopts = -m 'not slow'\n",
     "pytest.ini:2: test selection or outcome changed: -m"),
    ("vitest.config.ts", "export default {\n  test: { testNamePattern: 'adds' },\n};\n",
     "vitest.config.ts:2: test selection or outcome changed: testNamePattern"),
    (".pytest.ini", "[pytest]\naddopts = --deselect tests/test_a.py::test_one\n",
     ".pytest.ini:2: test selection or outcome changed: --deselect"),
    ("pytest.toml", '[pytest]\naddopts = ["-k", "not test_one"]\n',
     "pytest.toml:2: test selection or outcome changed: -k"),
    ("vite.config.mts", "export default defineConfig({\n  test: { testNamePattern: 'adds' },\n"
                        "});\n",
     "vite.config.mts:2: test selection or outcome changed: testNamePattern"),
    ("jest.config.js", "module.exports = {\n  roots: ['<rootDir>/src/easy'],\n};\n",
     "jest.config.js:2: test selection or outcome changed: roots"),
    ("jest.config.ts", "export default {\n  modulePathIgnorePatterns: ['<rootDir>/src/hard'],"
                       "\n};\n",
     "jest.config.ts:2: test selection or outcome changed: modulePathIgnorePatterns"),
], ids=["runner-shadowed", "report-hook", "deselect", "setup-cfg-k", "python_functions",
        "testpaths", "collect-only", "jest-ignore", "markers", "vitest-name-pattern",
        "hidden-pytest-ini", "pytest-toml", "vite-config", "jest-roots",
        "jest-module-path-ignore"])
def test_added_files_or_lines_that_switch_existing_tests_off_are_findings(repo, name, text,
                                                                          expected):
    """Adding is never a finding, except what switches existing tests off without touching
    them: a module that shadows the runner, a hook that rewrites outcomes or drops collected
    tests, options that deselect, filter or ignore tests or drop plugins."""
    path, base = repo
    (path / name).write_text(text)
    assert expected in texts(scan(path, base))


def test_a_conftest_with_fixtures_a_dropped_plugin_or_python_m_is_not_a_finding(repo):
    path, base = repo
    (path / "tests" / "conftest.py").write_text(
        "import subprocess\n\nimport pytest\n\n\n@pytest.fixture\ndef value():\n"
        "    subprocess.run(['git', 'commit', '-q', '-m', 'fixture'])\n"
        "    subprocess.run(['python', '-m', 'pip', 'list'])\n    return 1\n")
    (path / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider -q\n")
    (path / "tox.ini").write_text("[testenv]\ncommands = python -m pytest {posargs}\n"
                                  "    python3.12 -m coverage report\n")
    assert scan(path, base) == []



def test_the_word_roots_in_a_package_json_s_text_is_not_a_finding(repo):
    path, base = repo
    edit(path, "package.json", '{\n', '{\n  "description": "grass roots: tests",\n'
         '  "keywords": ["roots", "testing"],\n')
    assert scan(path, base) == []


MAKEFILE = ".PHONY: test\n\ntest:\n\tpython -m pytest -q\n\nlint:\n\truff .\n"
PACKAGE = '{\n  "scripts": {\n    "test": "node --test",\n    "lint": "eslint ."\n  }\n}\n'


@pytest.fixture
def scripted(repo) -> tuple[Path, str]:
    """The repo with a Makefile and package.json scripts committed: (path, base)."""
    path, _ = repo
    (path / "Makefile").write_text(MAKEFILE)
    (path / "web").mkdir()
    (path / "web" / "package.json").write_text(PACKAGE)
    return path, commit(path, "scripts")


@pytest.mark.parametrize("name, old, new, expected", [
    ("web/package.json", '"test": "node --test"', '"test": "exit 0"',
     ['web/package.json:3: test script changed: "test": "node --test",']),
    ("web/package.json", '"lint": "eslint ."', '"lint": "eslint .",\n    "test": "exit 0"',
     ["web/package.json:5: test script test defined again (the last one wins)"]),
    ("Makefile", "\tpython -m pytest -q\n", "\t@exit 0\n\tpython -m pytest -q\n",
     ["Makefile:4: make target test: its rule changed"]),
    ("Makefile", "\tpython -m pytest -q\n", "",
     ["Makefile:4: make target test: its rule changed"]),
    ("Makefile", "\truff .\n", "\truff .\n\ntest:\n\t@true\n",
     ["Makefile:9: make target test: its rule changed"]),
    ("Makefile", "\truff .\n", "\truff check .\n\ntest-e2e:\n\tpytest e2e\n", []),
    ("web/package.json", '"lint": "eslint ."', '"lint": "eslint src",\n    "test:e2e": "x"', []),
], ids=["npm-changed", "npm-defined-again", "make-exit-added", "make-line-removed",
        "make-rule-again", "new-target-and-other-rule", "new-script-and-other-script"])
def test_changes_to_what_the_test_command_runs_are_findings(scripted, name, old, new,
                                                              expected):
    """`npm test` and `make test` run these: changing them changes what passing means.
    New scripts and targets, and other ones, are no finding."""
    path, base = scripted
    edit(path, name, old, new)
    assert texts(scan(path, base)) == expected

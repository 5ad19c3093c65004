"""tamper.scan over a JavaScript test file whose import of the code under test is changed:
to a stand-in (a stub, a mock module, a definition of the test's own) it is a finding, to
the same code by another path it is none."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from conftest import _clean_environ, git
from test_tamper import commit, edit, repo, scan, texts  # noqa: F401  (repo: fixture)

SUM_TEST = textwrap.dedent("""\
    import sum from '../src/sum';
    import { sleep } from '../src/time';

    test('adds', async () => {
      await sleep(0);
      expect(sum(1, 2)).toBe(3);
    });
""")


@pytest.fixture
def summed(repo) -> tuple[Path, str]:
    """The repo with src/sum.js and its test committed: (path, base)."""
    path, _ = repo
    for name, text in [("src/sum.js", "export default (a, b) => a + b;\n"),
                       ("src/time.js", "export const sleep = () => Promise.resolve();\n"),
                       ("src/index.js", "export { default as sum } from './sum';\n"),
                       ("test/sum.test.js", SUM_TEST)]:
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    return path, commit(path, "sum")


def add(path: Path, name: str, text: str = "export default () => 3;\n") -> None:
    (path / name).parent.mkdir(parents=True, exist_ok=True)
    (path / name).write_text(text)
    git(path, "add", "-A", env=_clean_environ())


@pytest.mark.parametrize("new, stub, expected", [
    ("import sum from './stubs/sum';\n", "test/stubs/sum.js",
     "test/sum.test.js:1: sum now imported from ./stubs/sum instead of ../src/sum: its tests "
     "check the stand-in, not the code"),
    ("import { fakeSum as sum } from '../src/__mocks__/sum';\n", "src/__mocks__/sum.js",
     "test/sum.test.js:1: sum now imported from ../src/__mocks__/sum instead of ../src/sum: its "
     "tests check the stand-in, not the code"),
    ("const sum = require('../src/sum.mock');\n", "src/sum.mock.js",
     "test/sum.test.js:1: sum now imported from ../src/sum.mock instead of ../src/sum: its "
     "tests check the stand-in, not the code"),
    ("const sum = (a, b) => 3;\n", None,
     "test/sum.test.js:1: sum defined in the test instead of imported from ../src/sum: its "
     "tests check that, not the code"),
], ids=["stub-folder", "mocks-folder-alias", "require-of-a-mock", "defined-in-the-test"])
def test_the_code_under_test_imported_from_a_stand_in_is_a_finding(summed, new, stub,
                                                                   expected):
    """The test still calls `sum`, and passes whatever src/sum.js does."""
    path, base = summed
    if stub:
        add(path, stub)
    edit(path, "test/sum.test.js", "import sum from '../src/sum';\n", new)
    assert texts(scan(path, base)) == [expected]


@pytest.mark.parametrize("new, moved", [
    ("import sum from '../src/sum.js';\n", None),
    ("import { sum } from '../src';\n", None),
    ("import sum from '@/sum';\n", None),
    ("import sum from '../src/math/sum';\n", ("src/sum.js", "src/math/sum.js")),
    ("import sum from './stubs/sum';\n", ("src/sum.js", None)),
], ids=["extension", "barrel", "alias", "code-moved", "code-deleted"])
def test_the_code_imported_by_another_path_or_gone_is_no_finding(summed, new, moved):
    """The code moved, or went: the test follows it, whatever it imports now."""
    path, base = summed
    if moved and moved[1]:
        (path / moved[1]).parent.mkdir(parents=True, exist_ok=True)
        git(path, "mv", *moved, env=_clean_environ())
    elif moved:
        git(path, "rm", "-q", moved[0], env=_clean_environ())
        add(path, "test/stubs/sum.js")
    edit(path, "test/sum.test.js", "import sum from '../src/sum';\n", new)
    git(path, "add", "-A", env=_clean_environ())
    assert scan(path, base) == []


def test_a_helper_of_the_test_s_own_is_no_finding(summed):
    """sleep is no code an assertion checks: the test defining its own is none."""
    path, base = summed
    edit(path, "test/sum.test.js", "import { sleep } from '../src/time';\n",
         "const sleep = () => Promise.resolve();\n")
    assert scan(path, base) == []

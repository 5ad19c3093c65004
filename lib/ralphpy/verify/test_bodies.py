"""Owns reading a test file's lines, as the session left it: where each test's body ends, and
the existing tests that code added beside them keeps from running: a Python test defined
again under its name (only the last definition runs), a bare `return` at the top of a test's
body (alone or under a condition that always holds), a Python test made a fixture. Pure
functions over lines; knows nothing of diffs (tamper.py says which lines were added) or of the
per-line patterns (patterns.py)."""
from __future__ import annotations

import re

from ralphpy.verify.patterns import is_assertion

# A Python test, function or class, at its indent.
_PY_TEST_DEF = re.compile(
    r"^(?P<indent>[ \t]*)(?:async\s+)?(?P<kind>def|class)\s+(?P<name>(?:test|Test)\w*)\b")
# Besides a Python test function: a test whose body is the lines indented deeper than its
# first, a node or jest callback opened at the end of its line, go's func.
_BODY_DEF = (
    re.compile(r"^(?P<indent>[ \t]*)(?:it|test)\s*\(\s*(?P<q>['\"`])(?P<name>.+?)(?P=q)"
               r".*\{\s*$"),
    re.compile(r"^(?P<indent>[ \t]*)func\s+(?P<name>Test\w*)\s*\(.*\{\s*$"))
_BARE_RETURN = re.compile(r"^[ \t]*return(?:\s+(?:None|undefined))?\s*;?\s*(?:(?:#|//).*)?$")
# A condition that always holds, and what follows it on its line.
_ALWAYS = re.compile(
    r"^[ \t]*if\s*(?:(?:True|1)\s*:|\(\s*(?:true|1)\s*\)\s*\{?|true\s*\{)(?P<rest>.*)$")
# A fixture is not collected as a test, whatever its name: `@pytest.fixture` put on a test
# switches it off without a skip marker.
_FIXTURE = re.compile(r"^[ \t]*@(?:pytest\.)?fixture\b")
# A block whose first statement always runs when the line before it did: what returns there
# returns from the test. Not `with pytest.raises(...)` (or warns, assertRaises): leaving it
# without the exception fails the test.
_ALWAYS_ENTERED = re.compile(r"^[ \t]*(?:(?:async\s+)?with\b(?!.*(?:[Rr]aises|[Ww]arns)).*:"
                             r"|try\s*(?::|\{))\s*(?:#.*)?$")
_DECORATOR = re.compile(r"^[ \t]*@")


def _test_function(line: str) -> re.Match | None:
    """A Python test function's definition (not a test class)."""
    m = _PY_TEST_DEF.match(line)
    return m if m and m.group("kind") == "def" else None


def redefined_tests(lines: list[str], added: set[int],
                    removed: list[str]) -> list[tuple[int, str, int]]:
    """Python tests defined again at the same level by added lines, more times than before
    (`removed`: the lines the change took out): (the last definition's line, the name, the
    first definition's line). Python keeps only the last; the others never run."""
    defs: dict[tuple[str, str], list[int]] = {}
    for no, line in enumerate(lines, 1):
        if m := _PY_TEST_DEF.match(line):
            defs.setdefault((m.group("indent"), m.group("name")), []).append(no)
    gone: dict[tuple[str, str], int] = {}
    for line in removed:
        if m := _PY_TEST_DEF.match(line):
            key = (m.group("indent"), m.group("name"))
            gone[key] = gone.get(key, 0) + 1
    found = []
    for key, nos in defs.items():
        before = len([no for no in nos if no not in added]) + gone.get(key, 0)
        if len(nos) > 1 and len(nos) > before:
            found.append((nos[-1], key[1], nos[0]))
    return found


def bodies(lines: list[str]):
    """Each test of the file with its body: (its name, its definition's line, the body as
    (line number, indent, text) of the lines indented deeper than the definition, comments and
    blank lines aside). A test is a Python test function or one of _BODY_DEF."""
    for no, line in enumerate(lines, 1):
        m = _test_function(line) or next((m for rx in _BODY_DEF if (m := rx.match(line))), None)
        if m is None:
            continue
        depth = len(m.group("indent").expandtabs())
        body = []
        for at in range(no, len(lines)):
            text = lines[at].expandtabs()
            if not text.strip() or text.lstrip().startswith(("#", "//")):
                continue
            indent = len(text) - len(text.lstrip())
            if indent <= depth:
                break
            body.append((at + 1, indent, text))
        yield m.group("name"), no, body


def early_returns(lines: list[str]) -> list[tuple[int, int, str]]:
    """Bare `return`s that always run in a test's body (bodies): at its top level (its least
    indent) or in blocks always entered (`with`, `try`), alone or under a condition that always
    holds, with an assertion after them in it: (the statement's first line, its last, the
    test's name)."""
    found = []
    for name, _, body in bodies(lines):
        top = min((indent for _, indent, _ in body), default=0)
        enclosing: list[tuple[int, bool]] = []     # (indent, always entered) of the blocks
        for i, (at, indent, text) in enumerate(body):
            while enclosing and enclosing[-1][0] >= indent:
                enclosing.pop()
            runs = indent == top or (enclosing and enclosing[0][0] == top
                                     and all(always for _, always in enclosing))
            enclosing.append((indent, bool(_ALWAYS_ENTERED.match(text))))
            if not runs or (end := _returns(body, i)) is None:
                continue
            if any(is_assertion(rest) for _, _, rest in body[i + 1:]):
                found.append((at, end, name))
            break
    return found


def _returns(body: list[tuple[int, int, str]], i: int) -> int | None:
    """The last line of the statement at body[i] when it always returns: a bare return, or one
    on the line of a condition that always holds or first in its block. Else None."""
    at, indent, text = body[i]
    if _BARE_RETURN.match(text):
        return at
    if not (m := _ALWAYS.match(text)):
        return None
    if (rest := m.group("rest").strip().strip("{}").strip()):
        return at if _BARE_RETURN.match(rest) else None
    if i + 1 < len(body) and body[i + 1][1] > indent and _BARE_RETURN.match(body[i + 1][2]):
        return body[i + 1][0]
    return None


def fixture_tests(lines: list[str]) -> list[tuple[int, str]]:
    """Python tests made fixtures: (the `@pytest.fixture` line, the test's name) for each such
    decorator whose function, below it and any other decorators, is named like a test."""
    found = []
    for no, line in enumerate(lines, 1):
        if not _FIXTURE.match(line):
            continue
        below = next((text for text in lines[no:] if not _DECORATOR.match(text)), "")
        if m := _test_function(below):
            found.append((no, m.group("name")))
    return found


__all__ = ["redefined_tests", "bodies", "early_returns", "fixture_tests"]

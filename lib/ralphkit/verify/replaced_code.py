"""Owns telling a test that replaces the code it asserts on: a function patched, stubbed or
assigned over in a test, whose own result an assertion of that test then checks.
`monkeypatch.setattr(calc, "add", lambda a, b: 3)` before `assert calc.add(1, 2) == 3`
(or `result = calc.add(1, 2)` and `assert result == 3`) passes whatever calc.add does. The replacements read: pytest's monkeypatch.setattr, mock's
patch and patch.object (in the body, a `with`, or a decorator of the test), an assignment
(`calc.add = ...`), jest's and vitest's spyOn with a mock implementation, sinon.stub. A call
in an assertion is the replaced function when it is called bare (`add(1, 2)`, imported by
name), on the owner the replacement named (`calc.add(`), on an instance of it
(`Calculator().add(`, or a variable the test set to `Calculator(...)`); a dependency patched
while an assertion calls something else is no finding. Pure functions over a file's lines;
knows nothing of diffs (tamper.py says which lines were added) or of where a test's body
ends (test_bodies.py)."""
from __future__ import annotations

import re

from ralphkit.verify import test_bodies
from ralphkit.verify.patterns import is_assertion

_Q = r"(?P<q>['\"`])"
_MOCK = r"(?<![\w.])(?:(?:mocker|mock|unittest\.mock)\.)?"
# Each gives the replaced function's name and its owner (a module, class or object: the last
# part of what was named, `calc` of `self.calc` or of "app.calc.add").
_REPLACEMENTS = (
    re.compile(r"\bmonkeypatch\.setattr\(\s*(?:[\w.]*\.)?(?P<owner>\w+)\s*,\s*" + _Q
               + r"(?P<name>\w+)(?P=q)"),
    re.compile(r"\bmonkeypatch\.setattr\(\s*" + _Q + r"(?:[\w.]*\.)?(?P<owner>\w+)\."
               r"(?P<name>\w+)(?P=q)"),
    re.compile(_MOCK + r"patch\.object\(\s*(?:[\w.]*\.)?(?P<owner>\w+)\s*,\s*" + _Q
               + r"(?P<name>\w+)(?P=q)"),
    re.compile(_MOCK + r"patch\(\s*" + _Q + r"(?:[\w.]*\.)?(?P<owner>\w+)\.(?P<name>\w+)(?P=q)"),
    re.compile(r"\b(?:jest|vi)\.spyOn\(\s*(?:[\w$.]*\.)?(?P<owner>[\w$]+)\s*,\s*" + _Q
               + r"(?P<name>\w+)(?P=q)\s*\)\s*\.mock\w*\("),
    re.compile(r"\bsinon\.stub\(\s*(?:[\w$.]*\.)?(?P<owner>[\w$]+)\s*,\s*" + _Q
               + r"(?P<name>\w+)(?P=q)"),
    re.compile(r"^\s*(?:[\w$.]*\.)?(?P<owner>[\w$]+)\.(?P<name>\w+)\s*=(?!=)"),
)
_DECORATOR = re.compile(r"^[ \t]*@")
_ASSIGNED = re.compile(r"^\s*(?:(?:const|let|var)\s+)?(?P<var>[\w$]+)\s*=(?!=)")
_OWNER_BEFORE = re.compile(r"(?:(?P<owner>[\w$]+)\s*|(?P<made>[\w$]+)\s*\([^()]*\)\s*)\.\s*$")


def replaced(lines: list[str]) -> list[tuple[int, str, str]]:
    """(the replacement's line, the test's name, the replaced function's name) for each
    replacement in a test (its body, or a decorator of a Python test) followed by an
    assertion of that test calling the replaced function."""
    found = []
    for test, first, body in test_bodies.bodies(lines):
        above = first - 1
        while above > 0 and _DECORATOR.match(lines[above - 1]):
            above -= 1
        tops = [(no, lines[no - 1]) for no in range(above, first)]
        for no, text in tops + [(at, text) for at, _, text in body]:
            for m in (m for rx in _REPLACEMENTS if (m := rx.search(text))):
                if _checked(body, no, m.group("name"), m.group("owner")):
                    found.append((no, test, m.group("name")))
                    break
    return found


def _checked(body: list[tuple[int, int, str]], since: int, name: str, owner: str) -> bool:
    """Whether an assertion of the body after line `since` checks what `name` returns: calls
    it, or names a variable a call of it was assigned to (`result = calc.add(1, 2)`)."""
    results: set[str] = set()
    for at, _, text in body:
        if at <= since:
            continue
        if is_assertion(text):
            if _calls(text, name, owner, body) or any(
                    re.search(rf"(?<![\w$.]){re.escape(var)}(?![\w$])", text) for var in results):
                return True
        elif (m := _ASSIGNED.match(text)) and _calls(text, name, owner, body):
            results.add(m.group("var"))
    return False


def _calls(line: str, name: str, owner: str, body: list[tuple[int, int, str]]) -> bool:
    """Whether the line calls `name` as the function `owner` held."""
    made = re.compile(rf"^\s*(?:(?:const|let|var)\s+)?(?P<var>[\w$]+)\s*=\s*(?:new\s+)?"
                      rf"(?:[\w$.]*\.)?{re.escape(owner)}\s*\(")
    instances = {m.group("var") for _, _, text in body if (m := made.match(text))}
    for m in re.finditer(rf"(?<![\w$]){re.escape(name)}\s*\(", line):
        before = line[:m.start()]
        if not before.rstrip().endswith("."):
            return True                               # called bare: imported by name
        qualifier = _OWNER_BEFORE.search(before)
        if qualifier and (qualifier.group("made") == owner
                          or qualifier.group("owner") in ({owner} | instances)):
            return True
    return False


__all__ = ["replaced"]

"""Owns telling a test that replaces the code it asserts on: a function patched, stubbed or
assigned over in a test, whose own result an assertion of that test then checks.
`monkeypatch.setattr(calc, "add", lambda a, b: 3)` before `assert calc.add(1, 2) == 3`
(or `result = calc.add(1, 2)` and `assert result == 3`) passes whatever calc.add does. The
replacements read: pytest's monkeypatch.setattr, mock's patch and patch.object (in the body,
a `with`, or a decorator of the test), an assignment (`calc.add = ...`, `globals()["add"] =
...`), jest's and vitest's spyOn with a mock implementation, sinon.stub, and a name the test
file imports bound again in the test (`add = lambda a, b: 4`, a nested `def add`). A call in
an assertion is the replaced function when it is called bare (`add(1, 2)`, imported by name),
on the owner the replacement named (`calc.add(`), or on an instance of it (`Calculator().add(`,
a variable the test set to `Calculator(...)`); a dependency patched while an assertion calls
something else is no finding. Pure functions over a file's lines; knows nothing of diffs
(tamper.py says which lines were added) or of where a test's body ends (test_bodies.py)."""
from __future__ import annotations

import re

from ralphkit.verify import test_bodies
from ralphkit.verify.patterns import is_assertion

_Q = r"(?P<q>['\"`])"
_MOCK = r"(?<![\w.])(?:(?:mocker|mock|unittest\.mock)\.)?"
_OBJECT = r"(?P<target>[^,'\"`]+?)\s*,\s*" + _Q + r"(?P<name>\w+)(?P=q)"   # (calc, "add"
_PATH = r"f?" + _Q + r"(?P<target>[^'\"`]*)\.(?P<name>\w+)(?P=q)"          # ("app.calc.add"
# Each gives the replaced function's name and what held it (`target`: a module, class or
# object, named in full: `self.calc`, "app.calc"); a name the test file imports (_IMPORTS)
# bound again in a test is read by _ASSIGNED and _DEFINED.
_REPLACEMENTS = (
    re.compile(r"\bmonkeypatch\.setattr\(\s*" + _OBJECT),
    re.compile(r"\bmonkeypatch\.setattr\(\s*" + _PATH),
    re.compile(_MOCK + r"patch\.object\(\s*" + _OBJECT),
    re.compile(_MOCK + r"patch\(\s*" + _PATH),
    re.compile(r"\b(?:jest|vi)\.spyOn\(\s*" + _OBJECT + r"\s*\)\s*\.mock\w*\("),
    re.compile(r"\bsinon\.stub\(\s*" + _OBJECT),
    re.compile(r"^\s*(?P<target>[\w$.]+)\.(?P<name>\w+)\s*=(?!=)"),
    re.compile(r"\bglobals\(\)\s*\[\s*" + _Q + r"(?P<name>\w+)(?P=q)\s*\]\s*=(?!=)"),
)
_DOTTED = re.compile(r"(?:[\w$]+\.)*(?P<last>[\w$]+)")
# Names a test file imports (`from calc import add, sub as minus`, `import { add } from`,
# `const { add } = require(`).
_IMPORTS = (re.compile(r"^\s*from\s+[\w.]+\s+import\s+\(?(?P<names>[^#)]*)"),
            re.compile(r"^\s*(?:import|(?:const|let|var))\s*\{(?P<names>[^}]*)\}\s*(?:from|=)"))
_DEFINED = re.compile(r"^\s*(?:async\s+)?(?:def|function)\s+(?P<var>[\w$]+)\s*\(")
_DECORATOR = re.compile(r"^[ \t]*@")
_ASSIGNED = re.compile(r"^\s*(?:(?:const|let|var)\s+)?(?P<var>[\w$]+)\s*=(?!=)")
_OWNER_BEFORE = re.compile(r"(?:(?P<owner>[\w$]+)\s*|(?P<made>[\w$]+)\s*\([^()]*\)\s*)\.\s*$")


def _imported(lines: list[str]) -> set[str]:
    names = set()
    for line in lines:
        for m in (m for rx in _IMPORTS if (m := rx.match(line))):
            for part in m.group("names").split(","):
                words = part.replace(":", " as ").split()
                if words and words[-1].isidentifier():
                    names.add(words[-1])
    return names


def _replacement(text: str, imported: set[str]) -> tuple[str, str | None] | None:
    """The replacement a line of a test makes, if any: (the replaced function's name, its
    owner: the last part of what held it, None when unknown)."""
    for m in (m for rx in _REPLACEMENTS if (m := rx.search(text))):
        owner = _DOTTED.fullmatch((m.groupdict().get("target") or "").strip())
        return m.group("name"), owner.group("last") if owner else None
    bound = _ASSIGNED.match(text) or _DEFINED.match(text)
    return (bound.group("var"), None) if bound and bound.group("var") in imported else None


def replaced(lines: list[str]) -> list[tuple[int, str, str]]:
    """(the replacement's line, the test's name, the replaced function's name) for each
    replacement in a test (its body, or a decorator of a Python test) followed by an
    assertion of that test checking what the replaced function returns (_checked)."""
    found = []
    imported = _imported(lines)
    for test, first, body in test_bodies.bodies(lines):
        top = first                           # the first of the test's decorators
        while top > 1 and _DECORATOR.match(lines[top - 2]):
            top -= 1
        tops = [(no, lines[no - 1]) for no in range(top, first)]
        for no, text in tops + [(at, text) for at, _, text in body]:
            if (replacement := _replacement(text, imported)) and _checked(body, no, *replacement):
                found.append((no, test, replacement[0]))
    return found


def _checked(body: list[tuple[int, int, str]], since: int, name: str,
             owner: str | None) -> bool:
    """Whether an assertion of the body after line `since` checks what `name` returns: calls
    it, or names a variable a call of it was assigned to (`result = calc.add(1, 2)`)."""
    held = set()                              # the owner and the test's instances of it
    if owner is not None:
        made = re.compile(rf"^\s*(?:(?:const|let|var)\s+)?(?P<var>[\w$]+)\s*=\s*(?:new\s+)?"
                          rf"(?:[\w$.]*\.)?{re.escape(owner)}\s*\(")
        held = {owner} | {m.group("var") for _, _, text in body if (m := made.match(text))}
    results: set[str] = set()
    for at, _, text in body:
        if at <= since:
            continue
        if is_assertion(text):
            if _calls(text, name, held) or any(
                    re.search(rf"(?<![\w$.]){re.escape(var)}(?![\w$])", text) for var in results):
                return True
        elif (m := _ASSIGNED.match(text)) and _calls(text, name, held):
            results.add(m.group("var"))
    return False


def _calls(line: str, name: str, held: set[str]) -> bool:
    """Whether the line calls `name` bare or on one of `held` (empty when the owner is
    unknown: only a bare call is that function then)."""
    for m in re.finditer(rf"(?<![\w$]){re.escape(name)}\s*\(", line):
        before = line[:m.start()]
        if not before.rstrip().endswith("."):
            return True                               # called bare: imported by name
        qualifier = _OWNER_BEFORE.search(before)
        if qualifier and (qualifier.group("made") or qualifier.group("owner")) in held:
            return True
    return False


__all__ = ["replaced"]

"""Owns telling a test that replaces the code it asserts on: a function patched, stubbed or
assigned over in a test, whose own result an assertion of that test then checks.
`monkeypatch.setattr(calc, "add", lambda a, b: 3)` before `assert calc.add(1, 2) == 3`
(or `result = calc.add(1, 2)` and `assert result == 3`) passes whatever calc.add does. The
replacements read: pytest's monkeypatch.setattr, mock's patch and patch.object (in the body,
a `with`, or a decorator of the test), an assignment (`calc.add = ...`, `globals()["add"] =
...`), jest's and vitest's spyOn with a mock implementation, a result given to a mocked
function (`add.mockReturnValue(4)`, `vi.mocked(add).mockReturnValue(4)`), sinon.stub, a name
the test file imports bound again in the test (`add = lambda a, b: 4`, a nested `def add`),
and, for every test of the file, a jest.mock or vi.mock factory of the module a function is
imported from (`jest.mock('./calc', () => ({ add: jest.fn() }))`, jest hoists it). A call in
an assertion is the replaced function when it is called bare (`add(1, 2)`, imported by name),
on the owner the replacement named or a name the file imports it as (`calc.add(`, `c.add(`
after `import app.calc as c`), or on an instance of it (`Calculator().add(`, a variable the
test set to `Calculator(...)`); a dependency replaced while an assertion calls something else
is no finding; a stand-in imported in place of the code is swapped_imports.py's. Pure functions
over a file's lines; knows nothing of diffs (tamper.py says which lines were added) or of where
a test's body ends (test_bodies.py)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ralphpy.verify import test_bodies
from ralphpy.verify.patterns import JS_SCRIPT, is_assertion

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
# A result given to a mocked function: the name, and its owner when called on one.
_MOCK_METHOD = r"\s*\.mock(?:ReturnValue|ResolvedValue|RejectedValue|Implementation)\w*\("
_MOCKED = (
    re.compile(r"\b(?:jest|vi)\.mocked\(\s*(?:(?P<target>[\w$.]+)\.)?(?P<name>[\w$]+)\s*"
               r"(?:,[^)]*)?\)" + _MOCK_METHOD),
    re.compile(r"\(\s*(?:(?P<target>[\w$.]+)\.)?(?P<name>[\w$]+)\s+as\s+[^()]+\)" + _MOCK_METHOD),
    re.compile(r"(?<![\w$.])(?:(?P<target>[\w$.]+)\.)?(?P<name>[\w$]+)" + _MOCK_METHOD),
)
_DOTTED = re.compile(r"(?:[\w$]+\.)*(?P<last>[\w$]+)")
# Names a test file imports (`from calc import add, sub as minus`, `import { add } from`,
# `const { add } = require(`), and modules it imports under a name of its own.
_IMPORTS = (re.compile(r"^\s*from\s+[\w.]+\s+import\s+\(?(?P<names>[^#)]*)"),
            re.compile(r"^\s*(?:import|(?:const|let|var))\s*\{(?P<names>[^}]*)\}\s*(?:from|=)"))
_MODULE_ALIAS = re.compile(r"^\s*import\s+(?P<module>[\w.]+)\s+as\s+(?P<alias>\w+)")
# A JS import with its module: `import { add as plus } from './calc'`, `import * as calc
# from`, `const { add } = require(`, `const calc = require(`.
_JS_IMPORT = (
    re.compile(r"^\s*import\s+(?:type\s+)?(?P<what>[^'\"`;]*?)\s*from\s*" + _Q
               + r"(?P<module>[^'\"`]+)(?P=q)"),
    re.compile(r"^\s*(?:const|let|var)\s+(?P<what>[^=]+?)\s*=\s*require\(\s*" + _Q
               + r"(?P<module>[^'\"`]+)(?P=q)"))
_MODULE_MOCK = re.compile(r"\b(?:jest|vi)\.(?:mock|doMock)\(\s*" + _Q
                          + r"(?P<module>[^'\"`]+)(?P=q)")
_KEY = re.compile(r"(?<![\w$.])(?P<key>[\w$]+)\s*:(?!:)")
# An assertion about a mock's calls (`expect(fetch).toHaveBeenCalledWith(`, `api.get.
# assert_called_once()`, sinon's `calledWith`): it checks what the code did with the mock,
# not what the mock returned.
_CALL_CHECK = re.compile(r"\.(?:toHaveBeenCalled|toBeCalled|toHaveBeenNthCalled"
                         r"|toHaveBeenLastCalled|nthCalled|lastCalled|toHaveReturned"
                         r"|assert_called|assert_any_call|assert_has_calls|assert_not_called"
                         r"|called|call_count|call_args)")
_DEFINED = re.compile(r"^\s*(?:async\s+)?(?:def|function)\s+(?P<var>[\w$]+)\s*\(")
_DECORATOR = re.compile(r"^[ \t]*@")
_ASSIGNED = re.compile(r"^\s*(?:(?:const|let|var)\s+)?(?P<var>[\w$]+)\s*=(?!=)")
_OWNER_BEFORE = re.compile(r"(?:(?P<owner>[\w$]+)\s*|(?P<made>[\w$]+)\s*\([^()]*\)\s*)\.\s*$")


def _import_lines(lines: list[str]):
    """Each import statement's text, a parenthesized Python one joined to its `)`."""
    at = 0
    while at < len(lines):
        text, at = lines[at], at + 1
        if re.match(r"^\s*from\s+[\w.]+\s+import\s+\(", text):
            while ")" not in text and at < len(lines):
                text, at = text + " " + lines[at], at + 1
        yield text


@dataclass
class _Imports:
    names: set[str] = field(default_factory=set)             # imported by name
    modules: dict[str, str] = field(default_factory=dict)    # a name for a module -> that module
    origin: dict[str, str] = field(default_factory=dict)     # a JS name -> the module it is from
    js: dict[str, tuple[dict[str, str], set[str]]] = field(default_factory=dict)
    # ^ a JS module -> (its export -> the file's name for it, the file's names for the module)


def _imported(lines: list[str]) -> _Imports:
    """What a test file imports: names (`from calc import add, sub as minus`, `import { add }
    from`, `const { add } = require(`) and names of modules (`import app.calc as c`: c ->
    calc; `import * as calc from './calc'`: calc -> ./calc). A JS module is named without its
    extension."""
    found = _Imports()
    for line in _import_lines(lines):
        if m := _MODULE_ALIAS.match(line):
            found.modules[m.group("alias")] = m.group("module").rsplit(".", 1)[-1]
        for m in (m for rx in _IMPORTS if (m := rx.match(line))):
            for part in m.group("names").split(","):
                words = part.replace(":", " as ").split()
                if words and words[-1].isidentifier():
                    found.names.add(words[-1])
                if len(words) == 3 and words[1] == "as":
                    found.modules[words[2]] = words[0]
        for m in (m for rx in _JS_IMPORT if (m := rx.match(line))):
            module = JS_SCRIPT.sub("", m.group("module"))
            names, whole = found.js.setdefault(module, ({}, set()))
            braced = re.search(r"\{([^}]*)\}", m.group("what"))
            for part in (braced.group(1).split(",") if braced else []):
                words = part.replace(":", " as ").split()
                if words and words[-1].isidentifier():
                    names[words[0]], found.origin[words[-1]] = words[-1], module
            rest = re.sub(r"\{[^}]*\}|\*\s*as\b|,", " ", m.group("what")).split()
            for word in (w for w in rest if w.isidentifier() and w != "type"):
                whole.add(word)
                found.modules[word] = module
    return found


def _module_mocks(lines: list[str], imports: _Imports) -> list[tuple[int, str, str | None]]:
    """(line, name, owner) for each function a jest.mock/vi.mock factory gives the module
    the file imports it from: named bare as the file imports it, or on the module's name."""
    found: list[tuple[int, str, str | None]] = []
    for at, line in enumerate(lines):
        if not (m := _MODULE_MOCK.search(line)):
            continue
        names, whole = imports.js.get(JS_SCRIPT.sub("", m.group("module")), ({}, set()))
        depth, parts = 1, [(at + 1, line[m.end():])]
        while True:                           # the factory: up to the call's closing paren
            no, text = parts[-1]
            depth += text.count("(") - text.count(")")
            if depth <= 0 or no >= min(len(lines), at + 50):
                break
            parts.append((no + 1, lines[no]))
        for no, text in parts:
            for key in (k.group("key") for k in _KEY.finditer(text)):
                if key in names:
                    found.append((no, names[key], None))
                found += [(no, key, module) for module in sorted(whole)]
    return found


def _replacement(text: str, imported: set[str]) -> tuple[str, str | None] | None:
    """The replacement a line of a test makes, if any: (the replaced function's name, its
    owner: the last part of what held it, None when unknown)."""
    for m in (m for rx in _REPLACEMENTS if (m := rx.search(text))):
        owner = _DOTTED.fullmatch((m.groupdict().get("target") or "").strip())
        return m.group("name"), owner.group("last") if owner else None
    for m in (m for rx in _MOCKED if (m := rx.search(text))):
        owner = _DOTTED.fullmatch(m.group("target") or "")
        if owner or m.group("name") in imported:      # a mock the test made itself is no code
            return m.group("name"), owner.group("last") if owner else None
    bound = _ASSIGNED.match(text) or _DEFINED.match(text)
    return (bound.group("var"), None) if bound and bound.group("var") in imported else None


def replaced(lines: list[str]) -> list[tuple[int, str, str]]:
    """(the replacement's line, the test's name, the replaced function's name) for each
    replacement in a test (its body, or a decorator of a Python test) followed by an
    assertion of that test checking what the replaced function returns (_checked), and for
    each function a module mock factory replaces that an assertion of a test checks."""
    found = []
    imports = _imported(lines)
    tests = list(test_bodies.bodies(lines))
    for test, first, body in tests:
        top = first                           # the first of the test's decorators
        while top > 1 and _DECORATOR.match(lines[top - 2]):
            top -= 1
        tops = [(no, lines[no - 1]) for no in range(top, first)]
        for no, text in tops + [(at, text) for at, _, text in body]:
            if (replacement := _replacement(text, imports.names)) and _checked(
                    body, no, *replacement, imports):
                found.append((no, test, replacement[0]))
    for no, name, owner in _module_mocks(lines, imports):
        test = next((test for test, _, body in tests
                     if _checked(body, 0, name, owner, imports)), None)
        if test is not None:
            found.append((no, test, name))
    return found


def _checked(body: list[tuple[int, int, str]], since: int, name: str, owner: str | None,
             imports: _Imports) -> bool:
    """Whether an assertion of the body after line `since` checks what `name` returns: calls
    it, or names a variable a call of it was assigned to (`result = calc.add(1, 2)`)."""
    held = set()                              # the owner, its aliases, the test's instances
    bare = owner is None or (imports.origin.get(name) is not None
                             and imports.origin.get(name) == imports.modules.get(owner))
    if owner is not None:
        made = re.compile(rf"^\s*(?:(?:const|let|var)\s+)?(?P<var>[\w$]+)\s*=\s*(?:new\s+)?"
                          rf"(?:[\w$.]*\.)?{re.escape(owner)}\s*\(")
        held = ({owner} | {alias for alias, real in imports.modules.items() if real == owner}
                | {m.group("var") for _, _, text in body if (m := made.match(text))})
    results: set[str] = set()
    for at, _, text in body:
        if at <= since:
            continue
        if is_assertion(text) and not _CALL_CHECK.search(text):
            if _calls(text, name, held, bare) or any(
                    re.search(rf"(?<![\w$.]){re.escape(var)}(?![\w$])", text) for var in results):
                return True
        elif (m := _ASSIGNED.match(text)) and _calls(text, name, held, bare):
            results.add(m.group("var"))
    return False


def _calls(line: str, name: str, held: set[str], bare: bool) -> bool:
    """Whether the line calls `name` on one of `held` (empty when the owner is unknown), or
    bare when `bare`: the replacement named no owner (a name the test file imports, bound
    again), or a JS module's function the file also imports by name (babel's and vitest's
    imports read the module's member at each call, so the replacement reaches it; Python's
    `from m import f` keeps the original)."""
    for m in re.finditer(rf"(?<![\w$]){re.escape(name)}\s*\(", line):
        before = line[:m.start()]
        if not before.rstrip().endswith("."):
            if bare:
                return True
            continue
        qualifier = _OWNER_BEFORE.search(before)
        if qualifier and (qualifier.group("made") or qualifier.group("owner")) in held:
            return True
    return False


__all__ = ["replaced"]

"""Owns telling a JavaScript test file whose import of the code under test now gives it a
stand-in: a name the file imported from a module of the project (`import sum from
'../src/sum'`) that the diff makes come from a stub instead (`import sum from './stubs/sum'`,
`import { fakeSum as sum } from '../__mocks__/sum'`, `const sum = require('./sum.mock')`), or
defines in the test file itself (`const sum = (a, b) => 3`): the tests still call `sum`, and
pass whatever the code does. A stand-in is a module under a test folder, under `__mocks__`, or
named as one (stub, mock, fake, dummy); the name is one an assertion of the file uses. Not one:
the code's module gone from the tree or moved (the test follows it), a module of the project
imported by another path (`'../src'`, an alias), a package's name. replaced_code.py reads the
other replacements (a module mock factory, spyOn, an assignment). Pure functions over a file's
diff and lines; knows nothing of git (tamper.py says which files exist)."""
from __future__ import annotations

import posixpath
import re
from typing import Callable, Iterable

from ralphpy.verify import patterns
from ralphpy.verify.diff_files import DiffFile

_Q = r"(?P<q>['\"`])"
_IMPORTS = (re.compile(r"^\s*import\s+(?!type\b)(?P<what>[^'\"`;]*?)\s*from\s*" + _Q
                       + r"(?P<module>[^'\"`]+)(?P=q)"),
            re.compile(r"^\s*(?:const|let|var)\s+(?P<what>[^=]+?)\s*=\s*require\(\s*" + _Q
                       + r"(?P<module>[^'\"`]+)(?P=q)\s*\)"))
_EXTENSIONS = ("", ".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts")
_STAND_IN = re.compile(r"(?i)stub|mock|fake|dumm(?:y|ies)")


def _bindings(lines: Iterable[tuple[int, str]]) -> dict[str, tuple[int, str]]:
    """The names a file's import lines bind, each with its line and module: a default or
    namespace import, a name in braces (its alias, if any), a require's whole or destructured
    result."""
    found: dict[str, tuple[int, str]] = {}
    for no, line in lines:
        for m in (m for rx in _IMPORTS if (m := rx.match(line))):
            what = m.group("what")
            braced = re.search(r"\{([^}]*)\}", what)
            names = [part.replace(":", " as ").split()[-1] for part in
                     (braced.group(1).split(",") if braced else []) if part.strip()]
            names += re.sub(r"\{[^}]*\}|\*\s*as\b|,", " ", what).split()
            found.update((name, (no, m.group("module"))) for name in names
                         if name.isidentifier() and name != "type")
    return found


def _resolved(test: str, module: str) -> str | None:
    """A relative module's path from the repository's top, without its extension or
    `/index` (None: a package, an alias, a path out of the repository)."""
    if not module.startswith("."):
        return None
    path = posixpath.normpath(posixpath.join(posixpath.dirname(test), module))
    return None if path == ".." or path.startswith("../") else re.sub(
        r"/index$", "", patterns.JS_SCRIPT.sub("", path))


def _stand_in(module: str, path: str | None) -> bool:
    return bool(_STAND_IN.search(module) or (path and (
        "__mocks__" in path.split("/") or patterns.is_test_path(path + ".js"))))


def swapped(f: DiffFile, lines: list[str], exists: Callable[[str], bool]) -> list[tuple[int, str]]:
    """(line, detail) for each name of the code under test a JavaScript test file now takes
    from a stand-in. lines: the file now; exists(path): a file of the tree now."""
    path = f.new or ""
    if not patterns.JS_SCRIPT.search(path) or f.old is None:
        return []
    was, now = _bindings(f.removed), _bindings(enumerate(lines, 1))
    added = {no: text for no, text in f.added}
    found = []
    for name, (_, module) in was.items():
        code = _resolved(f.old, module)
        if code is None or _stand_in(module, code) or not any(
                exists(code + suffix) for suffix in _EXTENSIONS + tuple(
                    f"/index{e}" for e in _EXTENSIONS[1:])):
            continue                         # no code of the project's, or it moved or went
        used = any(patterns.is_assertion(text) and re.search(
            rf"(?<![\w$.]){re.escape(name)}(?![\w$])", text) for text in lines)
        if name in now and now[name][0] in added and _stand_in(
                now[name][1], _resolved(path, now[name][1])) and used:
            found.append((now[name][0], f"{name} now imported from {now[name][1]} instead of "
                          f"{module}: its tests check the stand-in, not the code"))
        elif name not in now and used and (no := next((
                no for no, text in added.items() if re.match(
                    rf"^\s*(?:export\s+)?(?:const|let|var|class|(?:async\s+)?function\*?)\s+"
                    rf"{re.escape(name)}(?![\w$])", text)), None)):
            found.append((no, f"{name} defined in the test instead of imported from {module}: "
                          "its tests check that, not the code"))
    return found


__all__ = ["swapped"]

"""Owns pytest's options file at the top of the tree as the tamper rules read it for which
test files pytest collects: the first of patterns.PYTEST_CONFIGS that is pytest's (pytest.ini
and pytest.toml always, pyproject.toml with [tool.pytest.ini_options] or [tool.pytest],
tox.ini with [pytest], setup.cfg with [tool:pytest]), its `testpaths`, `norecursedirs`
(pytest's default where unset) and the `--ignore` and `--ignore-glob` of its `addopts`; and
what of those keeps a file out of the collection. Paths are taken from the top of the tree,
where pytest is taken to run without arguments. A file pytest would not parse gives nothing.
Test file names (`python_files`), conftest.py's `collect_ignore` and options given on the
command line are not read. Pure functions over texts; knows nothing of git or diffs."""
from __future__ import annotations

import configparser
import fnmatch
import shlex
import tomllib
from typing import Callable

from ralphpy.verify import patterns

NORECURSEDIRS = ["*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv",
                 "{arch}"]
_INI = {"pytest.ini": "pytest", ".pytest.ini": "pytest", "tox.ini": "pytest",
        "setup.cfg": "tool:pytest"}
_KEYS = ("testpaths", "norecursedirs", "addopts")

Settings = dict[str, list[str]]


def _words(value: object) -> list[str]:
    """An option's value as pytest splits it: a list's items, a string's shell words."""
    return [str(v) for v in value] if isinstance(value, list) else shlex.split(str(value))


def _options(name: str, text: str) -> dict | None:
    """The file's pytest options (raw); None when the file is not pytest's. Raises
    configparser.Error or tomllib.TOMLDecodeError when it is not parsed."""
    if name in _INI:
        ini = configparser.ConfigParser(interpolation=None, strict=False)
        ini.read_string(text)
        section = _INI[name]
        return dict(ini[section]) if ini.has_section(section) else (
            {} if name.endswith("pytest.ini") else None)
    table = tomllib.loads(text)
    if name.endswith("pytest.toml"):
        return table.get("pytest", {})
    tool = table.get("tool", {}).get("pytest")
    return None if not isinstance(tool, dict) else tool.get("ini_options", tool)


def read(text_of: Callable[[str], str | None]) -> tuple[str, Settings] | None:
    """The file pytest reads its options from at the top of the tree, and its settings
    (testpaths, norecursedirs, --ignore, --ignore-glob, those it sets); None when no file is
    pytest's or one is not read. text_of(name): a file's text, None when it is not there."""
    for name in patterns.PYTEST_CONFIGS:
        if (text := text_of(name)) is None:
            continue
        try:
            if (found := _options(name, text)) is None:
                continue
            words = {key: _words(found[key]) for key in _KEYS if key in found}
        except (configparser.Error, tomllib.TOMLDecodeError, ValueError):   # pytest's error
            return None
        settings = {key: words[key] for key in ("testpaths", "norecursedirs") if key in words}
        args = words.get("addopts", [])
        for i, arg in enumerate(args):
            for option in ("--ignore", "--ignore-glob"):
                if arg.startswith(option + "="):
                    settings.setdefault(option, []).append(arg[len(option) + 1:])
                elif arg == option and i + 1 < len(args):
                    settings.setdefault(option, []).append(args[i + 1])
        return name, settings
    return None


def _clean(path: str) -> str:
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip("/")


def _prefixes(path: str) -> list[str]:
    """The path's folders from the top, then the path: a/b/c.py gives a, a/b, a/b/c.py."""
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _start(path: str, testpaths: list[str]) -> str | None:
    """The testpaths entry (or the folder a glob of them matches) the path is under ("" the
    top, without testpaths); None when it is under none."""
    if not testpaths:
        return ""
    return next((prefix for prefix in _prefixes(path) for entry in testpaths
                 if fnmatch.fnmatchcase(prefix, _clean(entry))), None)


def keeps_out(config: tuple[str, Settings], path: str) -> str | None:
    """What keeps a file (from the top of the tree) out of pytest's collection, as a finding
    names it (`norecursedirs disabled in pytest.ini`); "" when pytest collects it."""
    name, found = config
    testpaths = found.get("testpaths", [])
    if (start := _start(path, testpaths)) is None:
        return f"testpaths {' '.join(testpaths)} in {name}"
    below = path[len(start) + 1:] if start else path
    rules = found.get("norecursedirs", NORECURSEDIRS)
    for folder in below.split("/")[:-1]:
        hit = next((rule for rule in rules if fnmatch.fnmatch(folder, rule)), None)
        if hit is not None:
            where = f"in {name}" if "norecursedirs" in found else "(pytest's default)"
            return f"norecursedirs {hit} {where}"
    for option in ("--ignore", "--ignore-glob"):         # a folder or the file itself
        for entry in found.get(option, []):
            if any(fnmatch.fnmatch(prefix, _clean(entry)) if option == "--ignore-glob"
                   else prefix == _clean(entry) for prefix in _prefixes(path)):
                return f"addopts {option}={entry} in {name}"
    return ""


__all__ = ["NORECURSEDIRS", "read", "keeps_out"]

"""Owns vitest's configuration file (vitest.config.*, vite.config.*) as the tamper rules read
it: which tests run (`include`, `exclude`, `includeSource`, `dir`, `root` and `projects` of a
`test` block, `include` and `exclude` of its `typecheck`, vite's `root` at the top) and what
coverage measures (`include` and `exclude` of its `coverage`), each entry with its line, and
what a change of them leaves out.

The file is read by js_config.py, which follows its braces, keys and quoted strings, not by
running it. A `test` block counts wherever it is: `defineConfig({ test })`, a function's
result, a `projects` list's entry (the projects' settings are read together). Keys of the same
name in other blocks (`optimizeDeps.exclude`, `server.deps.inline`, `benchmark.include`) are
not these settings. What code builds is not followed: a spread (`...configDefaults.exclude`),
a variable or a call gives no entry of its own (the setting is there, empty; a call's quoted
arguments are entries, `path.join(dir, 'test')` gives `test`), a block defined elsewhere and
given by name (`test: shared`) is not read.

A change leaves out: a change of `test.include` or `test.exclude` that leaves out a file of
the start commit the old settings took for a test (below), the first named: found on
an exclude added that matches it, else on an include removed that did, else on the new include
(one set where vitest's default found the tests); where that cannot tell (an include given by
code, a glob not read, the folder vitest looks in changed) or for other settings, by the text:
an entry added to an exclude that no exclude the file had covers (under `test`, one that
matches a file of the start commit: tests the diff adds, Playwright's say, may be kept out of
vitest's run; under `coverage`, one that names more than test files and type declarations); an
entry of an include or of `projects` that none of the new file covers (one removed leaves
vitest's default); a `dir` that leaves out a JavaScript test file of the start commit, or
without one a root (`test.root`, else vite's `root` when vitest reads it: in a vitest.config.*,
or a file with `test` settings) that does (one given by code, `__dirname`, is taken to be the
configuration's folder).
A glob covers another when it matches the other's text: `**/*.test.ts` covers
`src/**/*.test.ts`; `{a,b}`, `[jt]` and `?(x)` are read, other extglobs are not (covered only
by themselves; an exclude of them is taken to match). Pure functions over the diff's files and
texts; knows nothing of git (runner_configs.py reads both sides once, for tamper.py and
coverage_exclusions.py).

Which files vitest takes for tests by its `test.include` and `test.exclude` (else vitest's
defaults), and which of the start commit's a change of them leaves out: the files matched, not
the globs' texts, are compared. Globs are matched from the folder vitest looks in (`dir`, else
the root); an exclude takes out a file it matches or one under a folder it matches. An exclude
setting replaces vitest's default (a spread of `configDefaults.exclude` is not read: it takes
out nothing here, on both sides). An include given by code, or a glob this cannot read, leaves
the change not known (None), for the caller to judge by the text; so do old settings that take
no file. `projects` and `typecheck` are not read for this."""
from __future__ import annotations

import re
from typing import Callable, Iterable, Mapping

from ralphpy.verify import js_config, patterns
from ralphpy.verify.diff_files import DiffFile
from ralphpy.verify.js_config import Change, Setting

_CONFIG = patterns.file_named(patterns.VITEST_CONFIGS)
_VITEST = patterns.file_named(r"vitest\.config\.[cm]?[jt]s")    # not vite's own
# vitest's defaults: the tests it takes, and what it takes out of them
_INCLUDE = ["**/*.{test,spec}.?(c|m)[jt]s?(x)"]
# vitest 4's default exclude; 3's also took out dist/, cypress/ and tools' config files,
# which hold no test the start commit tracks often enough to tell the two apart
_EXCLUDE = ["**/node_modules/**", "**/.git/**"]
# (block under the innermost `test`, key): the setting's name, as findings name it
_SETTINGS = {((), "include"): "test.include", ((), "exclude"): "test.exclude",
             ((), "includeSource"): "test.includeSource", ((), "dir"): "test.dir",
             ((), "projects"): "test.projects",
             ((), "root"): "test.root",
             (("typecheck",), "include"): "test.typecheck.include",
             (("typecheck",), "exclude"): "test.typecheck.exclude",
             (("coverage",), "include"): "coverage.include",
             (("coverage",), "exclude"): "coverage.exclude"}
# An include left out of the new file: vitest's default (None: everything, coverage's files
# or, without projects, the one project of the whole folder).
_DEFAULT = {"test.include": _INCLUDE, "test.includeSource": [],
            "test.typecheck.include": ["**/*.{test,spec}-d.?(c|m)[jt]s?(x)"],
            "test.projects": None, "coverage.include": None}


def _matchers(found: Mapping[str, Setting], name: str,
              default: list[str]) -> list[Callable[[str], bool] | None] | None:
    """The setting's globs as matchers (None for one this cannot read); None when an
    include is given by code."""
    if name not in found:
        return [js_config.matcher(glob) for glob in default]
    if name == "test.include" and not found[name].entries:
        return None
    return [js_config.matcher(glob) for glob in js_config.texts(found, name)]


def _excluded(matches: Callable[[str], bool], path: str) -> bool:
    """An exclude glob takes out the path: it matches it or a folder of it."""
    parts = path.split("/")
    return any(matches("/".join(parts[:i])) for i in range(1, len(parts) + 1))


def _include_exclude(found: Mapping[str, Setting]) -> tuple[list, list] | None:
    """The include and exclude matchers vitest's settings give; None when this cannot read
    one (an include given by code, a glob not read)."""
    include = _matchers(found, "test.include", _INCLUDE)
    exclude = _matchers(found, "test.exclude", _EXCLUDE)
    if include is None or exclude is None or None in include + exclude:
        return None
    return include, exclude


def _takes(found: Mapping[str, Setting]) -> Callable[[str], bool] | None:
    """Whether vitest takes a file (relative to the folder it looks in) for a test; None
    when this cannot tell."""
    if (read := _include_exclude(found)) is None:
        return None
    include, exclude = read
    return lambda path: (any(m(path) for m in include)
                         and not any(_excluded(m, path) for m in exclude))


def _kept_out_by(found: Mapping[str, Setting], path: str) -> str | None:
    """What keeps a file (relative to the folder vitest looks in) out of vitest's tests, as
    a finding names it (`test.exclude legacy/**`, `test.include src/**/*.test.ts`); "" when
    vitest takes it; None when this cannot tell."""
    if (read := _include_exclude(found)) is None:
        return None
    include, exclude = read
    globs = js_config.texts(found, "test.exclude") if "test.exclude" in found else _EXCLUDE
    hit = next((glob for glob, m in zip(globs, exclude) if _excluded(m, path)), None)
    if hit is not None:
        return f"test.exclude {hit}"
    if not any(m(path) for m in include):
        return f"test.include {', '.join(js_config.texts(found, 'test.include') or _INCLUDE)}"
    return ""


def tests_left_out(old: Mapping[str, Setting], new: Mapping[str, Setting],
             files: list[str]) -> list[str] | None:
    """The files (JavaScript and TypeScript of the start commit, relative to the folder
    vitest looks in) vitest took for tests with the old settings and does not with the new;
    None when this cannot tell, or when the old settings took none."""
    return js_config.left_out(_takes(old), _takes(new), files)


def _matched(glob: str, left: list[str], exclude: bool) -> list[str] | None:
    """The files of `left` an include glob (or an exclude glob, by a folder too) matches;
    None when this cannot read the glob."""
    matches = js_config.matcher(glob)
    if matches is None:
        return None
    return [p for p in left if (_excluded(matches, p) if exclude else matches(p))]


def is_config(path: str) -> bool:
    return bool(_CONFIG.search(path))


def reads_tests(path: str, names: Iterable[str]) -> bool:
    """vitest reads which tests to run from this configuration (its setting names): a
    vitest.config.* (vitest's defaults apply where it sets nothing), or settings under `test`
    (a vite.config.* may have none)."""
    return bool(_VITEST.search(path)) or any(n.startswith("test.") for n in names)


def _setting(blocks: list, key: str) -> str | None:
    if "test" not in blocks:
        return "root" if key == "root" and blocks == [None] else None     # vite's root
    below = tuple(blocks[len(blocks) - blocks[::-1].index("test"):])
    return _SETTINGS.get((below, key))


def settings(text: str) -> dict[str, Setting]:
    """The file's settings this module reads, by name (test.include, coverage.exclude, ...),
    each with its quoted entries; a setting given by code is there without entries."""
    return js_config.settings(text, _setting)


def _folder(setting: Setting | None) -> str | None:
    """A dir setting's folder from its quoted parts ("" for none; None when code gives it)."""
    if setting is None:
        return ""
    if not setting.entries:
        return None
    folder = re.sub(r"^(?:\./)+|/+$", "", "/".join(text for _, text in setting.entries))
    return "" if folder == "." else folder


def _scan_folder(found: Mapping[str, Setting], root: bool) -> str | None:
    """Where vitest looks for test files, from the configuration's folder: `dir`, else the
    root (`test.root`, else vite's `root` when it is vitest's: `root`); a root given by code
    (`__dirname`) is taken to be that folder."""
    if "test.dir" in found:
        return _folder(found["test.dir"])
    setting = found.get("test.root") or (found.get("root") if root else None)
    return _folder(setting) if setting is None or setting.entries else ""


def _no_code(glob: str) -> bool:
    """A coverage exclude of test files or type declarations only: it hides no code."""
    globs = js_config.expand(glob)
    return bool(globs) and all(g.endswith(".d.ts") or patterns.is_test_path(g) for g in globs)


def _drops_tests(config: str, was: str | None, now: str | None,
                 existed: Callable[[], Iterable[str]]) -> bool:
    """A JavaScript test file of the start commit (js_config.js_tests) under the
    configuration's folder that the old folder (`dir`, root) held and the new one does not."""
    if now is None or ".." in now.split("/"):
        return True
    return any((not was or rel.startswith(was + "/")) and not rel.startswith(now + "/")
               for rel in js_config.js_tests(js_config.in_folder(config, existed())))


def _left(config: str, old: Mapping[str, Setting], new: Mapping[str, Setting],
          existed: Callable[[], Iterable[str]], root: bool) -> tuple[str, list[str]] | None:
    """The folder vitest looks in (from the configuration's) and the start commit's files
    there (relative to it) that a change of test.include or test.exclude leaves out; None
    when neither changed, the folder did or is not known, or the files taken cannot be told."""
    names = ("test.include", "test.exclude")
    if all((n in old, js_config.texts(old, n)) == (n in new, js_config.texts(new, n))
           for n in names):
        return None
    folder = _scan_folder(old, root)
    if folder is None or folder != _scan_folder(new, root) or ".." in folder.split("/"):
        return None
    files = js_config.under(folder, js_config.in_folder(config, existed()))
    left = tests_left_out(old, new, files)
    return None if left is None else (folder, left)


def _named(config: str, folder: str, left: list[str] | None) -> str | None:
    """How a finding ends, naming the first of `left` (None: no finding when it is empty)."""
    if not left:
        return None
    return js_config.naming(config, [f"{folder}/{left[0]}" if folder else left[0]])


def changes(f: DiffFile, old: Mapping[str, Setting], new: Mapping[str, Setting],
            existed: Callable[[], Iterable[str]]) -> list[Change]:
    """What a diff's file leaves out of the test run and of coverage, from its settings as
    the diff started and now. existed: the start commit's files, for an exclude under `test`;
    test.include and test.exclude are judged by the files they take (tests_left_out) where
    it can tell."""
    added = {no for no, _ in f.added}
    config = f.new or f.old or ""
    root = reads_tests(f.new or "", [*old, *new])
    by_files = _left(config, old, new, existed, root)
    folder, left = by_files or ("", [])
    found, named = [], set()
    for name, setting in new.items():
        had = js_config.texts(old, name)
        for no, text in setting.entries:
            if not (name.endswith(".exclude") and no in added
                    and not any(js_config.covers(h, text) for h in had)
                    and not (name == "coverage.exclude" and _no_code(text))):
                continue
            if by_files and name == "test.exclude":
                ends = _named(config, folder, hit := _matched(text, left, True))
                named.update(hit or [])
            else:
                ends = None if name.startswith("test.") and not \
                    js_config.matches_any(text, existed()) else ""
            if ends is not None:
                found.append(Change(f.new, no, name, f"{name} {text}{ends}"))
    for name, setting in old.items():
        if name in _DEFAULT:
            now = [t for _, t in new[name].entries] if name in new else _DEFAULT[name]
            for no, text in setting.entries:
                if now is None or any(js_config.covers(n, text) for n in now):
                    continue
                ends = ""
                if by_files and name == "test.include":
                    ends = _named(config, folder, hit := _matched(text, left, False))
                    named.update(hit or [])
                if ends is not None:
                    found.append(Change(f.old or f.new, no, name, f"{name} {text} removed{ends}"))
    found += _narrowed(config, new, folder, [p for p in left if p not in named])
    was, now = _scan_folder(old, root), _scan_folder(new, root)
    if now != was and now != "" and not (now and was and was.startswith(now + "/")) \
            and _drops_tests(f.new or "", was, now, existed):
        name = next(n for n in ("test.dir", "test.root", "root") if n in new)
        found.append(Change(f.new, new[name].line, name,
                            f"{name} {'(set by code)' if now is None else now}"))
    return js_config.one_a_line(found)


def _narrowed(config: str, new: Mapping[str, Setting], folder: str,
              left: list[str]) -> list[Change]:
    """A test the change leaves out that no exclude added nor include removed matches (an
    include set where vitest's default found the tests): found on the new include."""
    name = next((n for n in ("test.include", "test.exclude") if n in new), None)
    if not left or name is None:
        return []
    line = new[name].first_line
    what = ", ".join(js_config.texts(new, name)) or "(set by code)"
    return [Change(config, line, name, f"{name} {what}{_named(config, folder, left)}")]


def keeps_out(config: str, found: Mapping[str, Setting], path: str) -> str | None:
    """What keeps a file (from the repository's top) out of the tests vitest runs with this
    configuration's settings, as a finding names it; "" when vitest takes it; None when this
    cannot tell (`projects`, a folder or an include given by code, a glob not read)."""
    root = reads_tests(config, found)
    folder = _scan_folder(found, root)
    if "test.projects" in found or folder is None or ".." in folder.split("/"):
        return None
    rel = next(iter(js_config.in_folder(config, [path])), None)
    if rel is None:
        return f"not under the folder of {config}"
    if folder and not rel.startswith(folder + "/"):
        return f"{next(n for n in ('test.dir', 'test.root', 'root') if n in found)} {folder}"
    why = _kept_out_by(found, rel[len(folder) + 1:] if folder else rel)
    return why and f"{why} in {config}"


def selections(changes: list[Change]) -> list[tuple[str, int, str]]:
    """(path, line, what) of each test a vitest configuration's changes leave out of the
    run."""
    return [(c.path, c.line, c.what) for c in changes if not c.setting.startswith("coverage.")]


def coverage(changes: list[Change]) -> list[Change]:
    """The changes that take code out of coverage."""
    return [c for c in changes if c.setting.startswith("coverage.")]


__all__ = ["Change", "Setting", "is_config", "settings", "changes", "keeps_out", "selections",
           "coverage", "tests_left_out"]

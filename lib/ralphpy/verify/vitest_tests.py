"""Owns which files vitest takes for tests by its `test.include` and `test.exclude` (else
vitest's defaults), and which of the start commit's a change of them leaves out: the files
matched, not the globs' texts, are compared. Globs are read as js_config.py reads them and
matched from the folder vitest looks in (`dir`, else the root); an exclude takes out a file it
matches or one under a folder it matches. An exclude setting replaces vitest's default (a
spread of `configDefaults.exclude` is not read: it takes out nothing here, on both sides). An
include given by code, or a glob this cannot read, leaves the change not known (None), for the
caller to judge by the text; so do old settings that take no file. `projects` and `typecheck`
are not read here. Pure functions over settings and paths; knows nothing of diffs or git."""
from __future__ import annotations

from typing import Callable, Mapping

from ralphpy.verify import js_config
from ralphpy.verify.js_config import Setting

INCLUDE = ["**/*.{test,spec}.?(c|m)[jt]s?(x)"]
# vitest 4's default exclude; 3's also took out dist/, cypress/ and tools' config files,
# which hold no test the start commit tracks often enough to tell the two apart
EXCLUDE = ["**/node_modules/**", "**/.git/**"]


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
    include = _matchers(found, "test.include", INCLUDE)
    exclude = _matchers(found, "test.exclude", EXCLUDE)
    if include is None or exclude is None or None in include + exclude:
        return None
    return include, exclude


def _runs(found: Mapping[str, Setting]) -> Callable[[str], bool] | None:
    """Whether vitest takes a file (relative to the folder it looks in) for a test; None
    when this cannot tell."""
    if (read := _include_exclude(found)) is None:
        return None
    include, exclude = read
    return lambda path: (any(m(path) for m in include)
                         and not any(_excluded(m, path) for m in exclude))


def keeps_out(found: Mapping[str, Setting], path: str) -> str | None:
    """What keeps a file (relative to the folder vitest looks in) out of vitest's tests, as
    a finding names it (`test.exclude legacy/**`, `test.include src/**/*.test.ts`); "" when
    vitest takes it; None when this cannot tell."""
    if (read := _include_exclude(found)) is None:
        return None
    include, exclude = read
    globs = js_config.texts(found, "test.exclude") if "test.exclude" in found else EXCLUDE
    hit = next((glob for glob, m in zip(globs, exclude) if _excluded(m, path)), None)
    if hit is not None:
        return f"test.exclude {hit}"
    if not any(m(path) for m in include):
        return f"test.include {', '.join(js_config.texts(found, 'test.include') or INCLUDE)}"
    return ""


def left_out(old: Mapping[str, Setting], new: Mapping[str, Setting],
             files: list[str]) -> list[str] | None:
    """The files (JavaScript and TypeScript of the start commit, relative to the folder
    vitest looks in) vitest took for tests with the old settings and does not with the new;
    None when this cannot tell, or when the old settings took none."""
    return js_config.left_out(_runs(old), _runs(new), files)


def matched(glob: str, left: list[str], exclude: bool) -> list[str] | None:
    """The files of `left` an include glob (or an exclude glob, by a folder too) matches;
    None when this cannot read the glob."""
    matches = js_config.matcher(glob)
    if matches is None:
        return None
    return [p for p in left if (_excluded(matches, p) if exclude else matches(p))]


__all__ = ["INCLUDE", "EXCLUDE", "keeps_out", "left_out", "matched"]

"""Owns the tamper rule on a test file moved out of its runner's run: a JavaScript test file of
the start commit that the diff renames (git's rename detection) keeping a test's name, which
its runner's configuration (vitest's, jest's: the nearest file above it that configures the
runner) took at its old path as the start commit had it, and which the configuration as the
session left it (the nearest above the new path, else the old one) does not take at its new
path: an exclude or ignore pattern it now falls under, an include, testMatch or testRegex it
left, a folder (`dir`, roots) it is no longer under. Judged with the settings now, a move and
the exclusion added for it in the same diff are found together; a move the configuration
follows, or one to a place it still takes, is none. A configuration this cannot read (given by
code, a glob or a regular expression not read) gives no finding, and a file renamed to a name
no runner takes is patterns.renamed_away's. Knows nothing of git: tamper.py gives the texts."""
from __future__ import annotations

from types import ModuleType
from typing import Callable, Iterable, Mapping

from ralphkit.verify import jest_config, js_config, patterns, runner_configs, vitest_config
from ralphkit.verify.diff_files import DiffFile
from ralphkit.verify.js_config import Setting

_Configs = dict[str, tuple[ModuleType, dict[str, Setting]]]


def _runner(rule: ModuleType, path: str, found: Mapping[str, Setting]) -> bool:
    """The file configures the runner: a file only it reads (its defaults apply where it sets
    nothing), or settings that choose tests (a vite.config.*, a package.json may be none)."""
    return path.rpartition("/")[2].startswith(("vitest.config.", "jest.config.")) or any(
        n in jest_config.TESTS if rule is jest_config else n.startswith("test.") for n in found)


def _folders(path: str) -> list[str]:
    """The folders above a path, nearest first ("" the repository's top)."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(len(parts), -1, -1)]


def _read(paths: Iterable[str], near: set[str], read: Callable[[str], str]) -> _Configs:
    """The runner configurations among `paths` in the folders `near`, parsed."""
    return {p: parsed for p in paths if p and p.rpartition("/")[0] in near
            and (jest_config.is_config(p) or vitest_config.is_config(p))
            and (parsed := runner_configs.parse(p, read(p)))}


def _nearest(configs: _Configs, rule: ModuleType, path: str) -> str | None:
    """The configuration of a runner nearest above a path (its vitest.config.* before a
    vite.config.*, its jest.config.* before package.json)."""
    for folder in _folders(path):
        found = sorted((p.endswith("package.json"), "/vite." in f"/{p}", p)
                       for p, (r, s) in configs.items()
                       if r is rule and p.rpartition("/")[0] == folder and _runner(r, p, s))
        if found:
            return found[0][2]
    return None


def out_of_run(files: list[DiffFile], read_now: Callable[[str], str], olds: Mapping[str, str],
               existed: Callable[[], Iterable[str]]) -> list[tuple[str, str]]:
    """(old path, what) of each test file the diff moves out of its runner's run.
    read_now(path): a file's text now; olds: a changed file's text as the diff started, by
    its old path; existed: the start commit's files."""
    moved = [(f.old, f.new) for f in files if f.old and f.new and f.old != f.new
             and js_config.js_tests([f.old]) and js_config.scripts([f.new])
             and not patterns.renamed_away(f.old, f.new)]
    if not moved:
        return []
    near = {d for old, new in moved for d in _folders(old) + _folders(new)}
    deleted = {f.old: "\n".join(t for _, t in f.removed) for f in files if f.old and not f.new}
    start = _read(existed(), near, lambda p: deleted[p] if p in deleted else olds[p] if p in olds
                  else read_now(p))
    now = _read(set(existed()).difference(f.old for f in files if f.old)
                | {f.new for f in files if f.new}, near, read_now)
    found = []
    for old, new in moved:
        for rule in (vitest_config, jest_config):
            was = _nearest(start, rule, old)
            if was is None or rule.keeps_out(was, start[was][1], old) != "":
                continue
            config = _nearest(now, rule, new) or (was if was in now else None)
            why = None if config is None else rule.keeps_out(config, now[config][1], new)
            if why:
                found.append((old, f"test file moved out of the run to {new} ({why})"))
                break
    return found


__all__ = ["out_of_run"]

"""Owns the tamper rule on a test file moved out of its runner's run: a test file of the start
commit that the diff renames (git's rename detection) keeping a test's name, which its runner
took at its old path by the configuration the start commit had, and does not take at its new
path by the configuration as the session left it. JavaScript: vitest's and jest's, the nearest
file above the test that configures the runner (above the new path now, else the old one's
file), their excludes and ignore patterns, includes, testMatch, testRegex and folders (`dir`,
roots); Python: pytest's options file at the top of the tree, its testpaths, norecursedirs and
addopts' --ignore and --ignore-glob. Judged with the settings now, a move and the exclusion
added for it in the same diff are found together; a move the configuration follows, or one to
a place it still takes, is none. A configuration this cannot read (given by code, a glob or a
regular expression not read) gives no finding, and a file renamed to a name no runner takes
is patterns.renamed_away's. Knows nothing of git: tamper.py gives the texts."""
from __future__ import annotations

from types import ModuleType
from typing import Callable, Iterable

from ralphpy.verify import (diff_files, jest_config, js_config, patterns, pytest_config,
                             runner_configs, vitest_config)
from ralphpy.verify.diff_files import DiffFile
from ralphpy.verify.js_config import Setting

_Configs = dict[str, tuple[ModuleType, dict[str, Setting]]]


def _folders(path: str) -> list[str]:
    """The folders above a path, nearest first ("" the repository's top)."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(len(parts), -1, -1)]


def _read(paths: Iterable[str], near: set[str], read: Callable[[str], str | None]) -> _Configs:
    """The runner configurations among `paths` in the folders `near`, parsed."""
    return {p: parsed for p in paths if p and p.rpartition("/")[0] in near
            and (jest_config.is_config(p) or vitest_config.is_config(p))
            and (parsed := runner_configs.parse(p, read(p) or ""))}


def _nearest(configs: _Configs, rule: ModuleType, path: str) -> str | None:
    """The configuration of a runner nearest above a path (its vitest.config.* before a
    vite.config.*, its jest.config.* before package.json)."""
    for folder in _folders(path):
        found = sorted((p.endswith("package.json"), "/vite." in f"/{p}", p)
                       for p, (r, s) in configs.items()
                       if r is rule and p.rpartition("/")[0] == folder and r.reads_tests(p, s))
        if found:
            return found[0][2]
    return None


def _texts(files: list[DiffFile], paths: tuple[set[str], set[str]],
           read_now: Callable[[str], str]) -> tuple[Callable[[str], str | None], ...]:
    """A file's text as the diff started, and now; None where the file is not there
    (paths: the files then and now)."""
    was = {f.old: f for f in files if f.old}

    def start(path: str) -> str | None:
        f = was.get(path)
        if f is None:
            return read_now(path) if path in paths[0] else None
        return ("\n".join(t for _, t in f.removed) if f.new is None
                else diff_files.before(f, read_now(f.new)))
    return start, lambda path: read_now(path) if path in paths[1] else None


def _js(moved: list[tuple[str, str]], start: Callable[[str], str | None],
        now: Callable[[str], str | None], paths: tuple[Iterable[str], Iterable[str]]):
    """(old path, new path, what keeps it out) of each JavaScript test moved out of its run."""
    near = {d for old, new in moved for d in _folders(old) + _folders(new)}
    was, is_ = _read(paths[0], near, start), _read(paths[1], near, now)
    for old, new in moved:
        for rule in (vitest_config, jest_config):
            config = _nearest(was, rule, old)
            if config is None or rule.keeps_out(config, was[config][1], old) != "":
                continue
            now_config = _nearest(is_, rule, new) or (config if config in is_ else None)
            if now_config and (why := rule.keeps_out(now_config, is_[now_config][1], new)):
                yield old, new, why
                break


def _py(moved: list[tuple[str, str]], start: Callable[[str], str | None],
        now: Callable[[str], str | None]):
    """(old path, new path, what keeps it out) of each Python test pytest no longer collects."""
    was, is_ = pytest_config.read(start), pytest_config.read(now)
    for old, new in moved:
        if was and is_ and pytest_config.keeps_out(was, old) == "" and (
                why := pytest_config.keeps_out(is_, new)):
            yield old, new, why


def out_of_run(files: list[DiffFile], read_now: Callable[[str], str],
               existed: Callable[[], Iterable[str]]) -> list[tuple[str, str]]:
    """(old path, what) of each test file the diff moves out of its runner's run.
    read_now(path): a file's text now; existed: the start commit's files."""
    moved = [(f.old, f.new) for f in files if f.old and f.new and f.old != f.new
             and patterns.is_test_path(f.old) and not patterns.renamed_away(f.old, f.new)]
    js = [(old, new) for old, new in moved
          if js_config.js_tests([old]) and js_config.scripts([new])]
    py = [(old, new) for old, new in moved if old.endswith(".py") and new.endswith(".py")]
    if not js and not py:
        return []
    then = set(existed())
    paths = (then, then.difference(f.old for f in files if f.old) | {f.new for f in files if f.new})
    start, now = _texts(files, paths, read_now)
    return [(old, f"test file moved out of the run to {new} ({why})") for old, new, why in
            [*(_js(js, start, now, paths) if js else ()), *_py(py, start, now)]]


__all__ = ["out_of_run"]

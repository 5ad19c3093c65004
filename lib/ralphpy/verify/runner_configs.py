"""Owns the diff's JavaScript runner configurations (vitest's, jest's) as every tamper rule
reads them: each changed configuration file parsed once, its settings as the diff started and
now, and what their change leaves out (vitest_config.py's and jest_config.py's rules), which
coverage_exclusions.py reads for coverage and tamper.py for which tests run.

A runner reads its configuration from one of several files of a folder (jest from
jest.config.* or package.json's "jest" object, vitest from vitest.config.* or vite.config.*):
when the diff moves it from one to another (the settings one file had are gone from it, and
another file of the same folder that had none has some), the settings compared are where the
runner read them before and where it reads them now, as one file's: a faithful move is no
finding, a narrowing hidden in it is. Its findings name the file the configuration moved to,
and the one it left for what was removed. Pure functions over the diff's files and texts;
knows nothing of git (tamper.py reads both sides)."""
from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Callable, Iterable, Mapping

from ralphpy.verify import jest_config, vitest_config
from ralphpy.verify.diff_files import DiffFile
from ralphpy.verify.js_config import Change, Setting


@dataclass(frozen=True)
class Config:
    """A runner's configuration file of the diff, read once."""
    file: DiffFile                        # a move's: the old side the file the settings left
    rule: ModuleType                      # vitest_config or jest_config
    new: Mapping[str, Setting]            # as the session left it
    changes: list[Change]                 # what their change leaves out
    moved: bool = False                   # its settings came from, or went to, another file


def _rule(path: str) -> ModuleType | None:
    return (vitest_config if vitest_config.is_config(path)
            else jest_config if jest_config.is_config(path) else None)


def _settings(rule: ModuleType, path: str, text: str) -> dict[str, Setting]:
    return rule.settings(path, text) if rule is jest_config else rule.settings(text)


def parse(path: str, text: str) -> tuple[ModuleType, dict[str, Setting]] | None:
    """A runner configuration file's rule (vitest_config or jest_config) and its settings
    from its text; None for a file no runner reads its configuration from."""
    rule = _rule(path)
    return None if rule is None else (rule, _settings(rule, path, text))


def read(files: list[DiffFile], read_new: Callable[[str], str], olds: Mapping[str, str],
         existed: Callable[[], Iterable[str]]) -> dict[str, Config]:
    """The diff's runner configurations, by their path now. read_new(path): a file's text
    now; olds: a file's text as the diff started, by its old path (a deleted file's is its
    removed lines); existed: the start commit's files."""
    parsed: list[tuple[DiffFile, ModuleType, dict, dict]] = []
    for f in files:
        if not (rule := _rule(f.new or f.old or "")):
            continue
        old_text = olds.get(f.old or "") or ("\n".join(t for _, t in f.removed) if not f.new
                                             else "")
        parsed.append((f, rule, _settings(rule, f.old or f.new or "", old_text),
                       _settings(rule, f.new, read_new(f.new)) if f.new else {}))
    compared = {f.new: (f, rule, old, new, False) for f, rule, old, new in parsed if f.new}
    for (f, rule, old, _), (g, _, _, new) in _moves(parsed):     # as one file's: the move's
        compared[g.new] = (DiffFile(f.old, g.new, removed=f.removed + g.removed, added=g.added),
                           rule, old, new, True)
        if f.new:
            compared[f.new] = (f, rule, {}, {}, True)   # its settings went: nothing to compare
    return {path: Config(f, rule, new, rule.changes(f, old, new, existed) if old or new else [],
                         moved)
            for path, (f, rule, old, new, moved) in compared.items()}


def _moves(parsed: list[tuple[DiffFile, ModuleType, dict, dict]]) -> list[tuple]:
    """(the file a runner's settings left, the one of its folder they went to) for each
    folder where one file's settings are gone and another's are new."""
    left = {(f.old.rpartition("/")[0], rule): entry for entry in parsed
            for f, rule, old, new in [entry] if f.old and old and not new}
    return [(left[key], entry) for entry in parsed for f, rule, old, new in [entry]
            if f.new and new and not old
            and (key := (f.new.rpartition("/")[0], rule)) in left and left[key][0] is not f]


def thresholds_file(configs: Mapping[str, Config], f: DiffFile) -> DiffFile | None:
    """The file whose coverage thresholds are compared for a file of the diff: for the one a
    runner's settings left, the move (its new side the file they went to); none for that
    one; else the file itself."""
    for c in configs.values():
        if c.moved and c.new and f.old and c.file.old == f.old:
            return c.file
        if c.moved and c.new and f.new and c.file.new == f.new:
            return None
    return f


def selections(configs: Mapping[str, Config],
               existed: Callable[[], Iterable[str]]) -> list[tuple[str, int, str]]:
    """(path, line, what) of each change of the configurations to which tests run."""
    return [found for c in configs.values() if c.rule is vitest_config
            for found in vitest_config.selections(c.changes)] + [
        found for c in configs.values() if c.rule is jest_config
        for found in jest_config.selections(c.file, c.new, c.changes, existed)]


def coverage(configs: Mapping[str, Config]) -> dict[str, list[Change]]:
    """The changes that take code out of coverage, by the configuration's path now."""
    return {path: c.rule.coverage(c.changes) for path, c in configs.items()}


__all__ = ["Config", "parse", "read", "selections", "coverage", "thresholds_file"]

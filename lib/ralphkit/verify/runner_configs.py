"""Owns the diff's JavaScript runner configurations (vitest's, jest's) as every tamper rule
reads them: each changed configuration file parsed once, its settings as the diff started and
now, and what their change leaves out (vitest_config.py's and jest_config.py's rules), which
coverage_exclusions.py reads for coverage and tamper.py for which tests run. Pure functions
over the diff's files and texts; knows nothing of git (tamper.py reads both sides)."""
from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Callable, Iterable, Mapping

from ralphkit.verify import jest_config, vitest_config
from ralphkit.verify.diff_files import DiffFile
from ralphkit.verify.js_config import Change, Setting


@dataclass(frozen=True)
class Config:
    """A runner's configuration file of the diff, read once."""
    file: DiffFile
    rule: ModuleType                      # vitest_config or jest_config
    old: Mapping[str, Setting]            # as the diff started
    new: Mapping[str, Setting]            # as the session left it
    changes: list[Change]                 # what their change leaves out


def _rule(path: str) -> ModuleType | None:
    return (vitest_config if vitest_config.is_config(path)
            else jest_config if jest_config.is_config(path) else None)


def _settings(rule: ModuleType, path: str, text: str) -> dict[str, Setting]:
    return rule.settings(path, text) if rule is jest_config else rule.settings(text)


def read(files: list[DiffFile], read_new: Callable[[str], str], olds: Mapping[str, str],
         existed: Callable[[], Iterable[str]]) -> dict[str, Config]:
    """The diff's runner configurations, by their path now. read_new(path): a file's text
    now; olds: a file's text as the diff started, by its old path; existed: the start
    commit's files."""
    found: dict[str, Config] = {}
    for f in files:
        if not f.new or not (rule := _rule(f.new)):
            continue
        old = _settings(rule, f.old or f.new, olds.get(f.old or "") or "")
        new = _settings(rule, f.new, read_new(f.new))
        found[f.new] = Config(f, rule, old, new, rule.changes(f, old, new, existed))
    return found


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


__all__ = ["Config", "read", "selections", "coverage"]

"""Owns the tamper rule on code taken out of coverage measurement: a coverage threshold
(patterns.thresholds) holds however little is tested when the untested code is excluded
instead. Findings:
- a marker comment added to a line of any file but documentation: coverage.py's
  `# pragma: no cover` and `# pragma: no branch`, istanbul's, c8's and v8's `ignore` comments
  (`/* istanbul ignore next */`); unless the same line was removed elsewhere in the diff
  (code moved), or it marks a `__main__` or `TYPE_CHECKING` guard (`if __name__ ==
  "__main__":`, `if TYPE_CHECKING:`: lines coverage.py's documentation suggests excluding);
- an entry added to an exclusion setting of a coverage configuration file: coverage.py's
  `omit`, `exclude_lines` and `exclude_also` (.coveragerc, setup.cfg, tox.ini, pyproject.toml),
  `exclude` in nyc's and c8's files, jest's `coveragePathIgnorePatterns` or a negation in its
  `collectCoverageFrom` (package.json's "jest", jest.config.*; jest_config.py reads them), and
  vitest's `coverage.exclude`, or an entry of its `coverage.include` or jest's
  `collectCoverageFrom` dropped (vitest_config.py reads its blocks: an `exclude` under `test`
  selects tests, tamper.py's); runner_configs.py reads those files once for both rules and
  hands this one their coverage changes. Entries are compared with the file as the diff
  started, so an entry moved or a list reformatted is none.
Pure functions over the diff's files and texts; knows nothing of git (tamper.py reads both
sides)."""
from __future__ import annotations

import re
from typing import Callable, Mapping

from ralphpy.verify import jest_config, patterns, vitest_config
from ralphpy.verify.diff_files import DiffFile
from ralphpy.verify.js_config import Change

_MARKER = re.compile(r"(?P<py>#\s*pragma:?\s*no\s*(?:cover|branch))\b"
                     r"|(?:/\*|//)\s*(?P<js>(?:istanbul|c8|v8)\s+ignore)\b", re.IGNORECASE)
_PROSE = re.compile(r"\.(?:md|rst|txt|adoc)$")     # documentation may quote a marker
_IDIOM = re.compile(r"""^\s*if\s+(?:__name__\s*==\s*["']__main__["']|(?:typing\.)?TYPE_CHECKING)"""
                    r"\s*:")
# coverage.py's own files, not pytest's (coverage.py reads .coveragerc, never pytest.ini): the
# INI ones, then pyproject.toml (quoted entries); the last ones give `exclude`.
_INI = patterns.file_named(r"\.coveragerc", r"setup\.cfg", r"tox\.ini")
_CONFIG = patterns.file_named(r"pyproject\.toml")
_JS_CONFIG = patterns.file_named(r"\.nycrc(?:\.json|\.ya?ml)?", r"\.c8rc(?:\.json)?")
_KEYS = frozenset({"omit", "exclude_lines", "exclude_also"})
_KEY = re.compile(r"""^\s*["']?(?P<key>[A-Za-z_][\w.-]*)["']?\s*(?:=|:(?!:))\s*(?P<value>.*)$""")
_QUOTED = re.compile(r"""(["'])((?:\\.|(?!\1).)*)\1""")
_COMMENT = re.compile(r"^\s*(?:#|;|//)")
_TABLE = re.compile(r"^\s*\[\[?[\w.\-\"' ]+\]\]?\s*$")        # TOML's [tool.coverage.run]


def is_config(path: str) -> bool:
    """A coverage configuration file this rule reads (its old text too)."""
    return bool(_INI.search(path) or _CONFIG.search(path) or _JS_CONFIG.search(path)
                or vitest_config.is_config(path) or jest_config.is_config(path))


def settings(path: str, lines: list[str]) -> dict[int, tuple[str, list[str]]]:
    """The lines (numbered from 1) of a file's exclusion settings, each with its setting and
    the entries it gives. A setting goes on over the lines after it until another key (or, in
    an INI file, a line that is not indented); comments give nothing."""
    ini, keys = bool(_INI.search(path)), _KEYS | ({"exclude"} if _JS_CONFIG.search(path) else set())
    found: dict[int, tuple[str, list[str]]] = {}
    current = None
    for no, line in enumerate(lines, 1):
        if not line.strip() or _COMMENT.match(line):
            continue
        if (m := _KEY.match(line)) and not (ini and line[:1].isspace()):
            current, value = (m.group("key") if m.group("key") in keys else None), m.group("value")
        elif (ini and not line[:1].isspace()) or _TABLE.match(line):
            current, value = None, ""                 # a section header ends the setting
        else:
            value = line
        if current is None:
            continue
        if ini:                                       # coverage.py: one entry a line, or a
            entries = [part.strip() for part in      # comma-separated list of file patterns
                       (value.split(",") if current == "omit" else [value]) if part.strip()]
        else:
            entries = [text for _, text in _QUOTED.findall(value)]
        if entries:
            found[no] = (current, entries)
    return found


def changes(files: list[DiffFile], read_new: Callable[[str], str], olds: Mapping[str, str],
            runners: Mapping[str, list[Change]]) -> list[tuple[str, int, str]]:
    """(path, line, detail) of each exclusion the diff adds. read_new(path): the file's text
    now; olds: a configuration file's text as the diff started, by its old path; runners: a
    JavaScript runner's configuration's changes that take code out of coverage, by its path
    now (runner_configs.coverage: an exclusion of no file of the start commit, or of tests
    only, hides no code)."""
    removed = {text.strip() for f in files for _, text in f.removed}
    found = []
    for f in files:
        if f.new is None:
            continue
        for no, text in ([] if _PROSE.search(f.new) else f.added):
            if (m := _MARKER.search(text)) and text.strip() not in removed \
                    and not _IDIOM.match(text):
                found.append((f.new, no, "coverage exclusion added: "
                              f"{m.group('py') or m.group('js')}"))
        if f.new in runners:
            found += [(c.path, c.line, f"coverage exclusion added: {c.what}")
                      for c in runners[f.new]]
            continue                             # also an include's entry dropped, no line added
        if not is_config(f.new) or not f.added:
            continue
        had = {(key, entry) for key, entries in
               settings(f.old or "", (olds.get(f.old or "") or "").split("\n")).values()
               for entry in entries}
        now = settings(f.new, read_new(f.new).split("\n"))
        for no, _ in f.added:
            key, entries = now.get(no, ("", []))
            new = [entry for entry in entries if (key, entry) not in had]
            if new:
                found.append((f.new, no, f"coverage exclusion added: {key} {new[0][:120]}"))
    return found


__all__ = ["is_config", "settings", "changes"]

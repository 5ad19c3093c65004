"""Owns the tamper rule on code taken out of coverage measurement in the code itself: a
marker comment added to a line of any file but documentation: coverage.py's
`# pragma: no cover` and `# pragma: no branch`, istanbul's, c8's and v8's `ignore` comments
(`/* istanbul ignore next */`); unless the same line was removed elsewhere in the diff (code
moved), or it marks a `__main__` or `TYPE_CHECKING` guard (lines coverage.py's documentation
suggests excluding). A coverage configuration is on the test side (verify.test_side) and is
taken from the session's start by the second run instead. Pure functions over the diff."""
from __future__ import annotations

import re

from ralphpy.verify.diff_files import DiffFile

_MARKER = re.compile(r"(?P<py>#\s*pragma:?\s*no\s*(?:cover|branch))\b"
                     r"|(?:/\*|//)\s*(?P<js>(?:istanbul|c8|v8)\s+ignore)\b", re.IGNORECASE)
_PROSE = re.compile(r"\.(?:md|rst|txt|adoc)$")     # documentation may quote a marker
_IDIOM = re.compile(r"""^\s*if\s+(?:__name__\s*==\s*["']__main__["']|(?:typing\.)?TYPE_CHECKING)"""
                    r"\s*:")


def changes(files: list[DiffFile]) -> list[tuple[str, int, str]]:
    """(path, line, detail) of each marker the diff adds."""
    removed = {text.strip() for f in files for _, text in f.removed}
    found = []
    for f in files:
        if f.new is None or _PROSE.search(f.new):
            continue
        for no, text in f.added:
            if (m := _MARKER.search(text)) and text.strip() not in removed \
                    and not _IDIOM.match(text):
                found.append((f.new, no, "coverage exclusion added: "
                              f"{m.group('py') or m.group('js')}"))
    return found


__all__ = ["changes"]

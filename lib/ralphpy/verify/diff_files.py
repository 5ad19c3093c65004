"""Owns reading a unified diff (`git diff -U0 -M`, a/ b/ prefixes) into its files: old and
new paths, removed and added lines with their numbers, binary or not. Knows nothing of what
the lines mean (tamper.py)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class DiffFile:
    old: str | None                # None: added
    new: str | None                # None: deleted
    removed: list[tuple[int, str]] = field(default_factory=list)   # (old line, text)
    added: list[tuple[int, str]] = field(default_factory=list)     # (new line, text)
    binary: bool = False
    first_change: int | None = None     # new-side line of the first hunk that removes a line


def _unquote(path: str) -> str:
    if path.startswith('"') and path.endswith('"'):
        return path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape") \
            .encode("latin-1").decode("utf-8", "replace")
    return path


def _side(text: str) -> str | None:
    text = _unquote(text.rstrip("\t"))
    return None if text == "/dev/null" else text[2:]


_HEADER = re.compile(r'^diff --git ("?a/.*?"?) ("?b/.*"?)$')


def parse(diff: str) -> list[DiffFile]:
    files: list[DiffFile] = []
    cur: DiffFile | None = None
    old_no = new_no = 0
    for line in diff.split("\n"):
        if line.startswith("diff --git "):
            m = _HEADER.match(line)
            a, b = (_unquote(m.group(1))[2:], _unquote(m.group(2))[2:]) if m else (None, None)
            cur = DiffFile(a, b)
            files.append(cur)
        elif cur is None:
            continue
        elif line.startswith("new file mode"):
            cur.old = None
        elif line.startswith("deleted file mode"):
            cur.new = None
        elif line.startswith("rename from "):
            cur.old = _unquote(line[12:])
        elif line.startswith("rename to "):
            cur.new = _unquote(line[10:])
        elif line.startswith("--- "):
            cur.old = _side(line[4:])
        elif line.startswith("+++ "):
            cur.new = _side(line[4:])
        elif line.startswith("Binary files "):
            cur.binary = True
        elif (m := _HUNK.match(line)):
            old_no, new_no = int(m.group(1)), int(m.group(3))
            if m.group(2) != "0" and cur.first_change is None:
                cur.first_change = max(new_no, 1)
        elif line.startswith("-"):
            cur.removed.append((old_no, line[1:]))
            old_no += 1
        elif line.startswith("+"):
            cur.added.append((new_no, line[1:]))
            new_no += 1
    return files


__all__ = ["DiffFile", "parse"]

"""Owns reading the task CLI's answers the loop acts on (ralph-cli.md s.9, s.15): the scope
lines of `_get-scope`, the slugs of `list --markdown`, and the open/active counts of
`plan-status`. Pure functions over text; knows nothing of how the calls are made."""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Scope:
    repo: str
    branch: str


def scope(output: str) -> Scope:
    """s.9.3: the text after `repo:` / `branch:` on the first line starting with it, else ""."""
    def first(prefix: str) -> str:
        for line in output.split("\n"):
            if line.startswith(prefix):
                return line[len(prefix):]
        return ""
    return Scope(first("repo:"), first("branch:"))


def slugs(markdown: str) -> list[str]:
    """s.15.5: the rest of every line that starts with `id: `, in output order."""
    return [line[4:] for line in markdown.split("\n") if line.startswith("id: ")]


def all_done(output: str) -> bool:
    """s.15.6: true only when the open count (the digits opening the first line that starts
    with a digit) and the active count (the number before ` active`) are both found and 0."""
    open_count = next((m.group() for line in output.split("\n")
                       if (m := re.match(r"[0-9]+", line))), None)
    # [SH-COMPAT] ralph.sh: grep -oE '[0-9]+ active' over the whole output; more than one
    # match made its `-eq 0` test fail, i.e. "tasks remain".
    actives = re.findall(r"([0-9]+) active", output)
    if open_count is None or len(actives) != 1:
        return False
    return int(open_count) == 0 and int(actives[0]) == 0


__all__ = ["Scope", "scope", "slugs", "all_done"]

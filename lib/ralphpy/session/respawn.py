"""Owns respawn safety (seed 000): neutralising a leftover Claude Code ralph-loop
state file before an agent launch. Knows nothing of the loop; the respawn guard of assignment
mode, which holds a task respawned without progress, is assign.respawn_guard's.

Why move the file aside and not only flip `active:`: the official plugin's stop hook keeps
looping while `.claude/ralph-loop.local.md` exists, whatever `active:` says. The
flipped copy is kept as `.inactive` so a person can see what the agent had set up.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from ralphpy import atomic_file

LOOP_FILE = Path(".claude") / "ralph-loop.local.md"
INACTIVE_SUFFIX = ".inactive"
_ACTIVE_TRUE = re.compile(r"^(\s*active\s*:\s*)(?:true|\"true\"|'true'|yes|on)\s*$",
                          re.IGNORECASE | re.MULTILINE)


def neutralise_ralph_loop(workdir: Path) -> str | None:
    """Deactivate and move aside workdir's ralph-loop state file. Returns a log line when
    something was found, None when there was nothing to do. Never raises."""
    path = workdir / LOOP_FILE
    if not path.is_file():
        return None
    target = path.with_name(path.name + INACTIVE_SUFFIX)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = None
    flipped = False
    try:
        if text is not None:
            new_text, flipped = _deactivate(text)
            # Write the deactivated copy first, then drop the original: a crash in between
            # leaves the original, which the next launch neutralises again.
            atomic_file.replace(target, new_text.encode("utf-8"))
            path.unlink()
        else:
            os.replace(path, target)        # unreadable: moving it still stops the hook
    except OSError as err:
        return (f"respawn safety: could not neutralise {LOOP_FILE} in {workdir}: "
                f"{err.strerror or err}")
    what = "active: true -> false, " if flipped else ""
    how = "" if text is not None else "unreadable, "
    return f"respawn safety: neutralised {LOOP_FILE} ({how}{what}moved to {LOOP_FILE}{INACTIVE_SUFFIX})"


def _deactivate(text: str) -> tuple[str, bool]:
    """Set `active: false` in the YAML front matter (the block between the first two `---`
    lines); text without front matter is returned unchanged."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return text, False
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        return text, False
    front = "\n".join(lines[1:end])
    new_front, count = _ACTIVE_TRUE.subn(r"\1false", front)
    if not count:
        return text, False
    return "\n".join([lines[0], new_front, *lines[end:]]), True


__all__ = ["neutralise_ralph_loop"]

"""Owns the one question of issue 7's "nohup-friendly" rule: is an output stream a terminal?
When it is not (nohup.out, a CI log, a pipe), ralph.py writes no colour and no carriage-return
progress. Knows nothing of what is printed; the renderer's output is plain text anyway."""
from __future__ import annotations

from typing import IO, Mapping


def is_interactive(stream: IO | None) -> bool:
    """True only for an open stream whose file is a terminal; False for None, closed or
    detached streams and objects without isatty (StringIO in tests)."""
    if stream is None:
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def use_colour(stream: IO | None, environ: Mapping[str, str]) -> bool:
    """Colour only on an interactive stream, never with NO_COLOR set (no-color.org) or
    TERM=dumb."""
    if environ.get("NO_COLOR") or environ.get("TERM") == "dumb":
        return False
    return is_interactive(stream)


__all__ = ["is_interactive", "use_colour"]

"""Owns showing untrusted text inert: a task's title or description (from a planner model or a
shared fleet store), an agent's output, a fail or hold reason. Each control character (C0,
DEL, C1) is written as a visible escape (`\\x1b`, `\\x07`, `\\x9b`), so an escape sequence
(`\\x1b[31m`, `\\x1b]0;title\\x07`) is shown, never obeyed: it cannot recolour the terminal,
move its cursor or rename its window. A newline and a tab are kept where the format has room
for them (`lines=True`: a description, a whole `task show`); a one-line field escapes them
too, and the Unicode line and paragraph separators. Text without control characters comes
back unchanged, so every output stays byte for byte what it was for normal text. Stdlib
only and cheap on ASCII (the task CLI's start, the renderers' hot path); `re` is imported
only for text that is not ASCII. Does not own cutting, layout or HTML escaping (the callers
do that after)."""
from __future__ import annotations

_C0_KEPT = "\n\t"


_NAMED = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}


def _table(codes: list[int]) -> dict[int, str]:
    return {c: _NAMED.get(c) or (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}")
            for c in codes}


_CONTROL = [*range(0x20), 0x7F, *range(0x80, 0xA0)]
_LINE = _table([*_CONTROL, 0x2028, 0x2029])                   # one-line fields
_LINES = _table([c for c in _CONTROL if chr(c) not in _C0_KEPT])   # newline and tab kept
_ASCII_LINE = bytes(range(0x20)) + b"\x7f"
_ASCII_LINES = bytes(c for c in _ASCII_LINE if chr(c) not in _C0_KEPT)
_patterns: dict[bool, object] = {}


def shown(text: str, *, lines: bool = False) -> str:
    """text with its control characters escaped; lines=True keeps newlines and tabs."""
    if text.isascii():
        raw = text.encode("ascii")
        if len(raw.translate(None, _ASCII_LINES if lines else _ASCII_LINE)) == len(raw):
            return text                                   # the common case: nothing to do
        return text.translate(_LINES if lines else _LINE)
    pattern = _patterns.get(lines)
    if pattern is None:
        import re                                         # only for non-ASCII text
        table = _LINES if lines else _LINE
        pattern = _patterns[lines] = re.compile("[" + "".join(
            f"\\u{c:04x}" for c in table) + "]")
    if pattern.search(text) is None:                      # type: ignore[attr-defined]
        return text
    return text.translate(_LINES if lines else _LINE)


__all__ = ["shown"]

"""Owns bounded line splitting of an agent's output stream (docs/contract/ralph-cli.md s.12): bytes
fed in chunks split anywhere, each complete line handed once to the subclass's `_line`, a line
longer than max_line_bytes dropped whole without ever being held (counted in the summary's
`events_seen`: "lines", "oversized"), and the text one chunk produced written and flushed at
once, its control characters shown escaped (ralphpy.inert). Knows nothing of what a line
means: claude_render.py renders Claude's stream-json, streams.py the other CLIs' JSON lines.

A subclass sets `self._s` (a summary with an `events_seen` dict holding "lines" and
"oversized") and implements `_line(line, parts)`, appending the text to show to parts.
"""
from __future__ import annotations

from typing import BinaryIO

from ralphpy import inert

MAX_LINE_BYTES = 8 * 1024 * 1024   # a longer line is not rendered (the log keeps it)


class LineFeed:
    def __init__(self, out: BinaryIO, *, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self._out = out
        self._max = max_line_bytes
        self._partial = bytearray()
        self._skipping = False          # inside an oversized line: dropped up to its newline
        self._closed = False

    def feed(self, chunk: bytes) -> None:
        """Take the next bytes of the stream, split anywhere; render every line they complete."""
        if self._closed:
            raise ValueError(f"{type(self).__name__}.feed() after close()")
        first = chunk.find(b"\n")
        if first < 0:
            self._keep(chunk)
            return
        parts: list[str] = []
        if self._skipping:   # the end of an oversized line: drop it
            self._skipping = False
            self._s.events_seen["lines"] += 1
        elif self._partial:
            self._partial += chunk[:first]
            line, self._partial = self._partial, bytearray()
            self._line(line, parts)
        else:
            self._line(chunk[:first], parts)
        last = chunk.rfind(b"\n")
        if last > first:    # the lines in between, split in C in one go (bench/render)
            for line in chunk[first + 1:last].split(b"\n"):
                self._line(line, parts)
        self._keep(chunk[last + 1:])
        self._emit(parts)

    def close(self) -> None:
        """End of stream: render a last line that had no newline (s.12), then `_final()`."""
        if self._closed:
            return
        self._closed = True
        parts: list[str] = []
        if self._partial and not self._skipping:
            self._line(self._partial, parts)
        elif self._skipping:
            self._s.events_seen["lines"] += 1
        self._partial.clear()
        parts.append(self._final())
        self._emit(parts)

    def _keep(self, rest: bytes) -> None:
        """Hold the start of a line until its newline comes; drop it once it is too long."""
        if not rest or self._skipping:
            return
        if len(self._partial) + len(rest) > self._max:
            self._partial.clear()
            self._skipping = True
            self._s.events_seen["oversized"] += 1
            return
        self._partial += rest

    def _emit(self, parts: list[str]) -> None:
        text = "".join(parts)
        if text:                        # the agent's words shown, their escapes never obeyed
            self._out.write(self._encode(inert.shown(text, lines=True)))
            self._out.flush()

    # Hooks.
    def _line(self, line: bytes, parts: list[str]) -> None:
        raise NotImplementedError

    def _final(self) -> str:
        """Text shown once at the end of the stream."""
        return ""

    def _encode(self, text: str) -> bytes:
        return text.encode("utf-8", "replace")


__all__ = ["LineFeed", "MAX_LINE_BYTES"]

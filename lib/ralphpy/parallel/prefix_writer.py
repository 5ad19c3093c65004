"""Owns how `--parallel` sessions' renderings share the run's stdout: line by line, each line
prefixed with its task. Knows nothing of sessions or of what the lines say."""
from __future__ import annotations

from typing import BinaryIO


class PrefixWriter:
    """A binary stream that writes complete lines to `out` as `[<name>] line`, so several
    sessions' renderings interleave line by line and stay readable."""

    def __init__(self, out: BinaryIO, name: str) -> None:
        self._out = out
        self._prefix = f"[{name}] ".encode()
        self._partial = b""

    def write(self, data: bytes) -> int:
        lines = (self._partial + bytes(data)).split(b"\n")
        self._partial = lines.pop()
        if lines:
            self._out.write(b"".join(self._prefix + line + b"\n" for line in lines))
        return len(data)

    def flush(self) -> None:
        self._out.flush()

    def close(self) -> None:
        if self._partial:
            self._out.write(self._prefix + self._partial + b"\n")
            self._partial = b""
        self._out.flush()


__all__ = ["PrefixWriter"]

"""Owns ralph's stdout once its reader may go away (`ralph build -n 3 | head -1`): a write
that finds the pipe closed (EPIPE) sends the rest of the run's output to /dev/null and means
what a first Ctrl+C means (signals.Guard.interrupt: outside a session the run unwinds through
its exit cleanup, inside one the agent gets its SIGINT and ends), so the run ends with exit
130, its lock released and its state ended, never with a traceback or a stale lock. Text
writes and writes to the binary `buffer` (the renderers', a passed-through task call's) are
both covered. Does not own what the signal does (signals.py) or the line that says so (the
caller's `on_closed`)."""
from __future__ import annotations

import os
import signal
from typing import Any, BinaryIO, Callable, TextIO

from ralphpy.signals import Guard


class _Buffer:
    """The binary side of Stdout: the same closed-pipe rule for bytes."""

    def __init__(self, raw: BinaryIO, owner: "Stdout") -> None:
        self._raw = raw
        self._owner = owner

    def write(self, data: bytes) -> int:
        return self._owner._guarded(self._raw.write, data, len(data))

    def flush(self) -> None:
        self._owner._guarded(self._raw.flush, None, None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


class Stdout:
    """A text stream (sys.stdout) whose closed pipe is an interrupt. `closed` says whether it
    happened; on_closed() is called once, after the output went to /dev/null."""

    def __init__(self, stream: TextIO, guard: Guard, on_closed: Callable[[], None]) -> None:
        self._stream = stream
        self._guard = guard
        self._on_closed = on_closed
        self.closed = False
        self.buffer = _Buffer(stream.buffer, self)

    def write(self, text: str) -> int:
        return self._guarded(self._stream.write, text, len(text))

    def flush(self) -> None:
        self._guarded(self._stream.flush, None, None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def _guarded(self, call: Callable[..., Any], arg: Any, written: int | None) -> Any:
        try:
            return call() if arg is None else call(arg)
        except BrokenPipeError:
            pass
        if not self.closed:
            self.closed = True
            # Every later write, ours or a child's that inherits fd 1, goes nowhere instead of
            # failing again; what the buffers still hold is flushed there.
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self._stream.fileno())
            finally:
                os.close(null)
            try:
                self._stream.flush()
            except OSError:
                pass
            self._on_closed()
            self._guard.interrupt(signal.SIGINT)      # as the first Ctrl+C
                                                      # (docs/contract/ralph-cli.md s.16), once
        return written


__all__ = ["Stdout"]

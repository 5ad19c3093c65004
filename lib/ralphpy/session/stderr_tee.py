"""Owns an agent's stderr when ralph reads it (an adapter whose CLI says a refusal only there,
agents/adapters.py `reads_stderr`): each read of the pipe goes on at once, byte for byte, to
ralph's own stderr, where the inherited stream went (docs/contract/ralph-cli.md s.11: the user still
sees it as it comes), and only the last `keep_bytes` are kept for the adapter to read once the
session ended.

Does not own when the pipe is read (the pool polls it with stdout) or what the lines mean (the
adapter's patterns). Writing on is best effort: a closed or stuck stderr of ralph's own loses
the copy, never the session or the kept tail.
"""
from __future__ import annotations

import os
import select

KEEP_BYTES = 8192                # the last lines: an agent's refusal is its last words
_CHUNK = 65536
_STUCK_S = 5.0                   # a stderr that takes nothing for this long is given up


class StderrTee:
    def __init__(self, source: int, to: int = 2, *, keep_bytes: int = KEEP_BYTES) -> None:
        """source: the agent's stderr pipe (non-blocking); to: ralph's stderr."""
        self.source = source
        self.open = True                 # until EOF
        self._to = to
        self._cap = keep_bytes
        self._tail = bytearray()
        self._cut = False                # the tail lost its start: its first line is partial
        self._lost = False               # ralph's stderr is gone: nothing more is written on

    def pump(self) -> None:
        """Read what the pipe holds: write it on, keep its end; at EOF, `open` turns False."""
        try:
            chunk = os.read(self.source, _CHUNK)
        except BlockingIOError:
            return
        if not chunk:
            self.open = False
        self.feed(chunk)

    def feed(self, chunk: bytes) -> None:
        """Write `chunk` on to ralph's stderr and keep it in the tail."""
        self._tail += chunk[-self._cap:]
        if len(self._tail) > self._cap or len(chunk) > self._cap:
            del self._tail[:len(self._tail) - self._cap]
            self._cut = True
        self._write(chunk)

    def tail(self) -> str:
        """The kept end of the stream as text, starting at a whole line."""
        text = self._tail.decode("utf-8", "replace")
        if self._cut and "\n" in text:
            text = text[text.index("\n") + 1:]
        return text

    def _write(self, chunk: bytes) -> None:
        view = memoryview(chunk)
        while view and not self._lost:
            try:
                view = view[os.write(self._to, view):]
            except BlockingIOError:      # a non-blocking stderr that is full: wait, not spin
                if not select.select([], [self._to], [], _STUCK_S)[1]:
                    self._lost = True
            except OSError:              # closed, a broken pipe: the copy is lost
                self._lost = True


__all__ = ["StderrTee", "KEEP_BYTES"]

"""Owns delivering one notification on one channel, within a timeout: a command (`sh -c`, the
notification as JSON on stdin, in its own process group, killed with it at the timeout), a
webhook (HTTP POST of the JSON; one retry after a failure) or the desktop (`notify-send` when
installed). A failure raises NotifyFailed with one line saying why. Knows nothing of threads
or of which events notify."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import urlsplit

RETRY_PAUSE_S = 1.0


class NotifyFailed(Exception):
    """One line: why a channel could not deliver."""


@dataclass(frozen=True)
class Channel:
    kind: str                      # command, webhook, desktop
    target: str

    @property
    def label(self) -> str:
        """For log lines: a webhook shows its scheme and host only (its path may hold a token)."""
        if self.kind == "webhook":
            parts = urlsplit(self.target)
            return f"webhook {parts.scheme}://{parts.netloc}/..."
        return "desktop (notify-send)" if self.kind == "desktop" else f"command {self.target!r}"


def shown(value: object) -> object:
    """A `notify` setting as lines may show it: each channel by its label (a webhook's path,
    which may hold a token, left out)."""
    if not isinstance(value, str):
        return value
    return "\n".join(parse(spec).label for spec in value.splitlines() if spec.strip())


def parse(spec: str) -> Channel:
    text = spec.strip()
    if text.lower() in ("desktop", "notify-send"):
        return Channel("desktop", text)
    if text.lower().startswith(("http://", "https://")):
        return Channel("webhook", text)
    return Channel("command", text.removeprefix("command:").strip())


def _command(channel: Channel, body: bytes, event: str, timeout: float, cwd: str,
             track: Callable[[subprocess.Popen | None], None]) -> None:
    proc = subprocess.Popen(["sh", "-c", channel.target], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd,
                            env={**os.environ, "RALPH_EVENT": event},
                            start_new_session=True)     # its own group: killed whole on timeout
    track(proc)
    try:
        _, err = proc.communicate(body, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill(proc)
        raise NotifyFailed(f"timed out after {timeout:g}s and was killed") from None
    finally:
        track(None)
    if proc.returncode != 0:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] if err else []
        raise NotifyFailed(f"exit {proc.returncode}" + (f": {tail[0][:200]}" if tail else ""))


def kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass                                         # already gone
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass                                         # unkillable (D state): not ours to wait on


def _post(url: str, body: bytes, timeout: float) -> None:
    # Only a webhook needs urllib.request, which imports http.client, ssl and email: about
    # 25 ms of every ralph start that has no webhook to call.
    import urllib.error
    import urllib.request
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "User-Agent": "ralph.py-notify"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read(65536)
    except urllib.error.HTTPError as err:
        raise NotifyFailed(f"HTTP {err.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as err:
        reason = getattr(err, "reason", None) or err
        raise NotifyFailed(f"cannot POST: {reason}") from None


def _webhook(channel: Channel, body: bytes, timeout: float, deadline: float | None) -> None:
    try:
        _post(channel.target, body, timeout)
    except NotifyFailed:
        left = None if deadline is None else deadline - time.monotonic() - RETRY_PAUSE_S
        if left is not None and left <= 0:
            raise
        time.sleep(RETRY_PAUSE_S)
        _post(channel.target, body, timeout if left is None else min(timeout, left))


def _desktop(payload: dict[str, Any], timeout: float) -> None:
    program = shutil.which("notify-send")
    if program is None:
        raise NotifyFailed("notify-send is not installed")
    message = str(payload.get("reason") or payload.get("record", {}).get("message") or "")
    try:
        done = subprocess.run([program, "--app-name=ralph", str(payload.get("title")),
                               message[:300]], capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise NotifyFailed(f"notify-send timed out after {timeout:g}s") from None
    if done.returncode != 0:
        raise NotifyFailed(f"notify-send exit {done.returncode}")


def deliver(channel: Channel, payload: dict[str, Any], *, timeout: float, cwd: str,
            deadline: float | None = None,
            track: Callable[[subprocess.Popen | None], None] = lambda p: None) -> None:
    """Deliver or raise NotifyFailed. deadline (monotonic): no retry would end after it."""
    body = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8") + b"\n"
    if channel.kind == "command":
        _command(channel, body, str(payload.get("event")), timeout, cwd, track)
    elif channel.kind == "webhook":
        _webhook(channel, body, timeout, deadline)
    else:
        _desktop(payload, timeout)


__all__ = ["shown", "Channel", "NotifyFailed", "parse", "deliver", "kill"]

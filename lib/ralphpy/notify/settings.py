"""Owns reading the notification settings (`notify`, `notify_timeout`; ralph.yml,
--notify) out of a run's options, through one function. Knows nothing of delivery."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

DEFAULT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Config:
    channels: tuple[str, ...]      # each: a command, an http(s):// URL, or `desktop`
    timeout_s: float


def config(options: Mapping[str, Any]) -> Config | None:
    """The notification settings of a run, or None when no channel is set."""
    raw = options.get("notify")
    specs = raw.splitlines() if isinstance(raw, str) else []     # one channel per line
    channels = tuple(s.strip() for s in specs if s.strip())
    if not channels:
        return None
    timeout = options.get("notify_timeout")
    ok = isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0
    return Config(channels, float(timeout) if ok else DEFAULT_TIMEOUT_S)


__all__ = ["Config", "config", "DEFAULT_TIMEOUT_S"]

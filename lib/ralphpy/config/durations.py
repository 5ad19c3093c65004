"""Owns nothing of its own: the settings' name for the one duration grammar, which lives at the
top (ralphpy.durations) because the task CLI, a layer below the settings, reads durations too."""
from __future__ import annotations

from ralphpy.durations import format_duration, parse_duration

__all__ = ["parse_duration", "format_duration"]

"""Owns telling API spend from a subscription's: Claude Code reports a cost for every session,
but a user logged in with a subscription pays no per-token price (the figure is what the API
would have charged). An API key or a cloud backend in the run's environment means API spend.
Read at run start, recorded in the run_start event. Knows nothing else of the run."""
from __future__ import annotations

import os
from typing import Mapping

_API_KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
_CLOUD = ("CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX")


def billing(agent: object, environ: Mapping[str, str] | None = None) -> str:
    """api, subscription, or unknown (agents other than claude report tokens, not a plan)."""
    env = os.environ if environ is None else environ
    if agent not in (None, "", "claude"):
        return "unknown"
    if any(env.get(k) for k in _API_KEYS) or any(env.get(k) == "1" for k in _CLOUD):
        return "api"
    return "subscription"


__all__ = ["billing"]

"""Owns the fresh-context policy ("Fresh context", seed 002 "FRESH_START"): the
`.ralph/FRESH_START` sentinel and the agent argv that resumes a previous conversation or not.
Knows nothing of the loop or of the agent's other arguments.

Policy: never resume by default. `--continue-session` (opt-in) adds `--continue` to the
agent's argv, except for a launch that consumed FRESH_START. ralph.py marks FRESH_START after
every completed task and consumes it before the next launch, so a new task never inherits
the previous task's conversation even with the opt-in.
"""
from __future__ import annotations

from pathlib import Path

SENTINEL = "FRESH_START"


def consume(ralph_dir: Path) -> bool:
    """True if FRESH_START existed; it is removed (one launch starts fresh)."""
    try:
        (ralph_dir / SENTINEL).unlink()
    except FileNotFoundError:
        return False
    return True


def mark(ralph_dir: Path) -> None:
    """Create FRESH_START (after a completed task): the next launch starts fresh."""
    ralph_dir.mkdir(parents=True, exist_ok=True)
    (ralph_dir / SENTINEL).touch()


def session_resume_args(continue_session: bool, fresh: bool) -> list[str]:
    """Extra agent argv: ["--continue"] only when opted in and not forced fresh."""
    return ["--continue"] if continue_session and not fresh else []


__all__ = ["consume", "mark", "session_resume_args"]

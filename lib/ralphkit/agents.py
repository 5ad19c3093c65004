"""Owns the agent's command line (ralph-cli.md s.11): the exact argv of `claude -p`, and the
big-prompt fallback of issue 3 (Linux refuses one argument of 128 KiB or more, so task data
that would not fit goes to a file under .ralph/ and the prompt names that file). Knows
nothing of how the agent is run or what the loop does with it; never prints."""
from __future__ import annotations

import os
from pathlib import Path

AGENT = "claude"
# MAX_ARG_STRLEN on Linux: 32 pages = 131072 bytes per argument, its NUL included.
MAX_ARG_BYTES = 131072 - 1


def claude_argv(prompt: str, *, danger: bool, model: str | None) -> list[str]:
    """claude -p PROMPT --output-format=stream-json --verbose [--dangerously-skip-permissions]
    [--model ID], in this order (s.11)."""
    argv = [AGENT, "-p", prompt, "--output-format=stream-json", "--verbose"]
    if danger:
        argv.append("--dangerously-skip-permissions")
    if model is not None:
        argv += ["--model", model]
    return argv


def prompt_fits(prompt: str) -> bool:
    return len(prompt.encode("utf-8", "surrogateescape")) <= MAX_ARG_BYTES


def spill_prompt(command: str, data: str, path: Path) -> str:
    """Write `data` (the task data) to `path` atomically and return the prompt that refers to
    it: `<command> <note naming the file>`. The skill reads the file in place of the data."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data.encode("utf-8", "surrogateescape") + b"\n")
    os.replace(tmp, path)
    return (f"{command} The task data is too large for the command line "
            f"({len(data.encode('utf-8', 'surrogateescape'))} bytes); read it from the file "
            f"{path} (same format as it would have had here).")


__all__ = ["AGENT", "claude_argv", "prompt_fits", "spill_prompt"]

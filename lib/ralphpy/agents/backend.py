"""Owns which model backend the agent talks to (docs/contract/ralph-cli.md s.6:
`CLAUDE_CODE_USE_BEDROCK`, then the Claude settings files) and what a `--model` alias resolves to
there (s.7, models.json). Knows nothing of flags, the banner or how the agent is started; never
fails: every unreadable input is skipped, as ralph.sh's `jq ... 2>/dev/null` did."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

ANTHROPIC = "anthropic"
BEDROCK = "bedrock"


def _settings_say_bedrock(path: Path) -> bool:
    try:
        data = json.loads(path.read_bytes())
        value = data["env"]["CLAUDE_CODE_USE_BEDROCK"]
    except (OSError, ValueError, KeyError, TypeError):
        return False                # missing, invalid JSON, no such key: skipped silently
    # The string "1" or the number 1 (a JSON `true` is not the number 1).
    return value == "1" or (type(value) is int and value == 1)


def detect(environ: Mapping[str, str], cwd: Path, home: Path | None) -> str:
    """s.6: the environment variable alone decides when set; else the first settings file
    that says bedrock; else anthropic."""
    flag = environ.get("CLAUDE_CODE_USE_BEDROCK", "")
    if flag:
        return BEDROCK if flag == "1" else ANTHROPIC
    files = [cwd / ".claude" / "settings.local.json", cwd / ".claude" / "settings.json"]
    if home is not None:
        files.append(home / ".claude" / "settings.json")
    return BEDROCK if any(_settings_say_bedrock(f) for f in files) else ANTHROPIC


def models_file(script_dir: Path) -> Path:
    """SCRIPT_DIR/models.json; installed (no SCRIPT_DIR/lib), the copy packaged with ralphpy."""
    path = script_dir / "models.json"
    if not path.exists() and not (script_dir / "lib").is_dir():
        return Path(__file__).resolve().parent.parent / "models.json"
    return path


def resolve_model(alias: str, backend: str, models_path: Path) -> str:
    """s.7: models[alias][backend] when that is a non-empty string, else the alias unchanged."""
    try:
        model = json.loads(models_path.read_bytes())[alias][backend]
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return alias
    return model if isinstance(model, str) and model else alias


# The aliases the claude CLI resolves itself (`claude --model opus`), beside models.json's.
CLAUDE_ALIASES = ("opus", "sonnet", "haiku")


def models_of(agent: str, models_path: Path) -> set[str]:
    """The model aliases `agent` can be given by name: models.json's entries whose `agent`
    (a name or a list of names) names it, an entry without one being claude's (s.7's file
    names only claude's models), and, for claude, the aliases its CLI knows itself."""
    try:
        entries = json.loads(models_path.read_bytes())
    except (OSError, ValueError, TypeError):
        entries = {}
    found = set(CLAUDE_ALIASES) if agent == "claude" else set()
    for alias, entry in (entries.items() if isinstance(entries, dict) else ()):
        owner = entry.get("agent", "claude") if isinstance(entry, dict) else "claude"
        if agent == owner or (isinstance(owner, list) and agent in owner):
            found.add(alias)
    return found


__all__ = ["ANTHROPIC", "BEDROCK", "detect", "models_file", "resolve_model", "models_of",
           "CLAUDE_ALIASES"]

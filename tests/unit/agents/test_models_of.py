"""Each agent's models in models.json (agents.backend.models_of): what escalate: checks."""
from __future__ import annotations

import json
from pathlib import Path

from ralphpy.agents import backend


def test_an_entry_names_its_agent_and_one_without_is_claudes(tmp_path: Path):
    path = tmp_path / "models.json"
    path.write_text(json.dumps({
        "sonnet-4.5": {"bedrock": "global.anthropic.claude-sonnet-4-5"},   # ralph.sh's shape
        "gpt-5": {"agent": "codex"},
        "shared": {"agent": ["opencode", "pi"]},
        "odd": "not an object"}))
    assert backend.models_of("claude", path) == {"sonnet-4.5", "odd", *backend.CLAUDE_ALIASES}
    assert backend.models_of("codex", path) == {"gpt-5"}
    assert backend.models_of("pi", path) == backend.models_of("opencode", path) == {"shared"}
    assert backend.models_of("gemini", path) == set()
    assert backend.resolve_model("gpt-5", backend.BEDROCK, path) == "gpt-5"   # s.7 unchanged


def test_an_unreadable_models_json_leaves_claude_its_own_aliases(tmp_path: Path):
    (tmp_path / "models.json").write_text("{not json")
    assert backend.models_of("claude", tmp_path / "models.json") == set(backend.CLAUDE_ALIASES)
    assert backend.models_of("codex", tmp_path / "missing.json") == set()


def test_the_packaged_models_json_lists_codex_and_gemini_models():
    packaged = Path(backend.__file__).resolve().parent.parent / "models.json"
    assert backend.models_of("codex", packaged) == {"gpt-5", "gpt-5-mini", "gpt-5-codex"}
    assert backend.models_of("gemini", packaged) == {"gemini-2.5-pro", "gemini-2.5-flash"}
    assert "gpt-5" not in backend.models_of("claude", packaged)

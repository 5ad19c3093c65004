"""The live view's reading of a session log: the agent's last line, stream-json made readable."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ralphpy.report import live


def assistant(*blocks: dict) -> str:
    return json.dumps({"type": "assistant", "message": {"content": list(blocks)}})


@pytest.mark.parametrize("last,shown", [
    ("plain text from another agent", "plain text from another agent"),
    (assistant({"type": "text", "text": "Now running the tests\nAll 12 pass"}), "All 12 pass"),
    (assistant({"type": "text", "text": "x"}, {"type": "tool_use", "name": "Bash"}), "tool: Bash"),
    (json.dumps({"type": "result", "subtype": "success"}), "result: success"),
    (json.dumps({"type": "system", "subtype": "init"}), "(system)"),
    ("[1, 2]", "[1, 2]"),
], ids=["plain", "assistant-text", "tool-use", "result", "other-event", "not-an-event"])
def test_the_last_line_of_a_session_log_is_shown_readably(tmp_path: Path, last, shown):
    log = tmp_path / "session.jsonl"
    log.write_text("x" * 100_000 + "\n" + "first\n\n" + last + "\n\n")
    assert live.last_line(log) == shown


def test_no_log_and_no_run_show_nothing(tmp_path: Path):
    assert live.last_line(tmp_path / "missing.jsonl") is None
    assert live.live({"runId": None}, tmp_path / ".ralph") == live.EMPTY

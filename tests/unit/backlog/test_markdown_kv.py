"""markdown-KV read back into task dicts (task-cli.md section 8), for external backends."""
from __future__ import annotations

import pytest

from ralphkit.backlog.markdown_kv import parse_markdown_kv

FULL = """## Task web/01
id: web/01
title: Full task: with a colon
priority: 0
status: active
category: feat
spec: specs/web.md
ref: ref-1
assignee: a1b2
lease_expires_at: 2026-11-22 01:00:00
retry_count: 3
deps: dep/01, dep/02
steps:
- first
- second: with a colon
blocker_results:
- dep/01: {"commit":"abc123"}

## Task b
id: b
title: B"""


def test_every_field_of_a_full_section_is_read_back():
    assert parse_markdown_kv(FULL) == [
        {"id": "web/01", "title": "Full task: with a colon", "priority": 0, "status": "active",
         "category": "feat", "spec": "specs/web.md", "ref": "ref-1", "assignee": "a1b2",
         "lease_expires_at": "2026-11-22 01:00:00", "retry_count": 3,
         "deps": ["dep/01", "dep/02"], "steps": ["first", "second: with a colon"],
         "blocker_results": {"dep/01": '{"commit":"abc123"}'}},
        {"id": "b", "title": "B"}]


@pytest.mark.parametrize("text", ["", "no sections here\n", "\n\n"], ids=["empty", "prose", "blank"])
def test_text_without_sections_gives_no_tasks(text):
    assert parse_markdown_kv(text) == []


def test_missing_keys_stay_absent_and_stray_lines_are_ignored():
    tasks = parse_markdown_kv("preamble\n## Task x\ntitle: X\nnot a key line\n- stray item\n")
    assert tasks == [{"id": "x", "title": "X"}]


def test_a_non_numeric_priority_is_kept_as_text():
    assert parse_markdown_kv("## Task x\npriority: high\n")[0]["priority"] == "high"

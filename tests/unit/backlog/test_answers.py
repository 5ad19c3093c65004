"""The task CLI's answers read back: markdown-KV (docs/contract/task-cli.md s.8, for external
backends) and `show` (s.9.9) into task dicts, split on "\n" only, so a U+2028 inside a field stays
there."""
from __future__ import annotations

import pytest

from ralphpy.backlog.answers import parse_markdown_kv, parse_show

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


SEPARATORS = "a\u2028b\u2029c\x85d\x0ce"        # every one is a line break to splitlines()
# As the task CLI shows them: the control characters among them escaped (untrusted text is inert)
SHOWN = "a\u2028b\u2029c\\x85d\\x0ce"


def test_show_keeps_a_unicode_line_separator_inside_title_and_description(run_task):
    # The real task CLI's `show`, as the loop reads it when `_export-json` is not there.
    assert run_task("create", "t-1", f"T {SEPARATORS}", "-d", f"one {SEPARATORS}\ntwo",
                    "-p", "2").returncode == 0
    record = parse_show(run_task("show", "t-1").stdout.rstrip("\n"))
    assert (record["id"], record["title"], record["priority"]) == ("t-1", f"T {SHOWN}", 2)
    assert record["description"] == f"one {SHOWN}\ntwo"


def test_show_text_with_a_final_newline_reads_as_without(run_task):
    assert run_task("create", "t-1", "T", "-d", "one\ntwo").returncode == 0
    out = run_task("show", "t-1").stdout
    assert parse_show(out) == parse_show(out.rstrip("\n"))


def test_markdown_kv_keeps_a_unicode_line_separator_inside_a_title(run_task):
    assert run_task("create", "t-1", f"T {SEPARATORS}").returncode == 0
    (task,) = parse_markdown_kv(run_task("list", "--all", "--markdown").stdout)
    assert (task["id"], task["title"]) == ("t-1", f"T {SHOWN}")

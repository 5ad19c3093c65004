"""tk.parse and TkSource.load over real files: what a ticket means, and files that are not
tickets are named and skipped without being touched."""
from __future__ import annotations

import pytest

from ralphpy.sources import tk
from ralphpy.sources.base import ACTIVE, DONE, OPEN

TICKET = """---
id: ab-1x2y
status: in_progress
deps: [ab-0000, ab-0001]
links: []
created: 2026-01-02T03:04:05Z
type: feature
priority: 1
assignee: Dev
external-ref: gh-12
tags: [component:api, ui]
---
# Add the widget

The body.

## Notes

**2026-01-03T00:00:00Z**

ralph: failed: tests failed

**2026-01-04T00:00:00Z**

ralph: failed: timed out
"""


def test_a_ticket_maps_onto_the_contracts_fields():
    task = tk.parse(TICKET, "ab-1x2y")
    assert (task.id, task.title, task.status, task.tool_status, task.priority) == (
        "ab-1x2y", "Add the widget", ACTIVE, "in_progress", 1)
    assert task.deps == ["ab-0000", "ab-0001"] and task.tags == ["component:api", "ui"]
    assert (task.category, task.description, task.extra["ref"]) == ("feature", "The body.", "gh-12")
    assert (task.fail_reason, task.retry_count) == ("timed out", 2)


@pytest.mark.parametrize("status,mapped", [("open", OPEN), ("in_progress", ACTIVE),
                                           ("closed", DONE)], ids=["open", "in_progress", "closed"])
def test_each_tk_status_has_one_contract_status(status, mapped):
    assert tk.parse(f"---\nid: x\nstatus: {status}\n---\n# T\n", "x").status == mapped


@pytest.mark.parametrize("text,why", [
    ("# just a title\n", "no front matter"),
    ("---\nid: x\nstatus: open\n# T\n", "not closed"),
    ("---\nstatus: open\n---\n# T\n", "no id"),
    ("---\nid: x\nstatus: doing\n---\n", "status 'doing'"),
    ("---\nid: x\nstatus: open\npriority: high\n---\n", "priority 'high'"),
    ("---\nid: y\nstatus: open\n---\n", "id 'y' is not its file name"),
], ids=["no-front-matter", "unclosed", "no-id", "bad-status", "bad-priority", "renamed"])
def test_a_file_that_is_not_a_ticket_says_why(text, why):
    with pytest.raises(ValueError, match=why):
        tk.parse(text, "x")


def test_load_names_bad_files_skips_them_and_never_writes_them(tmp_path):
    tickets = tmp_path / ".tickets"
    tickets.mkdir()
    (tickets / "ab-1x2y.md").write_text(TICKET)
    (tickets / "ab-2222.md").write_text("---\nid: ab-2222\nstatus: open\npriority: 0\n---\n# Z\n")
    bad = tickets / "zz-bad.md"
    bad.write_bytes(b"\xff\xfe not text")
    before = bad.stat()
    listing = tk.TkSource({"RALPH_TASKS_ROOT": str(tmp_path), "PATH": ""}, tmp_path).load()
    assert list(listing.tasks) == ["ab-2222", "ab-1x2y"]              # tk ready's order
    assert len(listing.problems) == 1 and listing.problems[0].startswith(".tickets/zz-bad.md: ")
    assert bad.read_bytes() == b"\xff\xfe not text" and bad.stat().st_mtime_ns == before.st_mtime_ns


def test_a_changed_file_is_read_again(tmp_path):
    tickets = tmp_path / ".tickets"
    tickets.mkdir()
    path = tickets / "x.md"
    path.write_text("---\nid: x\nstatus: open\n---\n# T\n")
    source = tk.TkSource({"RALPH_TASKS_ROOT": str(tmp_path)}, tmp_path)
    assert source.load().tasks["x"].status == OPEN
    path.write_text("---\nid: x\nstatus: closed\n---\n# T (edited by hand)\n")
    assert source.load().tasks["x"].status == DONE

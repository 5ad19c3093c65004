"""The GitHub source's reading of an issue: dependencies, priority, labels, a huge body."""
from __future__ import annotations

import contextlib
import sqlite3
import time

import pytest

from ralphpy.sources import github_cache, github_issues as gh, views
from ralphpy.sources.leases import Lease
from ralphpy.sources.base import ACTIVE, DONE, HELD, OPEN


def issue(number=7, body="", labels=("ralph",)):
    return gh._keep({"number": number, "title": "T", "body": body, "state": "open",
                     "labels": [{"name": n} for n in labels], "assignees": [],
                     "html_url": f"https://github.com/a/b/issues/{number}"})


def test_dependencies_come_from_blocked_by_lines_and_open_task_list_items():
    body = ("Blocked by #3 and #4\nDepends on: #5\n- [ ] #6 first\n- [x] #8 done already\n"
            "See #9 for context\n  * blocked by #3\n")
    assert gh.dependencies(body) == ["3", "4", "5", "6"]


def test_labels_give_priority_components_category_and_status():
    task = gh.task_from(issue(labels=("ralph", "P0", "component:api", "type:bug")), {})
    assert (task.id, task.priority, task.tags, task.category, task.status) == (
        "7", 0, ["component:api"], "bug", OPEN)
    assert gh.task_from(issue(labels=("priority:3",)), {}).priority == 3
    assert gh.task_from(issue(labels=("ralph:active",)), {}).status == ACTIVE
    assert gh.task_from(issue(labels=("ralph:held",)), {}).status == HELD
    done = gh.task_from(issue(labels=("ralph:done",)), {}, {"7": "abc123"})
    assert (done.status, done.extra["result"]) == (DONE, "abc123")


def test_a_huge_body_is_cut_with_a_note_and_failures_are_counted():
    task = gh.task_from(issue(body="x" * (gh.BODY_MAX + 5)), {"7": {"reason": "r", "count": 2}})
    assert task.description.endswith("\n[... 5 more characters of the issue]")
    assert (task.fail_reason, task.retry_count) == ("r", 2)


def made(path, issues, head=None):
    """A cache in `path` holding `issues` as a full listing does."""
    cache = github_cache.Cache.open(path)
    cache.replace(head or {"label": "ralph", "since": "s", "etag": None},
                  [gh._entry(i) for i in issues])
    return cache


def test_the_cache_counts_plan_status_as_the_issues_do(tmp_path):
    """Statuses and dependencies kept indexed beside the order, counted by SQLite: the same
    counts as the tasks made from every issue's row, a closed dependency outside the listing
    met, a valid lease making a task active."""
    issues = [dict(issue(1, labels=("ralph", "ralph:done")), updated_at=None),
              dict(issue(2, "Blocked by #1", ("ralph", "ralph:active"))),
              dict(issue(3, "Depends on #9"), labels=["ralph", "ralph:held"]),
              issue(4, "Blocked by #8"), issue(5, "Blocked by #4"), issue(6, labels=("P0",)),
              issue(7, "Blocked by #10")]
    tasks = gh._Tasks(made(tmp_path / "cache.db", issues), ({}, {}), closed={"8", "10"})
    every = {number: tasks[number] for number in tasks}
    assert list(every) == ["6", "1", "2", "3", "4", "5", "7"]
    assert views.plan_status(tasks, {}) == views.plan_status(every, {}) == (
        "3 open, 1 active, 1 done, 2 blocked, 0 deleted\n")
    leases = {n: Lease(n, "a1", 1, time.time() + 600) for n in ("5", "6", "1")}
    assert views.plan_status(tasks, leases) == views.plan_status(every, leases) == (
        "2 open, 2 active, 1 done, 2 blocked, 0 deleted\n")


def test_a_change_applied_row_by_row_reads_as_the_cache_made_anew(tmp_path):
    """Changes (a claim's label, a close, a new issue, a new priority, a dependency outside
    the listing coming in and going out) upsert and delete the changed rows only, and read
    as a cache made from the issues as they are now: order, rows, outside, counts."""
    issues = {n: issue(n, "Blocked by #2" if n == 3 else "") for n in range(1, 9)}
    cache = made(tmp_path / "cache.db", issues.values())
    changes = [{2: issue(2, labels=("ralph", "ralph:active"))}, {5: None},
               {9: issue(9, "Blocked by #12", labels=("ralph", "P0"))},
               {4: issue(4, "Depends on #5", labels=("ralph", "P1"))},
               {2: issue(2, labels=("ralph", "ralph:done"))}, {12: issue(12)},
               {9: issue(9, labels=("ralph", "P0"))}, {3: None, 4: issue(4, labels=("ralph", "P1"))}]
    changes += [{6: issue(6, labels=("ralph", f"P{3 * (n % 2)}"))} for n in range(4)]
    for number, change in enumerate(changes):
        head = {"label": "ralph", "since": f"later {number}", "etag": None}
        cache.change(head, {n: None if i is None else gh._entry(i) for n, i in change.items()})
        cache.close()
        cache = github_cache.Cache.open(tmp_path / "cache.db")
        issues.update(change)
        now = made(tmp_path / f"fresh{number}.db", [i for i in issues.values() if i])
        assert list(cache.numbers()) == list(now.numbers())
        assert all(cache.issue(n) == now.issue(n) for n in now.numbers())
        assert cache.head == {**now.head, "since": f"later {number}"}
        assert cache.counts(["7"], ["5"]) == now.counts(["7"], ["5"])
    assert list(cache.numbers()) == ["9", "4", "1", "2", "7", "8", "12", "6"]
    assert cache.head["outside"] == []


def test_a_missing_torn_or_old_cache_is_made_anew(tmp_path):
    """The cache is a cache: a file that is not a database, or one of another layout, is
    opened empty (the source then lists the issues from GitHub once)."""
    path = tmp_path / "cache.db"
    assert github_cache.Cache.open(path).head is None              # missing
    made(path, [issue(1)]).close()
    assert github_cache.Cache.open(path).head["label"] == "ralph"
    path.write_bytes(b"torn" * 1000)                                # not a database
    assert github_cache.Cache.open(path).head is None
    made(path, [issue(1)]).close()
    with contextlib.closing(sqlite3.connect(path)) as db:          # an older layout
        db.execute(f"PRAGMA user_version={github_cache.LAYOUT - 1}")
    old = github_cache.Cache.open(path)
    assert old.head is None and list(old.numbers()) == []
    in_memory = made(None, [issue(2), issue(1)])                    # a read-only source's
    assert list(in_memory.numbers()) == ["1", "2"] and not (tmp_path / "None").exists()


def test_a_cache_torn_under_a_reader_is_removed_with_one_line(tmp_path):
    path = tmp_path / "cache.db"
    cache = made(path, [issue(n, "x" * 3000) for n in range(1, 200)])
    cache.close()                                    # the last connection: the WAL checkpointed
    size = path.stat().st_size
    with open(path, "r+b") as handle:                               # every page after the
        handle.seek(4096 * 3)                                       # first three: garbage
        handle.write(b"\xff" * (size - 4096 * 3))
    cache = github_cache.Cache.open(path)
    with pytest.raises(github_cache.Unreadable) as raised:
        [cache.issue(n) for n in cache.numbers()]
    assert "is unreadable" in str(raised.value) and not path.exists()

"""The GitHub source's reading of an issue: dependencies, priority, labels, a huge body."""
from __future__ import annotations

from ralphpy.sources import github_issues as gh, views
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


def test_the_caches_first_line_counts_plan_status_as_the_issues_do():
    """Statuses and dependencies kept beside the order: the same counts as the tasks made
    from every issue's line, a closed dependency outside the listing met."""
    issues = [dict(issue(1, labels=("ralph", "ralph:done")), updated_at=None),
              dict(issue(2, "Blocked by #1", ("ralph", "ralph:active"))),
              dict(issue(3, "Depends on #9"), labels=["ralph", "ralph:held"]),
              issue(4, "Blocked by #8"), issue(5, "Blocked by #4"), issue(6, labels=("P0",))]
    cache = gh._Cache.made({}, issues)
    tasks = gh._Tasks(cache, ({}, {}), closed={"8"})
    made = {number: tasks[number] for number in tasks}
    assert views.plan_status(tasks, {}) == views.plan_status(made, {}) == (
        "2 open, 1 active, 1 done, 2 blocked, 0 deleted\n")


def test_a_change_appends_its_lines_and_reads_as_the_cache_made_anew(tmp_path):
    """Merged changes (a claim's label, a close, a new issue, a new priority) read as a
    cache made from the issues as they are now, the other lines never parsed; the stale
    lines are written away once they are half the file."""
    issues = {n: issue(n, "Blocked by #2" if n == 3 else "") for n in range(1, 9)}
    cache = gh._Cache.made({}, issues.values())
    changes = [{"2": issue(2, labels=("ralph", "ralph:active"))}, {"5": None},
               {"9": issue(9, labels=("ralph", "P0"))}, {"4": issue(4, labels=("ralph", "P1"))},
               {"2": issue(2, labels=("ralph", "ralph:done"))}]
    changes += [{"6": issue(6, labels=("ralph", f"P{3 * (n % 2)}"))} for n in range(8)]
    stale = []
    for change in changes:
        cache = cache.merged({"since": "later"}, change)
        (tmp_path / "issues.jsonl").write_bytes(cache.data())
        cache = gh._Cache.read(tmp_path / "issues.jsonl")
        issues.update({int(n): i for n, i in change.items()})
        now = gh._Cache.made({}, [i for i in issues.values() if i is not None])
        assert list(cache.order) == list(now.order)
        assert all(cache.issue(n) == now.issue(n) for n in now.order)
        stale.append(cache.head.get("stale", 0))
        assert {k: cache.head[k] for k in ("done", "active", "needs", "outside", "since")} == {
            k: now.head[k] for k in ("done", "active", "needs", "outside")} | {"since": "later"}
    assert list(cache.order) == ["9", "4", "1", "2", "3", "7", "8", "6"]
    assert stale[:5] == sorted(stale[:5]) and 0 in stale[5:]    # written anew along the way

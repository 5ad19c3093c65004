"""Component tags and the parallel-safety pick (seed 001)."""
from __future__ import annotations

import pytest

from ralphpy.parallel.components import components_of, overlaps, pick_compatible


@pytest.mark.parametrize("task, expected", [
    ({"id": "t", "category": "component:api"}, {"api"}),
    ({"id": "t", "category": "component:API, db"}, {"api", "db"}),
    ({"id": "t", "category": "component:api,component:db"}, {"api", "db"}),
    ({"id": "t", "category": "backend"}, set()),
    ({"id": "t", "components": ["api", "component:db"]}, {"api", "db"}),
    ({"id": "t", "components": "api, db"}, {"api", "db"}),
    ({"id": "t", "tags": ["urgent", "component:ui", "component:"]}, {"ui"}),
    ({"id": "t", "description": "Touches component:auth and component:db/users."},
     {"auth", "db/users"}),
    ({"id": "t", "description": "Intro.\nComponents: web, api\nMore."}, {"web", "api"}),
    ({"id": "t", "description": "a subcomponent:x or mycomponent:y is not a tag"}, set()),
    ({"id": "t", "category": "component:api", "description": "component:db",
      "components": ["ui"]}, {"api", "db", "ui"}),
    ({"id": "t", "description": None, "category": None}, set()),
], ids=["category", "category-list", "category-repeated-prefix", "plain-category",
        "components-list", "components-text", "tags", "description-words",
        "description-line", "not-a-word-boundary", "all-sources-merge", "nulls"])
def test_components_are_read_from_every_source_a_task_may_carry(task, expected):
    assert components_of(task) == expected


@pytest.mark.parametrize("a, b, expected", [
    ({"api"}, {"api"}, True),
    ({"api"}, {"db"}, False),
    ({"api"}, {"api/auth"}, True),
    ({"api/auth"}, {"api/users"}, False),
    ({"apiv2"}, {"api"}, False),
    ({"*"}, {"db"}, True),
    (set(), {"db"}, False),
], ids=["same", "different", "parent-child", "siblings", "prefix-is-not-parent", "star",
        "untagged"])
def test_overlap_is_shared_name_nesting_or_star(a, b, expected):
    assert overlaps(a, b) is expected
    assert overlaps(b, a) is expected


def task(task_id: str, *names: str) -> dict:
    return {"id": task_id, "category": "component:" + ",".join(names)} if names else {"id": task_id}


def ids(tasks: list[dict]) -> list[str]:
    return [t["id"] for t in tasks]


def test_pick_skips_tasks_overlapping_active_ones_and_earlier_picks_in_priority_order():
    candidates = [task("a", "api"), task("b", "api"), task("c", "db"), task("d", "ui"),
                  task("e", "db", "ui")]
    assert ids(pick_compatible(candidates, [task("x", "ui")], capacity=3)) == ["a", "c"]


def test_pick_never_exceeds_capacity_and_never_picks_an_active_or_duplicate_task():
    candidates = [task("x", "web"), task("a", "api"), task("a", "api"), task("b", "db"),
                  task("c", "ui")]
    assert ids(pick_compatible(candidates, [task("x", "web")], capacity=2)) == ["a", "b"]
    assert pick_compatible(candidates, [], capacity=0) == []


def test_an_untagged_task_starts_only_alone_and_blocks_others_while_it_runs():
    untagged, tagged = task("u"), task("t", "api")
    assert ids(pick_compatible([untagged, tagged], [], capacity=3)) == ["u"]
    assert ids(pick_compatible([tagged, untagged], [], capacity=3)) == ["t"]
    assert pick_compatible([tagged], [untagged], capacity=3) == []
    assert pick_compatible([untagged], [tagged], capacity=3) == []


def test_untagged_tasks_may_share_when_asked_to():
    picks = pick_compatible([task("u"), task("v"), task("t", "api")], [task("w")], capacity=3,
                            untagged_alone=False)
    assert ids(picks) == ["u", "v", "t"]


def test_a_star_task_runs_alone():
    assert ids(pick_compatible([task("s", "*"), task("t", "api")], [], capacity=2)) == ["s"]
    assert pick_compatible([task("t", "api")], [task("s", "*")], capacity=2) == []

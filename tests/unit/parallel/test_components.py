"""Component tags and the parallel-safety pick (seed 001)."""
from __future__ import annotations

import pytest

from ralphpy.parallel.components import (at_once, components_of, overlaps, pick_compatible,
                                          place_of)


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


def test_tasks_with_neither_tags_nor_spec_may_share_when_asked_to():
    picks = pick_compatible([task("u"), task("v"), task("t", "api")], [task("w")], capacity=3,
                            unplaced_alone=False)
    assert ids(picks) == ["u", "v", "t"]


def test_a_star_task_runs_alone():
    assert ids(pick_compatible([task("s", "*"), task("t", "api")], [], capacity=2)) == ["s"]
    assert pick_compatible([task("t", "api")], [task("s", "*")], capacity=2) == []


def spec_task(task_id: str, spec: str | None, *names: str) -> dict:
    return {**task(task_id, *names), "spec": spec}


@pytest.mark.parametrize("task_, expected", [
    (spec_task("t", "auth.md"), {"spec:auth.md"}),
    (spec_task("t", "specs/Auth.md"), {"spec:auth.md"}),
    (spec_task("t", "./specs/auth.md"), {"spec:auth.md"}),
    (spec_task("t", "auth.md", "api"), {"api"}),
    (spec_task("t", "  "), set()),
    (spec_task("t", None), set()),
], ids=["spec", "specs-dir-and-case", "dot-slash", "tags-rule", "blank-spec", "no-spec"])
def test_a_task_is_placed_by_its_tags_else_by_its_spec(task_, expected):
    assert place_of(task_) == expected


def test_tasks_of_different_specs_start_together_and_tasks_of_one_spec_do_not():
    a, b, a2 = spec_task("a", "auth.md"), spec_task("b", "billing.md"), spec_task("c", "auth.md")
    assert ids(pick_compatible([a, a2, b], [], capacity=3)) == ["a", "b"]
    assert ids(pick_compatible([a2, b], [a], capacity=3)) == ["b"]


def test_a_task_with_neither_tags_nor_spec_still_runs_alone_beside_spec_tasks():
    lone, a = task("u"), spec_task("a", "auth.md")
    assert ids(pick_compatible([lone, a], [], capacity=2)) == ["u"]
    assert pick_compatible([a], [lone], capacity=2) == []
    assert pick_compatible([lone], [a], capacity=2) == []


def test_explicit_components_place_a_task_whatever_its_spec():
    api_auth, api_billing = spec_task("x", "auth.md", "api"), spec_task("y", "billing.md", "api")
    db_auth = spec_task("z", "auth.md", "db")
    assert ids(pick_compatible([api_auth, api_billing, db_auth], [], capacity=3)) == ["x", "z"]


@pytest.mark.parametrize("tasks, expected", [
    ([spec_task("a", "a.md"), spec_task("b", "b.md"), spec_task("c", "c.md")], (2, "")),
    ([task("u"), task("v")], (1, "every open task is untagged and has no spec")),
    ([spec_task("a", "a.md"), spec_task("b", "a.md")],
     (1, "every open task shares its spec or components with the others")),
    ([spec_task("a", "a.md")], (1, "one open task")),
    ([], (0, "no open task")),
    ([task("u"), spec_task("a", "a.md"), spec_task("b", "b.md")], (2, "")),
], ids=["specs-differ", "neither", "one-spec", "one-task", "none", "some-alone"])
def test_at_once_says_how_many_tasks_can_run_and_why_only_one(tasks, expected):
    assert at_once(tasks, 2) == expected

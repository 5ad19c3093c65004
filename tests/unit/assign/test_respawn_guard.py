"""The respawn guard of assignment mode (seed 000) holds a task spawned N times for one status
without progress."""
from __future__ import annotations

import json

import pytest

from ralphpy.assign.respawn_guard import RespawnGuard


def test_the_guard_holds_a_task_after_n_spawns_for_one_status_without_progress(tmp_path):
    guard = RespawnGuard(tmp_path / "spawns.json", limit=3)
    verdicts = []
    for expected_count in (1, 2, 3):
        assert guard.before_spawn("web/01", "open") == expected_count
        verdicts.append(guard.after_session("web/01", "open"))
    assert [(v.progressed, v.hold) for v in verdicts] == [(False, False)] * 2 + [(False, True)]
    assert verdicts[1].message == ("task web/01: still open after the session "
                                   "(2 of 3 spawns without progress)")
    assert verdicts[2].reason == "respawned 3 times for status open without progress"
    assert verdicts[2].message == ("task web/01: respawned 3 times for status open without "
                                   "progress; holding it and moving on")


def test_progress_resets_the_count(tmp_path):
    guard = RespawnGuard(tmp_path / "spawns.json", limit=2)
    guard.before_spawn("a", "open")
    assert not guard.after_session("a", "open").hold
    guard.before_spawn("a", "open")
    verdict = guard.after_session("a", "done")
    assert verdict.progressed and not verdict.hold
    assert verdict.message == "task a: status open -> done: the session completed its stage"
    assert json.loads((tmp_path / "spawns.json").read_text()) == {}
    assert guard.before_spawn("a", "open") == 1


def test_a_spawn_for_another_status_starts_a_new_count(tmp_path):
    guard = RespawnGuard(tmp_path / "spawns.json", limit=3)
    guard.before_spawn("a", "open")
    guard.before_spawn("a", "open")
    assert guard.before_spawn("a", "review") == 1


def test_a_held_task_that_is_released_starts_over(tmp_path):
    guard = RespawnGuard(tmp_path / "spawns.json", limit=2)
    for _ in range(2):
        guard.before_spawn("a", "open")
        verdict = guard.after_session("a", "open")
    assert verdict.hold
    assert guard.before_spawn("a", "open") == 1      # someone ran `task _unhold a`


def test_the_count_survives_a_new_guard_on_the_same_file(tmp_path):
    RespawnGuard(tmp_path / "spawns.json").before_spawn("a", "open")
    # ralph.py itself killed and restarted: the same file keeps counting.
    assert RespawnGuard(tmp_path / "spawns.json").before_spawn("a", "open") == 2


def test_a_session_without_a_recorded_spawn_is_not_held(tmp_path):
    verdict = RespawnGuard(tmp_path / "spawns.json").after_session("x", "open")
    assert not verdict.hold and verdict.message == "task x: no spawn recorded"


def test_a_corrupt_spawn_file_counts_from_scratch(tmp_path):
    (tmp_path / "spawns.json").write_text("{not json")
    assert RespawnGuard(tmp_path / "spawns.json").before_spawn("a", "open") == 1


def test_a_limit_below_one_is_refused(tmp_path):
    with pytest.raises(ValueError, match="respawn limit must be at least 1, got: 0"):
        RespawnGuard(tmp_path / "spawns.json", limit=0)

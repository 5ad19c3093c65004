"""Respawn safety (seed 000): the ralph-loop state file is neutralised before a
launch, and the respawn guard holds a task spawned N times for one status without progress."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ralphpy.session.respawn import RespawnGuard, neutralise_ralph_loop

LOOP = Path(".claude") / "ralph-loop.local.md"
INACTIVE = Path(".claude") / "ralph-loop.local.md.inactive"
STATE = ('---\nactive: {active}\niteration: 3\nmax_iterations: 0\n'
         'completion_promise: "DONE"\nstarted_at: "2026-02-23T10:00:00Z"\n---\n\n'
         "Keep going; active: true in the body is prompt text.\n")


def put_loop_file(workdir: Path, text: str) -> Path:
    path = workdir / LOOP
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("active, flipped", [("true", True), ("false", False)],
                         ids=["active-true", "active-false"])
def test_a_leftover_loop_file_is_deactivated_and_moved_aside(tmp_path, active, flipped):
    put_loop_file(tmp_path, STATE.format(active=active))
    message = neutralise_ralph_loop(tmp_path)
    assert not (tmp_path / LOOP).exists()
    moved = (tmp_path / INACTIVE).read_text()
    assert moved == STATE.format(active="false")
    assert "active: true in the body is prompt text." in moved      # only the front matter
    assert message.startswith("respawn safety: neutralised .claude/ralph-loop.local.md")
    assert ("active: true -> false" in message) is flipped
    assert "moved to .claude/ralph-loop.local.md.inactive" in message


def test_neutralising_is_idempotent_and_harmless_when_absent(tmp_path):
    assert neutralise_ralph_loop(tmp_path) is None
    put_loop_file(tmp_path, STATE.format(active="true"))
    assert neutralise_ralph_loop(tmp_path) is not None
    assert neutralise_ralph_loop(tmp_path) is None
    assert (tmp_path / INACTIVE).read_text() == STATE.format(active="false")


def test_an_older_inactive_file_is_replaced(tmp_path):
    (tmp_path / ".claude").mkdir()
    (tmp_path / INACTIVE).write_text("old leftover\n")
    put_loop_file(tmp_path, STATE.format(active="true"))
    neutralise_ralph_loop(tmp_path)
    assert (tmp_path / INACTIVE).read_text() == STATE.format(active="false")
    assert sorted(p.name for p in (tmp_path / ".claude").iterdir()) == [INACTIVE.name]


def test_a_file_without_front_matter_is_moved_unchanged(tmp_path):
    put_loop_file(tmp_path, "active: true\nno front matter here\n")
    message = neutralise_ralph_loop(tmp_path)
    assert "active: true -> false" not in message
    assert (tmp_path / INACTIVE).read_text() == "active: true\nno front matter here\n"
    assert not (tmp_path / LOOP).exists()


def test_an_unreadable_loop_file_is_still_moved_aside(tmp_path, mocker):
    path = put_loop_file(tmp_path, STATE.format(active="true"))
    if os.geteuid() == 0:
        # root reads any file: make the read fail the way chmod 000 does for a user.
        real = Path.read_text
        mocker.patch.object(Path, "read_text", autospec=True, side_effect=lambda self, *a, **k: (
            (_ for _ in ()).throw(PermissionError(13, "Permission denied"))
            if self == path else real(self, *a, **k)))
    else:
        path.chmod(0)
    message = neutralise_ralph_loop(tmp_path)
    assert "unreadable" in message
    assert not path.exists()
    assert (tmp_path / INACTIVE).exists()


def test_a_directory_in_place_of_the_loop_file_is_left_alone(tmp_path):
    (tmp_path / LOOP).mkdir(parents=True)
    assert neutralise_ralph_loop(tmp_path) is None


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

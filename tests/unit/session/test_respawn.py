"""Respawn safety (seed 000): the ralph-loop state file is neutralised before a launch."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from ralphpy.session.respawn import neutralise_ralph_loop

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

"""FRESH_START and the resume policy ("Fresh context"): never resume by default,
--continue-session opts in, FRESH_START forces one fresh launch and is consumed."""
from __future__ import annotations

from pathlib import Path

import pytest

from ralphpy.session import fresh_start


def test_consume_reports_and_removes_an_existing_sentinel(tmp_path: Path):
    ralph = tmp_path / ".ralph"
    fresh_start.mark(ralph)
    assert (ralph / "FRESH_START").is_file()
    assert fresh_start.consume(ralph) is True
    assert not (ralph / "FRESH_START").exists()
    assert fresh_start.consume(ralph) is False


def test_consume_without_a_ralph_directory_is_false(tmp_path: Path):
    assert fresh_start.consume(tmp_path / "missing") is False


def test_mark_twice_leaves_one_sentinel(tmp_path: Path):
    fresh_start.mark(tmp_path)
    fresh_start.mark(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["FRESH_START"]


@pytest.mark.parametrize("continue_session, fresh, expected", [
    (False, False, []), (False, True, []), (True, True, []), (True, False, ["--continue"]),
], ids=["default-never-resumes", "default-fresh", "opt-in-but-fresh", "opt-in-resumes"])
def test_resume_args_follow_the_policy(continue_session, fresh, expected):
    assert fresh_start.session_resume_args(continue_session, fresh) == expected


def test_a_completed_task_makes_only_the_next_opted_in_launch_fresh(tmp_path: Path):
    fresh_start.mark(tmp_path)          # after a completed task
    launches = [fresh_start.session_resume_args(True, fresh_start.consume(tmp_path))
                for _ in range(2)]
    assert launches == [[], ["--continue"]]

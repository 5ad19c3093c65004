"""fleet.view: the store whose fleet `ralph status` shows."""
from __future__ import annotations

from pathlib import Path

import pytest

from ralphpy.fleet import view

A = "postgresql://ralph@a/x"
B = "postgresql://ralph@b/y"


@pytest.mark.parametrize("environ,yml,expected", [
    ({"RALPH_TASKS_DB": B}, None, B),
    ({"RALPH_TASKS": A}, None, A),
    ({"RALPH_TASKS": A, "RALPH_TASKS_DB": B}, None, A),
    ({"RALPH_TASKS_DB": B}, A, A),
    ({"RALPH_TASKS": "sqlite", "RALPH_TASKS_DB": B}, A, B),
    ({"RALPH_TASKS": "tk", "RALPH_TASKS_DB": B}, None, ""),
    ({"RALPH_TASKS_DB": B}, "tk", ""),
    ({"RALPH_TASKS_DB": "shared/tasks.db"}, None, ""),
], ids=["tasks-db", "tasks", "tasks-over-tasks-db", "ralph-yml-over-tasks-db",
        "tasks-sqlite-over-ralph-yml", "source", "ralph-yml-source", "file"])
def test_the_fleet_shown_is_of_the_store_a_run_started_here_would_use(tmp_path: Path, environ,
                                                                      yml, expected):
    if yml is not None:
        (tmp_path / "ralph.yml").write_text(f"tasks: {yml}\n")
    assert view.named_store(environ, tmp_path) == expected

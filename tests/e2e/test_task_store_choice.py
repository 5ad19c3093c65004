"""Black-box: `ralph status` from another shell reads the store a run started in the same place
would use (docs/fleet.md): a URL in the `tasks` setting wins over RALPH_TASKS_DB, and
RALPH_TASKS_DB counts only while the setting is sqlite. Real ralph.py processes."""
from __future__ import annotations

import json

UNREACHABLE = "postgresql://ralph@127.0.0.1:1/backlog"


def test_status_shows_no_fleet_where_ralph_yml_names_a_task_source(git_repo, run_ralph):
    env = {"RALPH_TASKS_DB": UNREACHABLE}
    (git_repo / "ralph.yml").write_text("tasks: sqlite\n")
    fleet = json.loads(run_ralph("status", "--json", env=env).stdout)["fleet"]
    assert fleet["store"] == UNREACHABLE and fleet["error"]      # RALPH_TASKS_DB counts
    (git_repo / "ralph.yml").write_text("tasks: tk\n")           # a run here would use tk
    proc = run_ralph("status", "--json", env=env)
    assert (proc.returncode, json.loads(proc.stdout)["fleet"], proc.stderr) == (0, None, "")
    assert "Fleet:" not in run_ralph("status", env=env).stdout

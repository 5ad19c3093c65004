"""Black-box: the commands that read the task store from another shell (`ralph status`, its
--watch, `ralph report`) read the store a run started in the same place would use
(docs/fleet.md): a URL in the `tasks` setting wins over RALPH_TASKS_DB, RALPH_TASKS_DB counts
only while the setting is sqlite, and a task source keeps its own backlog, so no SQLite file is
read for it. Real ralph.py processes, the real task CLI, a throwaway PostgreSQL server."""
from __future__ import annotations

import json
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "unit" / "report"))
from synthetic import make_run  # noqa: E402 (the report tests' run records)

RUN = "20261122T220000Z-aaaaaa"
UNREACHABLE = "postgresql://ralph@127.0.0.1:1/backlog"


def queue(run_ralph, env=None) -> dict | None:
    """The backlog's queue as `ralph status --watch` shows it."""
    proc = run_ralph("status", "--watch", "--count", "1", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["queue"]


def test_status_shows_no_fleet_where_ralph_yml_names_a_task_source(git_repo, run_ralph):
    env = {"RALPH_TASKS_DB": UNREACHABLE}
    (git_repo / "ralph.yml").write_text("tasks: sqlite\n")
    fleet = json.loads(run_ralph("status", "--json", env=env).stdout)["fleet"]
    assert fleet["store"] == UNREACHABLE and fleet["error"]      # RALPH_TASKS_DB counts
    (git_repo / "ralph.yml").write_text("tasks: tk\n")           # a run here would use tk
    proc = run_ralph("status", "--json", env=env)
    assert (proc.returncode, json.loads(proc.stdout)["fleet"], proc.stderr) == (0, None, "")
    assert "Fleet:" not in run_ralph("status", env=env).stdout


def test_the_report_reads_the_store_ralph_tasks_names_over_ralph_tasks_db(
        git_repo, run_ralph, run_task, pg_url, tmp_path):
    make_run(git_repo / ".ralph", RUN, 1)                         # its one task: t0, done
    file = tmp_path / "other.db"
    assert run_task("create", "t0", "From the file", env={"RALPH_TASKS_DB": str(file)}
                    ).returncode == 0
    assert run_task("create", "t0", "From the server", env={"RALPH_TASKS_DB": pg_url}
                    ).returncode == 0
    proc = run_ralph("report", "--json", env={"RALPH_TASKS": pg_url,
                                              "RALPH_TASKS_DB": str(file)})
    assert proc.returncode == 0, proc.stderr
    [task] = json.loads(proc.stdout)["tasks"]
    assert (task["id"], task["title"]) == ("t0", "From the server")


def test_under_a_task_source_no_leftover_sqlite_backlog_is_read(git_repo, run_ralph, run_task):
    make_run(git_repo / ".ralph", RUN, 1, ended=False)            # its one task: t0, done
    assert run_task("create", "t0", "Left from a sqlite run").returncode == 0
    here = run_ralph("report", "--json")                          # the sqlite store: read
    assert json.loads(here.stdout)["tasks"][0]["title"] == "Left from a sqlite run"
    assert queue(run_ralph) == {"open": 1}
    env = {"RALPH_TASKS": "tk"}
    proc = run_ralph("report", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["tasks"][0]["title"] is None
    assert queue(run_ralph, env) is None

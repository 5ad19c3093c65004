"""fleet.store: the store a run's environment names, its start-up check, claims files and the
heartbeat's pace."""
from __future__ import annotations

from pathlib import Path

import pytest

from ralphpy.errors import EXIT_USAGE, UsageError
from ralphpy.fleet import store

URL = "postgresql://ralph:hunter2@db/tasks"


@pytest.mark.parametrize("environ,expected", [
    ({"RALPH_TASKS_DB": URL}, URL),
    ({"RALPH_TASKS_DB": "postgres://db/t"}, "postgres://db/t"),
    ({"RALPH_TASKS_DB": URL, "RALPH_TASKS": "tk"}, None),       # a source answers instead
    ({"RALPH_TASKS_DB": URL, "RALPH_TASKS": "sqlite"}, URL),
    ({"RALPH_TASKS_DB": URL, "RALPH_TASKS": "postgres://db/t"}, "postgres://db/t"),  # it wins
    ({"RALPH_TASKS_DB": "shared/tasks.db"}, None),
    ({}, None)], ids=["url", "postgres", "source", "sqlite-name", "setting-url", "file", "none"])
def test_the_fleet_store_is_a_postgresql_url_in_ralph_tasks_db(environ, expected):
    assert store.url(environ) == expected


def test_the_check_refuses_an_unknown_scheme_without_its_password():
    store.check({"RALPH_TASKS_DB": "x.db"})
    store.check({"RALPH_TASKS_DB": "foo://a", "RALPH_TASKS": "flowctl"})   # not used
    with pytest.raises(UsageError) as err:
        store.check({"RALPH_TASKS_DB": "foo://u:hunter2@db/x"})
    assert err.value.exit_code == EXIT_USAGE
    assert str(err.value) == ("unknown task store 'foo://u:***@db/x': use a file path or "
                              "postgresql://user@host/database")


def test_the_check_refuses_a_postgresql_store_it_cannot_reach_without_its_password():
    lines: list[str] = []
    with pytest.raises(UsageError) as err:                  # nothing listens on port 1
        store.check({"RALPH_TASKS_DB": "postgresql://ralph:hunter2@127.0.0.1:1/tasks"}, 1.0,
                    lines.append)
    assert err.value.exit_code == EXIT_USAGE
    assert "not reached within 1s" in str(err.value)
    assert "hunter2" not in str(err.value) + "".join(lines)
    assert lines == ["waiting up to 1s for postgresql://ralph:***@127.0.0.1:1/tasks"]


def test_each_agent_has_its_own_claims_file_in_the_run_directory(tmp_path: Path):
    runs = tmp_path / "runs" / "r1"
    assert store.claims_file(tmp_path, "r1", "8f3e") == runs / "claims-8f3e.txt"
    assert store.claims_file(tmp_path, "r1", "a/../b") == runs / "claims-a_.._b.txt"
    # a call as the agent: its claims file and its id (a call made for another agent's
    # session, as the run's crash-safety `fail` is, is that agent's)
    assert store.as_agent({"A": "1", "RALPH_AGENT_ID": "run"}, tmp_path, "r1", "8f3e") == {
        "A": "1", "RALPH_CLAIMS_FILE": str(runs / "claims-8f3e.txt"), "RALPH_AGENT_ID": "8f3e"}


@pytest.mark.parametrize("lease,interval", [(3, 1), (600, 200), (3600, 200), (90, 30)])
def test_a_beat_comes_every_third_of_the_lease_or_of_the_agents_own_claim(lease, interval):
    assert store.beat_interval(lease) == interval
    assert store.shown(URL) == "postgresql://ralph:***@db/tasks"


def test_a_sessions_heartbeat_renews_to_the_lease_at_the_pace_the_lease_gives():
    beat = store.heartbeat("/x/task", "8f3e", 1800.0, {"RALPH_TASKS_DB": URL}, None)
    assert beat.argv == ["/x/task", "_heartbeat", "--agent", "8f3e", "--lease", "1800"]
    assert beat.interval_s == store.beat_interval(1800.0) == 200
    assert store.heartbeat(None, "8f3e", 1800.0, {}, None) is None    # no task CLI to run

"""backlog.readonly on a PostgreSQL store: a runner reads the store after every session (the
tasks its agent finished) and for its dry run, report and status; those reads share one kept
connection instead of starting a server process each. A real server and task CLI."""
from __future__ import annotations

from pathlib import Path

from conftest import wait_for
from pgserver import pg_query
from ralphpy.backlog import readonly


def _probe(url: str) -> str:
    """url for this test's own queries, told apart from the reads it watches."""
    import psycopg.conninfo
    return psycopg.conninfo.make_conninfo(url, application_name="probe")


def _readers_since(url: str, since) -> set[int]:
    """The client connections to url's database started after `since`, other than probes."""
    return {pid for (pid,) in pg_query(_probe(url), (
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND "
        "backend_type = 'client backend' AND application_name <> 'probe' AND "
        "backend_start > %s"), (since,))}


def test_reads_of_one_store_share_one_kept_connection(git_repo: Path, base_env, run_task,
                                                      pg_url, monkeypatch):
    monkeypatch.chdir(git_repo)  # the scope is the current directory's, as for the task CLI
    env = {**base_env, "RALPH_TASKS_DB": pg_url}
    assert run_task("plan-sync", env=env, input='{"id":"a","t":"A"}\n').returncode == 0
    assert run_task("claim", env={**env, "RALPH_AGENT_ID": "w1"}).returncode == 0
    assert run_task("done", "a", env=env).returncode == 0
    (since,) = pg_query(_probe(pg_url), "SELECT now()")[0]

    first = readonly.call(["peek", "-n", "1"], environ=env, cwd=git_repo)
    assert (first.ok, first.output) == (True, ""), first.output
    kept = wait_for(lambda: _readers_since(pg_url, since))
    assert readonly.finished_by("w1", "2000-01-01 00:00:00", environ=env, cwd=git_repo) == ["a"]
    listed = readonly.call(["list", "--all"], environ=env, cwd=git_repo)
    assert listed.ok and "a" in listed.output
    assert len(kept) == 1 and _readers_since(pg_url, since) == kept


def test_a_kept_connection_the_server_dropped_is_opened_again(git_repo: Path, base_env,
                                                              run_task, pg_url, pg_server,
                                                              monkeypatch):
    monkeypatch.chdir(git_repo)
    env = {**base_env, "RALPH_TASKS_DB": pg_url}
    assert run_task("plan-sync", env=env, input='{"id":"a","t":"A"}\n').returncode == 0
    assert run_task("claim", env={**env, "RALPH_AGENT_ID": "w1"}).returncode == 0
    assert run_task("done", "a", env=env).returncode == 0
    assert readonly.finished_by("w1", "2000-01-01 00:00:00", environ=env, cwd=git_repo) == ["a"]
    pg_server.restart()
    assert readonly.finished_by("w1", "2000-01-01 00:00:00", environ=env, cwd=git_repo) == ["a"]
    assert readonly.call(["list", "--all"], environ=env, cwd=git_repo).ok

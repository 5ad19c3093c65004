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


def test_the_reads_around_a_session_answer_on_a_postgresql_store(git_repo: Path, base_env,
                                                                   run_task, pg_url,
                                                                   monkeypatch):
    """What the loop reads between sessions by index (the tasks touched since, some by id,
    those that failed before, with a `verify:` line, whether one could still start) in
    PostgreSQL's dialect."""
    monkeypatch.chdir(git_repo)
    env = {**base_env, "RALPH_TASKS_DB": pg_url}
    lines = ('{"id":"a","t":"A","d":"Fix.\\nverify: make test"}\n{"id":"b","t":"B"}\n'
             '{"id":"c","t":"C","deps":["a"]}\n')
    assert run_task("plan-sync", env=env, input=lines).returncode == 0
    w1 = {**env, "RALPH_AGENT_ID": "w1"}
    for argv in (("claim", "b"), ("fail", "b", "--reason", "no"), ("claim", "a"), ("done", "a")):
        assert run_task(*argv, env=w1).returncode == 0, argv
    kw = {"environ": env, "cwd": git_repo}
    ids = lambda records: [t["id"] for t in records]          # noqa: E731
    assert ids(readonly.export_records("touched", since="2000-01-01 00:00:00", **kw)) == [
        "a", "b", "c"]
    assert ids(readonly.export_records("touched", since="2999-01-01 00:00:00", **kw)) == []
    assert ids(readonly.export_records("slugs", slugs=["c", "a"], **kw)) == ["a", "c"]
    assert [(t["id"], t["retry_count"]) for t in readonly.export_records("retried", **kw)] == [
        ("b", 1)]
    assert ids(readonly.export_records("verify_line", **kw)) == ["a"]
    assert readonly.export_records("slugs", slugs=["c"], **kw)[0]["deps"] == ["a"]
    assert list(readonly.retry_counts(**kw).values()) == [1]
    assert readonly.any_pending(**kw) is True
    for slug in ("b", "c"):
        assert run_task("_hold", slug, "--reason", "parked", env=env).returncode == 0
    assert readonly.any_pending(**kw) is False

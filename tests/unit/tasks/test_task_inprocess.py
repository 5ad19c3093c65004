"""In-process tests of ralphpy.tasks.cli.main: called repeatedly in one process with
different environments and streams, it returns exit codes and never exits."""
from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from conftest import log_git_calls
from pgserver import OTHER_CLIENTS
from ralphpy.tasks import cli


def call(argv, environ, stdin=""):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(argv, stdin=io.StringIO(stdin), stdout=out, stderr=err, environ=environ)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def in_repo(git_repo: Path):
    old = os.getcwd()
    os.chdir(git_repo)
    try:
        yield git_repo
    finally:
        os.chdir(old)


def test_main_runs_many_times_with_different_environments(in_repo, base_env, tmp_path):
    one = {**base_env, "RALPH_SCOPE_BRANCH": "one"}
    two = {**base_env, "RALPH_SCOPE_BRANCH": "two", "RALPH_TASKS_DB": str(tmp_path / "two.db")}
    assert call(["plan-sync"], one, '{"id":"a","t":"A"}\n') == (
        0, "inserted: 1, updated: 0, deleted: 0, skipped (done): 0\n", "")
    assert call(["plan-status"], two) == (0, "0 open, 0 active, 0 done, 0 blocked, 0 deleted\n", "")
    assert call(["plan-status"], one) == (0, "1 open, 0 active, 0 done, 0 blocked, 0 deleted\n", "")
    code, out, err = call(["claim"], {**one, "RALPH_AGENT_ID": "in1"})
    assert (code, out.splitlines()[:1], "assignee: in1" in out, err) == (0, ["## Task a"], True, "")
    assert call(["claim"], one) == (2, "", "No eligible tasks\n")
    assert call(["_get-scope"], two) == (0, "repo:acme/widgets\nbranch:two\n", "")
    assert (tmp_path / "two.db").exists() and (in_repo / ".ralph" / "tasks.db").exists()


def test_main_returns_error_codes_instead_of_exiting(in_repo, base_env):
    assert call([], base_env)[0] == 1
    assert call(["nope"], base_env) == (1, "", "Error: unknown command 'nope'\n")
    assert call(["show", "ghost"], base_env) == (2, "", "Error: task 'ghost' not found\n")
    assert call(["--help"], base_env) == (0, cli.HELP, "")


def test_git_is_looked_up_on_the_given_environments_path(in_repo, base_env, bin_dir, tmp_path):
    log = tmp_path / "git.log"
    log_git_calls(bin_dir, log)
    config = in_repo / ".git" / "config"
    config.write_text("[include]\n\tpath = nothing\n" + config.read_text())  # git must answer
    assert call(["_get-scope"], base_env) == (0, "repo:acme/widgets\nbranch:main\n", "")
    assert "remote get-url origin" in log.read_text()
    assert call(["_get-scope"], {**base_env, "PATH": str(tmp_path / "empty")}) == (
        1, "", "Error: not inside a git repository. Run: git init\n")


def _sessions(watch) -> int:
    """Sessions ever established to the watcher's database, by the server's count: each one
    counts from its first idle moment or its end, so one opened and closed again counts too."""
    return watch.execute("SELECT sessions FROM pg_stat_database "
                         "WHERE datname = current_database()").fetchone()[0]


def test_migrate_db_leaves_its_connection_to_the_next_command_on_that_store(in_repo, base_env,
                                                                            pg_url):
    import psycopg
    assert call(["plan-sync"], base_env, '{"id":"a","t":"A"}\n')[0] == 0
    with psycopg.connect(pg_url, autocommit=True) as watch:
        if watch.info.server_version < 150000:
            pytest.skip("PostgreSQL before 15: no pg_stat_force_next_flush, so the watcher's "
                        "own session may count late")
        # the watcher's own session goes into the count now, before `before` is read
        watch.execute("SELECT pg_stat_force_next_flush()")
        before = _sessions(watch)
        assert call(["migrate-db", pg_url], base_env)[0] == 0
        on_store = {**base_env, "RALPH_TASKS_DB": pg_url}
        assert call(["plan-status"], on_store) == (
            0, "1 open, 0 active, 0 done, 0 blocked, 0 deleted\n", "")
        # the connection the process keeps, still open, ended and gone: a session has counted
        # by the time its server process has exited
        ended = f"SELECT pg_terminate_backend(pid, 10000) FROM {OTHER_CLIENTS}"
        assert watch.execute(ended).fetchall() == [(True,)]
        # one session for both commands, not even another one closed again: plan-status used
        # migrate-db's
        assert _sessions(watch) - before == 1

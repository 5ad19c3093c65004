"""The throwaway PostgreSQL server of the tests and benchmarks (tests/pgserver.py, the pg_server
and pg_url fixtures): both ways in, the password check, restart, and that no server process or
directory outlives its owner, however the owner ends."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

import pgserver
from conftest import ROOT, wait_for
from pgserver import pg_query


def _gone(pid: int) -> bool:
    """A zombie awaiting its reaper counts as gone: it runs nothing and holds no port."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _server_processes(cluster: pgserver.Cluster) -> list[int]:
    postmaster = psutil.Process(cluster.postmaster_pid())
    return [postmaster.pid, *(child.pid for child in postmaster.children(recursive=True))]


def _require_binaries() -> None:
    reason = pgserver.missing(need_driver=False)
    if reason:
        pytest.skip(reason)


def test_the_superuser_comes_in_over_the_socket_and_the_password_role_over_tcp(
        pg_url, pg_password_url):
    assert pg_query(pg_url, "SELECT current_user, inet_server_addr()") == [("ralph", None)]
    who, addr = pg_query(pg_password_url, "SELECT current_user, host(inet_server_addr())")[0]
    assert (who, addr) == ("ralph_pw", "127.0.0.1")
    assert pg_query(pg_password_url, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user") == [(False,)]


def test_both_roles_can_use_what_the_other_created_in_the_test_database(pg_url, pg_password_url):
    pg_query(pg_url, "CREATE TABLE made_by_superuser (n int)")
    pg_query(pg_password_url, "INSERT INTO made_by_superuser VALUES (1)")
    pg_query(pg_password_url, "CREATE TABLE made_by_password_role (n int)")
    pg_query(pg_url, "INSERT INTO made_by_password_role VALUES (2)")
    assert pg_query(pg_password_url, "SELECT n FROM made_by_superuser") == [(1,)]
    assert pg_query(pg_url, "SELECT n FROM made_by_password_role") == [(2,)]


def test_a_wrong_password_and_the_superuser_over_tcp_are_refused(pg_server, pg_database):
    import psycopg
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        pg_query(pg_server.password_url(pg_database, password="wrong"), "SELECT 1")
    superuser_tcp = f"postgresql://ralph:secret@127.0.0.1:{pg_server.port}/{pg_database}"
    with pytest.raises(psycopg.OperationalError, match="no pg_hba.conf entry"):
        pg_query(superuser_tcp, "SELECT 1")


def test_restart_keeps_the_data_and_the_port_and_drops_open_connections(pg_server, pg_url):
    import psycopg
    pg_query(pg_url, "CREATE TABLE kept (n int)")
    pg_query(pg_url, "INSERT INTO kept VALUES (%s)", (42,))
    port, before = pg_server.port, pg_server.postmaster_pid()
    with psycopg.connect(pg_url, autocommit=True) as held:
        pg_server.restart()
        with pytest.raises(psycopg.OperationalError):
            held.execute("SELECT 1")
    assert pg_server.port == port and pg_server.postmaster_pid() not in (None, before)
    assert pg_query(pg_url, "SELECT n FROM kept") == [(42,)]


def test_a_test_database_is_dropped_even_while_a_client_is_connected(pg_server):
    import psycopg
    name = pg_server.create_database()
    with psycopg.connect(pg_server.url(name), autocommit=True) as held:
        pg_server.drop_database(name)
        with pytest.raises(psycopg.OperationalError):
            held.execute("SELECT 1")
    assert pg_query(pg_server.url(), "SELECT 1 FROM pg_database WHERE datname = %s", (name,)) == []


def test_destroy_leaves_no_server_process_and_no_directory():
    _require_binaries()
    cluster = pgserver.start_cluster()
    try:
        pids = _server_processes(cluster)
        assert len(pids) > 1                     # the postmaster and its background workers
    finally:
        cluster.destroy()
    wait_for(lambda: all(_gone(pid) for pid in pids))
    assert not cluster.base.exists()
    assert not [p.pid for p in psutil.process_iter(["cmdline"])
                if str(cluster.data) in " ".join(p.info["cmdline"] or [])]


OWNER = """
import json, os, signal, sys
sys.path.insert(0, sys.argv[1])
import pgserver
cluster = pgserver.start_cluster()
print(json.dumps([str(cluster.base), cluster.postmaster_pid()]), flush=True)
if sys.argv[2] == "sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("ending", ["exit", "sigkill"], ids=["atexit", "guard-after-sigkill"])
def test_a_server_is_stopped_and_removed_when_its_owner_ends_without_destroying_it(ending):
    _require_binaries()
    owner = subprocess.run([sys.executable, "-c", OWNER, str(ROOT / "tests"), ending],
                           capture_output=True, text=True, timeout=120)
    assert owner.returncode == (-signal.SIGKILL if ending == "sigkill" else 0), owner.stderr
    base, postmaster = json.loads(owner.stdout)
    wait_for(lambda: _gone(postmaster), timeout=60)
    wait_for(lambda: not Path(base).exists(), timeout=60)


def test_the_server_runs_as_an_unprivileged_user_when_the_tests_run_as_root(pg_server):
    if os.geteuid() != 0:
        pytest.skip("not running as root: the server runs as the current user")
    assert psutil.Process(pg_server.postmaster_pid()).uids().real == pg_server.user[0] != 0

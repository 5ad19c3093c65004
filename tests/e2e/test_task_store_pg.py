"""Black-box tests of what only the PostgreSQL store does (docs/fleet.md): store URLs, the
versioned schema, claims that hold across many claimers, fencing tokens, heartbeats, the fleet
listing, a lost server, and copying a SQLite backlog in. Real task CLI processes against a
real throwaway PostgreSQL server (conftest's pg_url); the contract both stores share is
tested by test_task_cli.py and test_task_commands.py, once per store."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import ROOT, TASK, wait_for
from pgserver import OTHER_CLIENTS, pg_query
from ralphpy.tasks import build_cmds, claims
from ralphpy.tasks.context import Ctx
from task_helpers import (REFUSALS, PgStore, dump, fails, jsonl, ok, on_tasks, query, refused_url,
                          traced, work_of)


@pytest.fixture
def pg(pg_url: str, base_env: dict[str, str]) -> PgStore:
    base_env["RALPH_TASKS_DB"] = pg_url
    return PgStore(pg_url)


def claims_file(tmp_path: Path, name: str) -> dict[str, str]:
    return {"RALPH_CLAIMS_FILE": str(tmp_path / f"claims-{name}"), "RALPH_AGENT_ID": name}


# --- store URLs ---------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["mysql://u:hunter2@db/x", "sqlite3://tasks.db", "postgresq://a"])
def test_an_unknown_scheme_is_one_line_and_creates_nothing(run_task, git_repo, tmp_path, value):
    before = sorted(p.name for p in git_repo.iterdir())
    proc = run_task("plan-status", env={"RALPH_TASKS_DB": value})
    shown = value.replace("hunter2", "***")
    fails(proc, 1, f"Error: unknown task store '{shown}': use a file path or "
                   "postgresql://user@host/database\n")
    assert sorted(p.name for p in git_repo.iterdir()) == before
    assert not list(tmp_path.rglob("*:"))  # no directory named after the scheme


def test_an_unreachable_server_is_one_line_without_the_password(run_task):
    url = "postgresql://ralph_pw:hunter2@127.0.0.1:9/nowhere?connect_timeout=1"
    proc = run_task("peek", env={"RALPH_TASKS_DB": url, "RALPH_STORE_RETRY": "0"})
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith("Error: task store unreachable: "
                                  "postgresql://ralph_pw:***@127.0.0.1:9/nowhere")
    assert proc.stderr.count("\n") == 1 and "hunter2" not in proc.stderr


def test_without_psycopg_from_a_checkout_the_store_says_to_run_make_setup(git_repo, base_env,
                                                                           pg):
    """Not `pip install 'ralph-py[postgres]'`: that name on the package index is another
    project, which installs a `ralph` of its own."""
    # -S: no site-packages, so no psycopg: the launcher's own fallback is bypassed on purpose.
    code = (f"import sys; sys.path.insert(0, {str(ROOT / 'lib')!r}); "
            "from ralphpy.tasks.cli import console_main; console_main()")
    proc = subprocess.run([sys.executable, "-S", "-c", code, "plan-status"], cwd=git_repo,
                          env=base_env, capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        1, "", f"Error: a postgresql:// task store needs psycopg: run `make setup` in {ROOT}\n")


@pytest.mark.parametrize("case", REFUSALS)
def test_a_url_the_server_refuses_is_one_line_at_once_never_retried(run_task, pg_server,
                                                                   pg_database, case):
    url, answer = refused_url(pg_server, pg_database, case)
    proc = run_task("peek", env={"RALPH_TASKS_DB": url, "RALPH_STORE_RETRY": "60"})
    assert (proc.returncode, proc.stdout) == (1, "")
    shown = url.replace("hunter2", "***").replace("secret", "***")
    assert proc.stderr.startswith(f"Error: task store refused the connection: {shown}: ")
    assert proc.stderr.count("\n") == 1 and answer in proc.stderr   # no retry line before it



@pytest.mark.parametrize("url,words", [
    ("postgresql://ralph:hunter2@[::1:5432/db", 'matching "]" in IPv6 host address'),
    ("postgresql://ralph:hunter2@127.0.0.1:5432/db?foo=bar", 'invalid URI query parameter: "foo"'),
    ("postgresql://%zz:hunter2@127.0.0.1/db", 'invalid percent-encoded token: "%zz"'),
], ids=["unclosed-ipv6", "unknown-parameter", "bad-escape"])
def test_a_url_libpq_cannot_read_is_one_line_with_the_password_hidden(run_task, url, words):
    """psycopg's message quotes the whole URL: never a traceback showing the password."""
    proc = run_task("peek", env={"RALPH_TASKS_DB": url, "RALPH_STORE_RETRY": "60"})
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.startswith("Error: task store URL not usable: postgresql://")
    assert proc.stderr.count("\n") == 1 and words in proc.stderr
    assert "hunter2" not in proc.stderr and "***" in proc.stderr

# --- the schema ---------------------------------------------------------------------------

def test_first_use_applies_the_migrations_once_even_when_two_start_together(run_task, pg):
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: run_task("plan-status"), range(4)))
    for proc in results:
        assert ok(proc) == "0 open, 0 active, 0 done, 0 blocked, 0 deleted\n"
    assert query(pg, "SELECT version FROM ralph_schema ORDER BY 1") == [(1,), (2,), (3,), (4,)]


def test_a_store_of_an_older_schema_is_upgraded_on_first_use(run_task, pg):
    ok(run_task("create", "a", "A"))
    for index in ("idx_tasks_scope_expiry", "idx_tasks_updated", "idx_tasks_retried"):
        query(pg, f"DROP INDEX {index}")                   # as version 1 left it
    query(pg, "DELETE FROM ralph_schema WHERE version > 1")
    assert ok(run_task("show", "a")).startswith("ID:          a\n")
    assert query(pg, "SELECT version FROM ralph_schema ORDER BY 1") == [(1,), (2,), (3,), (4,)]
    indexes = {name for (name,) in query(pg, "SELECT indexname FROM pg_indexes WHERE "
                                             "tablename = 'tasks'")}
    assert "idx_tasks_scope_expiry" in indexes and "idx_tasks_scope_lease" not in indexes
    assert {"idx_tasks_updated", "idx_tasks_retried"} <= indexes


def test_a_schema_newer_than_this_code_is_refused(run_task, pg):
    ok(run_task("create", "a", "A"))
    query(pg, "INSERT INTO ralph_schema (version) VALUES (99)")
    before = dump(pg)
    fails(run_task("create", "b", "B"), 1, "Error: the task store's schema is version 99, newer "
                                           "than this ralph.py knows (4): upgrade ralph.py\n")
    assert dump(pg) == before


# --- the planner's statistics ----------------------------------------------------------------

def test_plan_sync_refreshes_the_statistics_only_after_it_changed_something(run_task, pg):
    def analyzed() -> list[tuple]:
        return query(pg, "SELECT relname, analyze_count FROM pg_stat_user_tables WHERE relname "
                         "IN ('tasks', 'task_deps') ORDER BY 1")
    lines = jsonl({"id": "a", "t": "A"}, {"id": "b", "t": "B", "deps": ["a"]})
    ok(run_task("plan-sync", input=lines))
    assert analyzed() == [("task_deps", 1), ("tasks", 1)]
    assert ok(run_task("plan-sync", input=lines)).startswith("inserted: 0, updated: 0, deleted: 0")
    assert analyzed() == [("task_deps", 1), ("tasks", 1)]
    # dependencies alone: the counts do not show them, the statistics must
    ok(run_task("plan-sync", input=jsonl({"id": "a", "t": "A", "deps": ["b"]},
                                         {"id": "b", "t": "B"})))
    assert analyzed() == [("task_deps", 2), ("tasks", 2)]
    assert query(pg, "SELECT t.slug, b.slug FROM task_deps d JOIN tasks t ON t.id = d.task_id "
                     "JOIN tasks b ON b.id = d.blocked_by") == [("a", "b")]


# --- claims across many claimers ------------------------------------------------------------

def test_concurrent_claimers_take_every_task_exactly_once(run_task, pg):
    ok(run_task("plan-sync", input=jsonl(*({"id": f"t{i:02}", "t": f"T{i}"} for i in range(24)))))

    def claimer(n: int) -> list[str]:
        taken = []
        while True:
            proc = run_task("claim", "--agent", f"a{n}")
            if proc.returncode == 2:
                return taken
            taken.append(ok(proc).splitlines()[1].removeprefix("id: "))
    with ThreadPoolExecutor(8) as pool:
        claimed = [slug for taken in pool.map(claimer, range(8)) for slug in taken]
    assert sorted(claimed) == [f"t{i:02}" for i in range(24)]
    assert query(pg, "SELECT count(*), max(retry_count), max(claim_version) FROM tasks "
                     "WHERE status = 'active'") == [(24, 0, 1)]


def test_a_claim_reads_no_task_held_on_a_live_lease(run_task, pg):
    """The claim's walk for the first expired lease runs only when one exists: it read every
    active task at every claim, and the schema's first index for it went unused (the
    planner's statistics, gathered when the backlog was filled, counted no active task)."""
    ok(run_task("plan-sync", input=jsonl(*({"id": f"t{i:04}", "t": f"T{i}"} for i in range(2000)))))

    def claim(conn, scope):
        row = claims.claim(conn, SimpleNamespace(scope=scope), "TRUE", None,
                           {"agent": "probe", "lease": "+600 seconds"})
        assert row["slug"] == "t0000"
    idle = work_of(pg, claim)
    query(pg, "UPDATE tasks SET status = 'active', assignee = 'elsewhere', "
              "lease_expires_at = datetime('now', '+600 seconds') WHERE slug >= 't0100'")
    held = work_of(pg, claim)
    assert held <= idle + 5, (idle, held)


def test_a_claim_is_one_statement_while_no_lease_has_run_out(run_task, pg, tmp_path):
    """A claim tries the first open task alone: the walk of run-out leases and the join for
    their reason cost the server a fifth of each claim, and are paid only when a lease ran out."""
    ok(run_task("plan-sync", input=jsonl(*({"id": f"t{i}", "t": f"T{i}"} for i in range(3)))))
    with traced(pg) as (conn, scope, sent):
        ctx = Ctx(conn, scope, {}, str(tmp_path), io.StringIO())
        assert build_cmds.claim(ctx, ["--agent", "a"]).startswith("## Task t0\n")
        assert on_tasks(sent) == ["WITH"]
        query(pg, "UPDATE tasks SET lease_expires_at = datetime('now', '-1 seconds') "
                  "WHERE slug = 't0'")
        sent.clear()
        out = build_cmds.claim(ctx, ["--agent", "b"])
        assert out.startswith("## Task t0\n") and "retry_count: 1\n" in out
        assert on_tasks(sent) == ["WITH", "WITH"]   # the open task's try found the run-out lease
        sent.clear()
        assert build_cmds.claim(ctx, ["--agent", "c"]).startswith("## Task t1\n")
        assert on_tasks(sent) == ["WITH"]


def test_a_claim_on_a_kept_connection_the_server_ended_runs_on_a_new_one(run_task, pg, tmp_path):
    """A claim's statement goes through a cursor the connection keeps (pg.fetch_one); the
    cursor of a connection the server ended is not used again on the new one."""
    ok(run_task("plan-sync", input=jsonl(*({"id": f"t{i}", "t": f"T{i}"} for i in range(2)))))
    with traced(pg) as (conn, scope, sent):
        conn.retry_s = 10
        ctx = Ctx(conn, scope, {}, str(tmp_path), io.StringIO())
        assert build_cmds.claim(ctx, ["--agent", "a"]).startswith("## Task t0\n")
        ended = pg_query(pg.url, f"SELECT pg_terminate_backend(pid, 10000) FROM {OTHER_CLIENTS}")
        assert ended == [(True,)]
        assert build_cmds.claim(ctx, ["--agent", "b"]).startswith("## Task t1\n")
    assert query(pg, "SELECT slug, assignee FROM tasks ORDER BY slug") == [("t0", "a"), ("t1", "b")]


# --- fencing tokens -------------------------------------------------------------------------

def _take_over(run_task, pg, tmp_path) -> tuple[dict, dict]:
    """Agent a1 on host-a claims t; its lease runs out; agent b2 on host-b takes t."""
    a = {**claims_file(tmp_path, "a1"), "RALPH_HOSTNAME": "host-a"}
    b = {**claims_file(tmp_path, "b2"), "RALPH_HOSTNAME": "host-b"}
    ok(run_task("create", "t", "T"))
    a["RALPH_AGENT_ID"] = ok(run_task("agent", "register", env=a)).strip()
    ok(run_task("claim", "--lease", "0", env=a))
    wait_for(lambda: run_task("claim", env=b).returncode == 0, timeout=30)
    return a, b


def test_a_holder_whose_task_was_taken_after_its_lease_is_refused(run_task, pg, tmp_path):
    a, b = _take_over(run_task, pg, tmp_path)
    assert (tmp_path / "claims-a1").read_text() == "1 t\n"
    assert (tmp_path / "claims-b2").read_text() == "2 t\n"
    reason = query(pg, "SELECT fail_reason, retry_count FROM tasks")[0]
    assert reason[0].startswith("lease expired at ") and f"agent '{a['RALPH_AGENT_ID']}' on " \
        "host 'host-a' stopped renewing it, last heartbeat " in reason[0]
    assert reason[1] == 1
    before = dump(pg)
    refusal = ("Error: task 't' is no longer held by this claim (claim 1; now claim 2, active, "
               "held by agent 'b2'): nothing written\n")
    fails(run_task("done", "t", "--result", '{"commit": "abc"}', env=a), 1, refusal)
    fails(run_task("fail", "t", "--reason", "late", env=a), 1, refusal)
    fails(run_task("renew", "t", "--agent", "b2", env=a), 1, refusal)
    fails(run_task("_release", "t", "--reason", "usage limit", env=a), 1, refusal)
    assert dump(pg) == before
    assert ok(run_task("done", "t", "--result", '{"commit": "def"}', env=b)) == "done t\n"
    assert query(pg, "SELECT status, result FROM tasks") == [("done", '{"commit": "def"}')]


def test_a_release_presents_its_claim_and_leaves_the_retry_count(run_task, pg, tmp_path):
    """`_release` is fenced as `fail` is; the holder of the task's claim gives it back."""
    a, b = _take_over(run_task, pg, tmp_path)
    assert ok(run_task("_release", "t", "--reason", "usage limit", env=b)) == "released t\n"
    assert query(pg, "SELECT status, assignee, retry_count, fail_reason, claim_version "
                     "FROM tasks") == [("open", None, 1, "usage limit", 2)]
    fails(run_task("_release", "t", env=b), 1, "Error: task 't' is not active (status: open)\n")


def test_claims_append_their_tokens_and_an_unwritable_claims_file_claims_nothing(run_task, pg,
                                                                                 tmp_path):
    ok(run_task("plan-sync", input=jsonl({"id": "t", "t": "T"}, {"id": "u", "t": "U"})))
    env = claims_file(tmp_path, "a1")
    ok(run_task("claim", env=env))
    ok(run_task("claim", env=env))
    assert (tmp_path / "claims-a1").read_text() == "1 t\n1 u\n"
    ok(run_task("create", "v", "V"))
    before = dump(pg)
    missing = tmp_path / "missing" / "claims"
    fails(run_task("claim", env={**env, "RALPH_CLAIMS_FILE": str(missing)}), 1,
          f"Error: cannot write RALPH_CLAIMS_FILE {missing}: No such file or directory\n")
    assert dump(pg) == before   # no task claimed by an agent told that its claim failed


def test_a_repeated_done_of_the_same_claim_is_answered_as_the_first(run_task, pg, tmp_path):
    env = claims_file(tmp_path, "a1")
    ok(run_task("create", "t", "T"))
    ok(run_task("claim", env=env))
    assert ok(run_task("done", "t", env=env)) == "done t\n"
    before = dump(pg)
    assert ok(run_task("done", "t", env=env)) == "done t\n"   # the first answer was lost
    assert dump(pg) == before
    # without the token it is the spec's answer (docs/contract/task-cli.md s.9.6)
    fails(run_task("done", "t"), 1, "Error: task 't' is not active (status: done)\n")


def test_a_fenced_done_reads_its_task_once(run_task, pg, tmp_path):
    """The task's state and its claim version, which the token is checked against, come from
    one read of the task, the same claim's `done` again included."""
    env = claims_file(tmp_path, "a1")
    ok(run_task("create", "t", "T"))
    ok(run_task("claim", env=env))
    with traced(pg) as (conn, scope, sent):
        ctx = Ctx(conn, scope, env, str(tmp_path), io.StringIO())
        assert build_cmds.done(ctx, ["t", "--result", '{"commit": "abc"}']) == "done t\n"
        assert on_tasks(sent) == ["SELECT", "UPDATE"]
        sent.clear()
        assert build_cmds.done(ctx, ["t", "--result", '{"commit": "abc"}']) == "done t\n"
        assert on_tasks(sent) == ["SELECT"]
    assert query(pg, "SELECT status, result FROM tasks") == [("done", '{"commit": "abc"}')]


# --- heartbeats and the fleet ---------------------------------------------------------------

def test_heartbeat_renews_only_the_leases_its_agent_holds(run_task, pg):
    ok(run_task("plan-sync", input=jsonl({"id": "a", "t": "A"}, {"id": "b", "t": "B"},
                                         {"id": "c", "t": "C"})))
    agent = ok(run_task("agent", "register", env={"RALPH_HOSTNAME": "box-1"})).strip()
    ok(run_task("claim", "a", "--agent", agent, "--lease", "5"))
    ok(run_task("claim", "b", "--agent", "other", "--lease", "5"))
    query(pg, "UPDATE agents SET last_heartbeat = '2000-01-01 00:00:00'")
    assert ok(run_task("_heartbeat", "--agent", agent, "--lease", "3600")) == "renewed a\n"
    leases = dict(query(pg, "SELECT slug, lease_expires_at > datetime('now', '+3000 seconds') "
                            "FROM tasks WHERE status = 'active'"))
    assert leases == {"a": True, "b": False}
    assert query(pg, "SELECT last_heartbeat > '2000-01-01 00:00:00' FROM agents") == [(True,)]
    fleet = [json.loads(line) for line in ok(run_task("_fleet")).splitlines()]
    assert [(f["agent"], f["host"], [t["id"] for t in f["tasks"]]) for f in fleet] == [
        (agent, "box-1", ["a"])]
    assert len(fleet[0]["boot_id"]) == 36
    fails(run_task("_heartbeat", "--lease", "x"), 1,
          "Error: --lease must be a non-negative integer, got: x\n")


# --- a lost server ----------------------------------------------------------------------------

def test_a_server_restarted_during_a_command_is_waited_out(run_task, pg, pg_server, git_repo,
                                                          base_env):
    ok(run_task("create", "a", "A"))
    pg_server.stop()
    claim = subprocess.Popen([sys.executable, str(TASK), "claim", "--agent", "x"], cwd=git_repo,
                             env={**base_env, "RALPH_STORE_RETRY": "60"}, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = claim.stderr.readline()          # the claim has met the stopped server
        assert first.startswith("ralph task: task store unavailable ("), first
        pg_server.start()
        out, rest = claim.communicate(timeout=90)
    finally:
        if claim.poll() is None:
            claim.kill()
    assert claim.returncode == 0, rest
    assert "## Task a" in out
    assert all(line.startswith("ralph task: task store unavailable (") for line in rest.splitlines())
    assert query(pg, "SELECT status, assignee FROM tasks") == [("active", "x")]


def test_traced_records_the_statements_sent_on_a_connection_opened_again(run_task, pg,
                                                                        git_repo):
    """A transaction whose connection the server ended runs whole again on a new one (pg.py),
    and traced (tests/task_helpers.py) records what is sent on that one too."""
    ok(run_task("create", "a", "A"))
    with traced(pg) as (conn, scope, sent):
        ended = pg_query(pg.url, f"SELECT pg_terminate_backend(pid, 10000) FROM {OTHER_CLIENTS}")
        assert ended == [(True,)]                                # traced's connection
        ctx = Ctx(conn, scope, {}, str(git_repo), io.StringIO())
        assert build_cmds.plan_status(ctx, []) == "1 open, 0 active, 0 done, 0 blocked, 0 deleted\n"
    begin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
    assert (sent[:2], sent[-1]) == ([begin, begin], "COMMIT")   # the lost attempt, then all again
    assert on_tasks(sent) == ["SELECT", "SELECT"]


# --- copying a SQLite backlog in -------------------------------------------------------------

def test_migrate_db_copies_the_whole_backlog_once(run_task, pg_url, git_repo):
    ok(run_task("plan-sync", input=jsonl({"id": "a", "t": "A", "p": 1},
                                         {"id": "b", "t": "B", "deps": ["a"]},
                                         {"id": "c", "t": "C", "s": ["one", "two"]})))
    ok(run_task("claim", "a", "--agent", "q"))
    ok(run_task("done", "a", "--result", '{"commit": "x"}'))
    ok(run_task("claim", "--agent", "q"))
    ok(run_task("fail", "b", "--reason", "it broke"))
    ok(run_task("_hold", "c", "--reason", "needs a human"))
    sqlite_view = [ok(run_task(*cmd)) for cmd in (("_export-json",), ("list", "--all"),
                                                   ("plan-status",), ("peek",), ("show", "b"))]
    shown = pg_url.split("?")[0]
    out = ok(run_task("migrate-db", pg_url))
    assert out.startswith(f"copied to {shown}") and out.endswith(
        ": tasks: 3, dependencies: 1, holds: 1, agents: 0\n")
    pg_env = {"RALPH_TASKS_DB": pg_url}
    assert [ok(run_task(*cmd, env=pg_env)) for cmd in (
        ("_export-json",), ("list", "--all"), ("plan-status",), ("peek",), ("show", "b"))] == sqlite_view
    before = dump(PgStore(pg_url))
    fails(run_task("migrate-db", pg_url), 1,
          "Error: the target already holds task 'a' of acme/widgets main: nothing copied\n")
    assert dump(PgStore(pg_url)) == before
    fails(run_task("migrate-db", "other.db"), 1,
          "Error: the target must be a postgresql:// store, got: other.db\n")


def test_ralph_tasks_naming_a_store_selects_it_for_ralph_task_too(run_task, run_ralph, pg_url,
                                                                   base_env, tmp_path):
    ok(run_task("create", "a", "A", env={"RALPH_TASKS_DB": pg_url}))
    proc = run_ralph("task", "plan-status", env={"RALPH_TASKS": pg_url})
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        0, "1 open, 0 active, 0 done, 0 blocked, 0 deleted\n", "")
    # over RALPH_TASKS_DB too, as a run in this environment works on RALPH_TASKS's store
    other = tmp_path / "other.db"
    proc = run_ralph("task", "plan-status", env={"RALPH_TASKS": pg_url,
                                                 "RALPH_TASKS_DB": str(other)})
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        0, "1 open, 0 active, 0 done, 0 blocked, 0 deleted\n", "")
    assert not other.exists()
    fails(run_task("plan-status", env={"RALPH_TASKS": "mysql://u:hunter2@db/x"}), 1,
          "Error: unknown task store 'mysql://u:***@db/x': use a file path or "
          "postgresql://user@host/database\n")

"""Black-box tests of the task store under concurrency and foreign writers
(docs/contract/task-cli.md s.3-5, s.10): atomic claims, lock retry, a ralph.sh-made database, no
partial writes."""
from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import TASK, wait_for
from ralphpy.tasks import queries as q
from task_helpers import dump, fails, jsonl, ok, query, work_of

RALPH_SH_SCHEMA = """
CREATE TABLE tasks (
    id              TEXT PRIMARY KEY,
    slug            TEXT NOT NULL,
    scope_repo      TEXT NOT NULL,
    scope_branch    TEXT NOT NULL,
    title           TEXT NOT NULL,
    description     TEXT,
    category        TEXT,
    priority        INTEGER DEFAULT 2,
    status          TEXT DEFAULT 'open',
    spec_ref        TEXT,
    ref             TEXT,
    result          TEXT,
    assignee        TEXT,
    lease_expires_at TEXT,
    retry_count     INTEGER DEFAULT 0,
    fail_reason     TEXT,
    steps           TEXT,
    created_at      TEXT DEFAULT (datetime('now')),
    updated_at      TEXT,
    deleted_at      TEXT,
    UNIQUE(scope_repo, scope_branch, slug)
);
CREATE INDEX idx_tasks_scope_status ON tasks(scope_repo, scope_branch, status, priority, created_at);
CREATE TABLE task_deps (
    task_id    TEXT REFERENCES tasks(id) ON DELETE CASCADE,
    blocked_by TEXT REFERENCES tasks(id) ON DELETE CASCADE,
    PRIMARY KEY (task_id, blocked_by)
);
CREATE TABLE agents (
    id           TEXT PRIMARY KEY,
    pid          INTEGER,
    hostname     TEXT,
    scope_repo   TEXT NOT NULL DEFAULT '',
    scope_branch TEXT NOT NULL DEFAULT '',
    started_at   TEXT DEFAULT (datetime('now')),
    status       TEXT DEFAULT 'active'
);
"""

# A second process that takes the write lock, says so, and keeps it for argv[2] seconds.
HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("UPDATE tasks SET title = title")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
"""


pytestmark = pytest.mark.usefixtures("any_store")
SQLITE_ONLY = pytest.mark.parametrize("any_store", ["sqlite"], indirect=True)


@pytest.fixture
def db(any_store):
    return any_store


def spawn_task(args, *, cwd, env):
    return subprocess.Popen([sys.executable, str(TASK), *args], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)


def test_eight_processes_claiming_200_tasks_get_each_exactly_once(run_task, git_repo, base_env, db):
    """Eight real processes race on the real file; each calls cli.main in a loop (one process
    per claim would spend the test's time starting interpreters, not contending for locks).
    They start claiming together, once each has imported and opened the store: a claim takes
    well under a millisecond, so the first one ready would otherwise take all 200."""
    ok(run_task("plan-sync", input=jsonl(*({"id": f"t{i:03}", "t": f"T{i}"} for i in range(200)))))
    worker = (
        "import io, os, sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from ralphpy.tasks import cli\n"
        "env = {**os.environ, 'RALPH_SCOPE_REPO': 'acme/widgets', 'RALPH_SCOPE_BRANCH': 'main',\n"
        "       'RALPH_TASKS_DB': sys.argv[3]}\n"
        "cli.main(['plan-status'], stdout=io.StringIO(), stderr=io.StringIO(), environ=env)\n"
        "print('ready', flush=True)\n"
        "sys.stdin.readline()\n"
        "got = []\n"
        "while True:\n"
        "    out, err = io.StringIO(), io.StringIO()\n"
        "    code = cli.main(['claim', '--agent', sys.argv[2]], stdout=out, stderr=err, environ=env)\n"
        "    if code == 2: break\n"
        "    assert code == 0, err.getvalue()\n"
        "    got.append(out.getvalue().splitlines()[0].split()[-1])\n"
        "print('\\n'.join(got))\n")
    lib = str(TASK.parent.parent / "lib")
    procs = [subprocess.Popen([sys.executable, "-c", worker, lib, f"w{n}", str(db)], cwd=git_repo,
                              env=base_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for n in range(8)]
    claimed = []
    try:
        for proc in procs:
            assert proc.stdout.readline() == "ready\n", proc.stderr.read()
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        for proc in procs:
            out, err = proc.communicate(timeout=110)
            assert proc.returncode == 0, err
            claimed += out.split()
    finally:
        for proc in procs:
            proc.kill()
    assert sorted(claimed) == [f"t{i:03}" for i in range(200)]
    assert query(db, "SELECT count(*) FROM tasks WHERE status = 'active'") == [(200,)]
    assert len({r[0] for r in query(db, "SELECT assignee FROM tasks")}) > 1


def test_racing_for_one_task_exactly_one_claimer_wins(run_task, git_repo, base_env, db):
    ok(run_task("create", "only", "Only"))
    procs = [spawn_task(["claim", "only", "--agent", f"a{n}"], cwd=git_repo, env=base_env) for n in range(6)]
    results = [(p.wait(timeout=60), p.stdout.read(), p.stderr.read()) for p in procs]
    assert sorted(code for code, _, _ in results) == [0, 2, 2, 2, 2, 2]
    assert all(err == "Task not eligible\n" for code, _, err in results if code == 2)
    assert query(db, "SELECT count(*) FROM tasks WHERE status = 'active'") == [(1,)]


def test_concurrent_registrations_and_plan_syncs_all_succeed(run_task, db):
    with ThreadPoolExecutor(6) as pool:
        ids = list(pool.map(lambda _: ok(run_task("agent", "register")).strip(), range(6)))
        syncs = list(pool.map(lambda n: run_task("plan-sync", input=jsonl(
            {"id": "shared", "t": f"run{n}"}, {"id": f"own{n}", "t": "x", "deps": ["shared"]})), range(6)))
    assert len(set(ids)) == 6
    assert all(p.returncode == 0 for p in syncs), [p.stderr for p in syncs]
    assert query(db, "SELECT count(*) FROM tasks WHERE slug = 'shared'") == [(1,)]
    assert query(db, "SELECT count(*) FROM task_deps d LEFT JOIN tasks t ON t.id = d.blocked_by "
                     "WHERE t.id IS NULL") == [(0,)]


@SQLITE_ONLY  # s.3/s.4: the SQLite file and its locks
def test_a_writer_holding_the_lock_briefly_is_waited_out(run_task, git_repo, base_env, db):
    ok(run_task("create", "a", "A"))
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), "1.5"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        started = time.monotonic()
        out = ok(run_task("claim", "a"))
        assert "## Task a" in out and time.monotonic() - started > 1.0
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.timeout(90)
@SQLITE_ONLY  # s.3/s.4: the SQLite file and its locks
def test_a_lock_held_past_every_retry_is_database_is_locked(run_task, db):
    ok(run_task("create", "a", "A"))
    before = dump(db)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), "40"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        fails(run_task("claim", "a"), 1, "Error: database is locked\n")
    finally:
        holder.kill()
        holder.wait()
    assert dump(db) == before


@SQLITE_ONLY  # s.3/s.4: the SQLite file and its locks
def test_a_database_made_by_ralph_sh_is_used_as_is(run_task, git_repo, db):
    db.parent.mkdir()
    conn = sqlite3.connect(db)
    conn.executescript(RALPH_SH_SCHEMA)
    conn.execute("INSERT INTO tasks (id, slug, scope_repo, scope_branch, title) VALUES "
                 "('11111111-1111-4111-8111-111111111111', 'old', 'acme/widgets', 'main', 'Old task')")
    conn.commit()
    schema = conn.execute("SELECT name, sql FROM sqlite_master WHERE name IN "
                          "('tasks', 'task_deps', 'agents', 'idx_tasks_scope_status') ORDER BY name").fetchall()
    conn.close()
    query(db, "UPDATE tasks SET steps = '[]'")  # another writer's empty array: no `steps:` line
    assert ok(run_task("peek")) == "## Task old\nid: old\ntitle: Old task\npriority: 2\nstatus: open\n"
    assert "retry_count: 0\n" in ok(run_task("claim"))
    assert query(db, "SELECT name, sql FROM sqlite_master WHERE name IN "
                     "('tasks', 'task_deps', 'agents', 'idx_tasks_scope_status') ORDER BY name") == schema
    # The extensions are added beside it: a table and an index, which ralph.sh never reads
    assert {"task_holds", "idx_tasks_id_status", "idx_tasks_scope_expiry"} <= {
        r[0] for r in query(db, "SELECT name FROM sqlite_master")}
    assert ok(run_task("plan-status")) == "0 open, 1 active, 0 done, 0 blocked, 0 deleted\n"


@SQLITE_ONLY  # s.3/s.4: the SQLite file and its locks
def test_schema_matches_the_spec_and_is_in_wal_mode(run_task, db):
    ok(run_task("plan-status"))
    names = {r[0] for r in query(db, "SELECT name FROM sqlite_master")}
    assert {"tasks", "task_deps", "agents", "idx_tasks_scope_status", "task_holds", "idx_tasks_id_status",
            "idx_tasks_scope_expiry"} <= names
    assert query(db, "PRAGMA journal_mode") == [("wal",)]
    uniques = [r for r in query(db, "PRAGMA index_list(tasks)") if r[2]]
    cols = [[c[2] for c in query(db, f"PRAGMA index_info('{r[1]}')")] for r in uniques]
    assert sorted(cols) == [["id"], ["scope_repo", "scope_branch", "slug"]]


@pytest.mark.parametrize("args,stdin,code,error", [
    (["plan-sync"], '{"id":"n","t":"N"}\n{"id":"x","t":"X"\n', 1, "Error: line 2: invalid JSON: {\"id\":\"x\",\"t\":\"X\"\n"),
    (["plan-sync"], '{"id":"n","t":"N"}\n{"t":"X"}\n', 1, 'Error: line 2: field "id" is missing or empty\n'),
    (["plan-sync"], '{"id":"n"}\n', 1, 'Error: line 1: field "t" is missing or empty\n'),
    (["plan-sync"], '{"id":"n","t":"N","p":-3}\n', 1, 'Error: line 1: field "p" must be a non-negative integer, got: -3\n'),
    (["create", "n", "N", "--frobnicate"], None, 1, "Error: unknown flag '--frobnicate'\n"),
    (["claim", "a", "--bogus"], None, 1, "Error: unknown flag '--bogus'\n"),
    (["done", "ghost", "--result", '{"commit":"c"}'], None, 2, "Error: task 'ghost' not found\n"),
    (["fail", "ghost"], None, 2, "Error: task 'ghost' not found\n"),
    (["delete", "ghost"], None, 2, "Error: task 'ghost' not found\n"),
    (["agent", "deregister", "ffff"], None, 2, "Error: agent 'ffff' not found\n"),
    (["update", "d", "--title", "New"], None, 1, "Error: task 'd' is done and cannot be updated\n"),
], ids=["malformed-jsonl", "missing-id", "missing-t", "negative-priority", "unknown-flag-create",
        "unknown-flag-claim", "unknown-task-done", "unknown-task-fail", "unknown-task-delete",
        "unknown-agent", "update-done-task"])
def test_bad_input_never_writes(run_task, db, args, stdin, code, error):
    ok(run_task("plan-sync", input=jsonl({"id": "a", "t": "A"}, {"id": "d", "t": "D"})))
    ok(run_task("claim", "d"))
    ok(run_task("done", "d", "--result", '{"commit":"x"}'))
    ok(run_task("agent", "register"))
    before = dump(db)
    fails(run_task(*args, input=stdin), code, error)
    assert dump(db) == before


def test_a_sessions_done_or_fail_of_a_task_another_agent_holds_is_refused(run_task, db,
                                                                          tmp_path):
    """A session presents its agent's claims file (every agent of a --parallel run does): it
    may not finish or fail the task another session's agent holds, on either store. A call
    without one (a person at a terminal) is the spec's: no assignee check."""
    def session(agent: str) -> dict[str, str]:
        return {"RALPH_AGENT_ID": agent, "RALPH_CLAIMS_FILE": str(tmp_path / f"claims-{agent}")}

    ok(run_task("create", "a", "A"))
    ok(run_task("create", "b", "B"))
    ok(run_task("claim", "a", env=session("one")))
    before = dump(db)
    for args in (["done", "a", "--result", '{"commit":"abc"}'], ["fail", "a", "--reason", "x"]):
        fails(run_task(*args, env=session("two")), 1, "Error: task 'a' is held by agent 'one', "
              "not by this session's agent 'two': nothing written\n")
    assert dump(db) == before
    fails(run_task("renew", "a", env=session("two")), 1,          # the spec's own check
          "Error: agent 'two' is not the assignee of task 'a'\n")
    assert ok(run_task("done", "a", env=session("one"))) == "done a\n"
    ok(run_task("claim", "b", env=session("one")))
    assert ok(run_task("fail", "b", env={"RALPH_AGENT_ID": "two"})) == "failed b\n"


def test_expired_lease_written_by_waiting_is_taken_over(run_task, db):
    ok(run_task("create", "a", "A"))
    ok(run_task("claim", "--lease", "0", "--agent", "one"))
    wait_for(lambda: query(db, "SELECT lease_expires_at < datetime('now') FROM tasks")[0][0])
    assert ok(run_task("plan-status")) == "0 open, 1 active, 0 done, 0 blocked, 0 deleted\n"
    out = ok(run_task("claim", "--agent", "two"))
    assert "assignee: two\n" in out and "retry_count: 1\n" in out


def test_the_first_claimable_task_is_found_without_reading_tasks_held_on_live_leases(run_task, db):
    """A walk for the first expired lease runs only when one exists: it read every active task
    of the scope at every peek and claim (under SQLite's write lock too)."""
    ok(run_task("plan-sync", input=jsonl(*({"id": f"t{i:04}", "t": f"T{i}"} for i in range(2000)))))

    def peek(conn, scope):
        assert [row["slug"] for row in q.fetch_tasks(conn, scope, q.first_claimable(), limit=1,
                                                     by_rowid=True)] == [expected]
    expected = "t0000"
    idle = work_of(db, peek)
    query(db, "UPDATE tasks SET status = 'active', assignee = 'elsewhere', "
              "lease_expires_at = datetime('now', '+600 seconds') WHERE slug >= 't0100'")
    held = work_of(db, peek)
    assert held <= idle * 1.25, (idle, held)
    # a lease that ran out is still found first when the spec's order puts it first (s.8)
    query(db, "UPDATE tasks SET status = 'active', lease_expires_at = datetime('now', "
              "'-1 seconds') WHERE slug = 't0000'")
    query(db, "UPDATE tasks SET priority = 0 WHERE slug = 't1250'")
    query(db, "UPDATE tasks SET lease_expires_at = datetime('now', '-1 seconds') WHERE slug = 't1250'")
    expected = "t1250"
    work_of(db, peek)


def test_a_file_that_is_not_a_database_is_one_error_line(run_task, tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    fails(run_task("plan-status", env={"RALPH_TASKS_DB": str(bad)}), 1,
          "Error: database error: file is not a database\n")
    assert bad.read_bytes() == b"this is not sqlite" * 100

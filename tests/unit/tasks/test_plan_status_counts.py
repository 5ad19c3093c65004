"""plan-status's counts (docs/contract/task-cli.md s.9.2) on backlogs of random statuses,
dependencies and holds, against the same counts made from `_export-json` in Python: the blocked
tasks are found by walking the dependencies and holds, which must give what testing every task
gave."""
from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pytest

from ralphpy.tasks import cli


@pytest.fixture(autouse=True)
def in_repo(git_repo: Path, monkeypatch) -> None:
    """The task CLI answers for the current directory: each test calls it in its checkout."""
    monkeypatch.chdir(git_repo)


def call(environ, *argv: str, stdin: str = "", may_refuse: bool = False) -> str:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdin=io.StringIO(stdin), stdout=out, stderr=err,
                    environ=environ)
    assert code == 0 or may_refuse, (argv, err.getvalue())
    return out.getvalue() if code == 0 else ""


def expected(environ) -> str:
    tasks = [json.loads(line) for line in call(environ, "_export-json").splitlines()]
    status = {t["id"]: t["status"] for t in tasks}
    counts = dict.fromkeys(("open", "active", "done", "blocked", "deleted"), 0)
    for t in tasks:
        blocked = any(status.get(dep) not in ("done", "deleted") for dep in t["deps"]) or (
            t["held"] is not None and t["status"] in ("open", "active"))
        if blocked:
            counts["blocked"] += 1
        if not (blocked and t["status"] in ("open", "active")):
            counts[t["status"]] += 1
    return ", ".join(f"{n} {name}" for name, n in counts.items()) + "\n"


@pytest.mark.parametrize("seed", [1, 2, 3, 4], ids=lambda s: f"seed-{s}")
def test_plan_status_counts_what_a_walk_over_every_task_counts(git_repo: Path, base_env, seed):
    rnd = random.Random(seed)
    env = {**base_env, "RALPH_AGENT_ID": "w1"}
    n = 40
    lines = "".join(json.dumps({"id": f"t{i}", "t": f"T{i}", "deps": [
        f"t{j}" for j in rnd.sample(range(i), min(i, rnd.choice((0, 0, 1, 2))))]}) + "\n"
        for i in range(n))
    call(env, "plan-sync", stdin=lines)
    for i in rnd.sample(range(n), 25):
        slug, action = f"t{i}", rnd.choice(("done", "active", "delete", "hold", "open"))
        if action in ("done", "active"):
            if not call(env, "claim", slug, may_refuse=True):
                continue                             # blocked, or held
            if action == "done":
                call(env, "done", slug)
        elif action == "delete":
            call(env, "delete", slug)
        elif action == "hold":
            call(env, "_hold", slug, "--reason", "stuck")
    assert call(env, "plan-status") == expected(env)


# Writes another CLI makes on the same file (ralph.sh's bash lib/task writes plain SQL): the
# blocked tasks plan-status counts are kept by the store's triggers, so they must follow
# whichever CLI writes (decisions/0037).
OTHER_WRITER = (
    "UPDATE tasks SET status = 'open', updated_at = datetime('now') WHERE slug = :a",  # reopen
    "UPDATE tasks SET status = 'done' WHERE slug = :a",
    "UPDATE tasks SET status = 'deleted', deleted_at = datetime('now') WHERE slug = :a",
    "UPDATE tasks SET scope_branch = 'other' WHERE slug = :a",
    "INSERT OR IGNORE INTO task_deps (task_id, blocked_by) SELECT a.id, b.id FROM tasks a, "
    "tasks b WHERE a.slug = :a AND b.slug = :b AND a.id != b.id",
    "DELETE FROM task_deps WHERE task_id = (SELECT id FROM tasks WHERE slug = :a)",
    "INSERT INTO tasks (id, slug, scope_repo, scope_branch, title, status) SELECT "
    "lower(hex(randomblob(16))), :a || 'x', scope_repo, scope_branch, 'new', 'open' FROM tasks "
    "WHERE slug = :a ON CONFLICT(scope_repo, scope_branch, slug) DO UPDATE SET title = 'again'",
    "DELETE FROM tasks WHERE slug = :a",
)
BLOCKED_NOW = ("SELECT t.id, t.scope_repo, t.scope_branch, t.status FROM tasks t WHERE EXISTS "
               "(SELECT 1 FROM task_deps d JOIN tasks b ON b.id = d.blocked_by WHERE "
               "d.task_id = t.id AND b.status NOT IN ('done', 'deleted')) ORDER BY t.id")


@pytest.mark.parametrize("seed", [5, 6, 7], ids=lambda s: f"seed-{s}")
def test_the_blocked_count_follows_another_writer(git_repo: Path, base_env, seed):
    import sqlite3
    rnd = random.Random(seed)
    env = {**base_env, "RALPH_AGENT_ID": "w1"}
    n = 30
    call(env, "plan-sync", stdin="".join(json.dumps({"id": f"t{i}", "t": f"T{i}", "deps": [
        f"t{j}" for j in rnd.sample(range(i), min(i, rnd.choice((0, 1, 2))))]}) + "\n"
        for i in range(n)))
    conn = sqlite3.connect(git_repo / ".ralph" / "tasks.db", isolation_level=None)
    conn.execute("PRAGMA foreign_keys=ON")          # as ralph.sh's lib/task opens it
    for _ in range(60):
        conn.execute(rnd.choice(OTHER_WRITER),
                     {"a": f"t{rnd.randrange(n)}", "b": f"t{rnd.randrange(n)}"})
    kept = conn.execute("SELECT task_id, scope_repo, scope_branch, status FROM "
                        "task_blocked ORDER BY task_id").fetchall()
    assert kept == conn.execute(BLOCKED_NOW).fetchall()
    assert any(status == "open" for *_, status in kept)     # the walk had something to do
    conn.close()
    assert call(env, "plan-status") == expected(env)


COUNTS_KEPT = ("SELECT scope_repo, scope_branch, status, n FROM task_counts WHERE n != 0 "
               "ORDER BY 1, 2, 3")
COUNTS_NOW = ("SELECT scope_repo, scope_branch, coalesce(status, ''), count(*) FROM tasks "
              "GROUP BY 1, 2, 3 ORDER BY 1, 2, 3")


@pytest.mark.parametrize("seed", [8, 9], ids=lambda s: f"seed-{s}")
def test_the_status_counts_follow_another_writer(git_repo: Path, base_env, seed):
    """plan-status reads each status's count from task_counts, kept by the store's triggers
    whichever CLI writes: after any mix of writes it holds what counting every task gives."""
    import sqlite3
    rnd = random.Random(seed)
    env = {**base_env, "RALPH_AGENT_ID": "w1"}
    n = 30
    call(env, "plan-sync", stdin="".join(json.dumps({"id": f"t{i}", "t": f"T{i}"}) + "\n"
                                          for i in range(n)))
    conn = sqlite3.connect(git_repo / ".ralph" / "tasks.db", isolation_level=None)
    for _ in range(60):
        conn.execute(rnd.choice(OTHER_WRITER),
                     {"a": f"t{rnd.randrange(n)}", "b": f"t{rnd.randrange(n)}"})
    assert conn.execute(COUNTS_KEPT).fetchall() == conn.execute(COUNTS_NOW).fetchall()
    conn.close()
    assert call(env, "plan-status") == expected(env)


def test_a_database_made_before_the_counts_table_gets_it_filled(git_repo: Path, base_env):
    import sqlite3
    env = {**base_env, "RALPH_AGENT_ID": "w1"}
    call(env, "plan-sync", stdin='{"id":"a","t":"A"}\n{"id":"b","t":"B","deps":["a"]}\n')
    call(env, "claim", "a")
    db = git_repo / ".ralph" / "tasks.db"
    conn = sqlite3.connect(db, isolation_level=None)
    for (name, kind) in conn.execute("SELECT name, type FROM sqlite_master WHERE name "
                                     "LIKE 'task_counts%' AND type != 'index'").fetchall():
        conn.execute(f"DROP {kind} {name}")
    conn.close()
    assert call(env, "plan-status") == "0 open, 1 active, 0 done, 1 blocked, 0 deleted\n"
    conn = sqlite3.connect(db, isolation_level=None)
    assert conn.execute(COUNTS_KEPT).fetchall() == conn.execute(COUNTS_NOW).fetchall()
    conn.close()


def test_a_database_made_before_the_blocked_table_gets_it_filled(git_repo: Path, base_env):
    """A ralph.sh database (or an earlier ralph.py's) has blocked tasks but no task_blocked:
    the first use fills it from the dependencies."""
    import sqlite3
    env = {**base_env, "RALPH_AGENT_ID": "w1"}
    call(env, "plan-sync", stdin='{"id":"a","t":"A"}\n{"id":"b","t":"B","deps":["a"]}\n')
    db = git_repo / ".ralph" / "tasks.db"
    conn = sqlite3.connect(db, isolation_level=None)
    for (name, kind) in conn.execute("SELECT name, type FROM sqlite_master WHERE name "
                                     "LIKE 'task_blocked%' AND type != 'index'").fetchall():
        conn.execute(f"DROP {kind} {name}")
    conn.close()
    assert call(env, "plan-status") == "1 open, 0 active, 0 done, 1 blocked, 0 deleted\n"


def test_a_read_only_database_without_the_blocked_table_is_still_counted(git_repo: Path,
                                                                         base_env):
    """Opened read-only, a database made before task_blocked cannot get it: the counts come
    from the walk over the dependencies, as before."""
    import sqlite3
    from ralphpy.tasks import build_cmds
    from ralphpy.tasks.context import Ctx
    from ralphpy.tasks.git_scope import Git, resolve_scope
    env = {**base_env, "RALPH_AGENT_ID": "w1"}
    call(env, "plan-sync", stdin='{"id":"a","t":"A"}\n{"id":"b","t":"B","deps":["a"]}\n')
    db = git_repo / ".ralph" / "tasks.db"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("DROP TABLE task_blocked")
    conn.close()
    ro = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
    ctx = Ctx(ro, resolve_scope(Git(str(git_repo), env)), env, str(git_repo), io.StringIO())
    assert build_cmds.plan_status(ctx, []) == \
        "1 open, 0 active, 0 done, 1 blocked, 0 deleted\n"
    ro.close()

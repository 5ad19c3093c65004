"""Black-box tests of scripts/task (docs/contract/task-cli.md): help, errors, scope, database
location, and every command's output, byte for byte. Real processes, real git repos, real SQLite."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git, log_git_calls
from task_helpers import dump, fails, jsonl, ok, query

ROOT = Path(__file__).resolve().parents[2]

SPEC_HELP = """\
Usage: ralph task <command> [options]

Plan Phase Commands:
  plan-sync             Read JSONL from stdin, upsert tasks into the database
  plan-status           Print summary: N open, N active, N done, N blocked, N deleted

Build Phase Commands:
  peek [-n 5]                Top N claimable + all active tasks (markdown-KV)
  claim [<id>] [--lease N]   Claim task (targeted by id, or highest-priority)
  renew <id> [--lease N]     Extend lease on an active task
  done <id> --result '<json>'  Mark task as done, store result
  fail <id> --reason "<text>"  Release task back to open

Shared Commands:
  list [--all] [--status S] [--markdown] List tasks (default: non-deleted)
  show <id> [--with-deps]      Full detail for one task
  create <id> <title> [opts]   Create a task
  update <id> [opts]           Update fields on a non-done task
  delete <id>                  Soft delete a task
  delete --status <csv> [--spec S] [--category C]  Batch delete by status
  delete --all --confirm [--spec S] [--category C]  Delete all non-deleted tasks
  deps <id>                    Show dependency tree

Dependency Commands:
  block <id> --by <blocker-id>    Add a dependency
  unblock <id> --by <blocker-id>  Remove a dependency

Agent Commands:
  agent register              Register a new agent
  agent list                  Show active agents
  agent deregister <id>       Mark agent as stopped

Database:
  Path is derived from git root: <git-root>/.ralph/tasks.db
"""


pytestmark = pytest.mark.usefixtures("any_store")
SQLITE_ONLY = pytest.mark.parametrize("any_store", ["sqlite"], indirect=True)


@pytest.fixture
def db(any_store):
    return any_store


# --- help, missing and unknown commands (s.2) -------------------------------------------

@pytest.mark.parametrize("flag", ["--help", "-h"], ids=["long", "short"])
def test_help_prints_the_spec_text_with_the_batch_delete_lines(run_task, flag, git_repo):
    assert ok(run_task(flag)) == SPEC_HELP
    assert not (git_repo / ".ralph").exists()


def test_missing_command_prints_error_empty_line_and_help_on_stderr(run_task):
    fails(run_task(), 1, "Error: missing command\n\n" + SPEC_HELP)


@pytest.mark.parametrize("cmd", ["help", "step-done", "frobnicate"], ids=["help", "step-done", "other"])
def test_unknown_command_is_one_error_line(run_task, cmd, git_repo):
    fails(run_task(cmd), 1, f"Error: unknown command '{cmd}'\n")
    assert not (git_repo / ".ralph").exists()



@pytest.mark.parametrize("args,stdin,env,shown", [
    (["create", "t\udcff", "T"], None, {}, "t\\xff"),
    (["create", "t2", "ti\udcfftle"], None, {}, "ti\\xfftle"),
    (["show", "\udcff"], None, {}, "\\xff"),
    (["plan-sync"], '{"id":"a\udcff","t":"x"}\n', {}, "a\\xff"),
    (["claim"], None, {"RALPH_AGENT_ID": "a\udcff"}, "a\\xff"),
], ids=["id", "title", "show", "plan-sync-stdin", "agent-id"])
def test_bytes_that_are_not_utf8_are_one_error_line_and_write_nothing(run_task, db, args, stdin,
                                                                       env, shown):
    """Not a traceback: the store keeps UTF-8 text. (run_task passes the surrogates as the raw
    byte 0xff, which the task CLI decodes back to them.)"""
    ok(run_task("create", "t1", "T"))
    before = dump(db)
    proc = run_task(*args, env=env, input=stdin)
    fails(proc, 1, f"Error: text is not valid UTF-8: {shown}\n")
    assert dump(db) == before

def test_plan_export_points_to_list_all(run_task):
    fails(run_task("plan-export"), 1,
          "Error: unknown command 'plan-export'. Use 'ralph task list --all' instead.\n")


# --- database location and scope (s.3, s.7) ----------------------------------------------

@SQLITE_ONLY  # s.3/s.4: the SQLite file and its locks
def test_first_use_creates_ralph_dir_with_gitignore_star(run_task, git_repo, db):
    ok(run_task("plan-status"))
    assert (git_repo / ".ralph" / ".gitignore").read_text() == "*\n"
    assert db.exists()
    assert query(db, "PRAGMA journal_mode")[0][0] == "wal"


def test_existing_gitignore_is_never_rewritten(run_task, git_repo):
    (git_repo / ".ralph").mkdir()
    (git_repo / ".ralph" / ".gitignore").write_text("custom\n")
    ok(run_task("plan-status"))
    assert (git_repo / ".ralph" / ".gitignore").read_text() == "custom\n"


@SQLITE_ONLY  # s.3/s.4: the SQLite file and its locks
def test_database_lives_at_the_git_root_when_run_from_a_subdirectory(run_task, git_repo, db):
    ok(run_task("create", "t1", "T", cwd=git_repo / "specs"))
    assert db.exists() and not (git_repo / "specs" / ".ralph").exists()


def test_outside_a_repository_git_error_comes_before_argument_errors(run_task, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    fails(run_task("create", cwd=outside), 1, "Error: not inside a git repository. Run: git init\n")


def test_ralph_tasks_db_needs_no_git_and_writes_no_gitignore(run_task, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    env = {"RALPH_TASKS_DB": "deep/dir/t.db", "RALPH_SCOPE_REPO": "o/r", "RALPH_SCOPE_BRANCH": "b",
           "PATH": "/nonexistent"}
    proc = run_task("create", "x", "X", cwd=outside, env=env)
    assert (proc.returncode, proc.stdout) == (0, "x\n"), proc.stderr
    assert (outside / "deep" / "dir" / "t.db").exists()
    assert not (outside / "deep" / "dir" / ".gitignore").exists()
    assert ok(run_task("list", cwd=outside, env=env)).splitlines()[1].startswith("x ")


@SQLITE_ONLY  # s.3/s.4: the SQLite file and its locks
def test_ralph_db_path_is_ignored(run_task, git_repo, db, tmp_path):
    ok(run_task("plan-status", env={"RALPH_DB_PATH": str(tmp_path / "old.db")}))
    assert db.exists() and not (tmp_path / "old.db").exists()


@pytest.mark.parametrize("url,repo", [
    ("https://github.com/owner/repo.git", "owner/repo"),
    ("https://gitlab.com/myorg/myproject.git", "myorg/myproject"),
    ("ssh://git@github.com/owner/repo", "owner/repo"),
    ("git@github.com:owner/repo.git", "owner/repo"),
    ("ssh://user@host:2222/group/sub/repo.git", "group/sub/repo"),
    ("/srv/git/plain", "/srv/git/plain"),
], ids=["https", "gitlab", "ssh-url", "scp", "port-subgroup", "path"])
def test_get_scope_derives_repo_from_origin_url(run_task, git_repo, base_env, url, repo):
    git(git_repo, "remote", "set-url", "origin", url, env=base_env)
    assert ok(run_task("_get-scope")) == f"repo:{repo}\nbranch:main\n"
    assert not (git_repo / ".ralph").exists()


def test_get_scope_keeps_branch_slashes_and_env_overrides(run_task, git_repo, base_env):
    git(git_repo, "checkout", "-q", "-b", "feature/x", env=base_env)
    assert ok(run_task("_get-scope")) == "repo:acme/widgets\nbranch:feature/x\n"
    assert ok(run_task("_get-scope", env={"RALPH_SCOPE_REPO": "a/b"})) == "repo:a/b\nbranch:feature/x\n"
    assert ok(run_task("_get-scope", env={"RALPH_SCOPE_BRANCH": "rel"})) == "repo:acme/widgets\nbranch:rel\n"


def test_scope_errors_no_origin_and_detached_head(run_task, git_repo, base_env):
    git(git_repo, "remote", "remove", "origin", env=base_env)
    msg = 'Error: no git remote "origin" found. Run: git remote add origin <url>\n'
    fails(run_task("_get-scope"), 1, msg)
    fails(run_task("plan-status"), 1, msg)
    git(git_repo, "checkout", "-q", "--detach", env=base_env)
    fails(run_task("_get-scope", env={"RALPH_SCOPE_REPO": "a/b"}), 1,
          "Error: detached HEAD state. Run: git checkout <branch>\n")


@SQLITE_ONLY  # s.3/s.4: the SQLite file and its locks
def test_a_linked_worktree_is_a_git_root_of_its_own(run_task, git_repo, base_env, tmp_path):
    git(git_repo, "worktree", "add", "-q", "-b", "wt", str(tmp_path / "wt"), env=base_env)
    assert ok(run_task("_get-scope", cwd=tmp_path / "wt" / "specs")) == "repo:acme/widgets\nbranch:wt\n"
    ok(run_task("plan-status", cwd=tmp_path / "wt" / "specs"))
    assert (tmp_path / "wt" / ".ralph" / "tasks.db").exists() and not (git_repo / ".ralph").exists()


def test_scope_repo_set_outside_a_repository_still_needs_git_for_the_branch(run_task, tmp_path):
    fails(run_task("_get-scope", cwd=tmp_path, env={"RALPH_SCOPE_REPO": "a/b"}), 1,
          "Error: not inside a git repository. Run: git init\n")


@SQLITE_ONLY  # s.3/s.4: the SQLite file and its locks
def test_git_is_called_only_with_the_spec_argument_vectors(run_task, git_repo, bin_dir, tmp_path):
    log = tmp_path / "git.log"
    log_git_calls(bin_dir, log)
    ok(run_task("plan-status"))
    assert not log.exists()  # a plain repository: its files give git's answers, git is not run
    config = git_repo / ".git" / "config"
    config.write_text("[include]\n\tpath = nothing\n" + config.read_text())  # git must answer
    ok(run_task("plan-status"))
    calls = set(log.read_text().splitlines())
    assert calls == {"rev-parse --show-toplevel", "rev-parse --is-inside-work-tree",
                     "remote get-url origin", "branch --show-current"}
    log.unlink()
    env = {"RALPH_SCOPE_REPO": "a/b", "RALPH_SCOPE_BRANCH": "c", "RALPH_TASKS_DB": str(tmp_path / "x.db")}
    ok(run_task("plan-status", env=env))
    ok(run_task("_get-scope", env=env))
    assert not log.exists()


def test_scopes_share_nothing(run_task, db):
    other = {"RALPH_SCOPE_BRANCH": "other"}
    ok(run_task("create", "t1", "Main title"))
    ok(run_task("create", "t1", "Other title", env=other))
    assert "Main title" in ok(run_task("show", "t1"))
    assert "Other title" in ok(run_task("show", "t1", env=other))
    ok(run_task("create", "only-main", "M"))
    fails(run_task("show", "only-main", env=other), 2, "Error: task 'only-main' not found\n")
    fails(run_task("claim", "only-main", env=other), 2, "Task not eligible\n")
    assert len({r[0] for r in query(db, "SELECT id FROM tasks WHERE slug = 't1'")}) == 2
    agent = ok(run_task("agent", "register")).strip()
    fails(run_task("agent", "deregister", agent, env=other), 2, f"Error: agent '{agent}' not found\n")
    assert ok(run_task("agent", "list", env=other)) == ""


# --- plan-sync (s.9.1) ------------------------------------------------------------------

def test_plan_sync_inserts_then_is_idempotent(run_task, db):
    lines = jsonl({"id": "a", "t": "A", "p": 1, "spec": "s.md", "steps": ["x", "ü"], "deps": ["b"]},
                  {"id": "b", "t": "B", "d": "", "cat": "feat", "ref": "r", "deps": [], "steps": []})
    assert ok(run_task("plan-sync", input=lines)) == "inserted: 2, updated: 0, deleted: 0, skipped (done): 0\n"
    assert ok(run_task("plan-sync", input=lines)) == "inserted: 0, updated: 0, deleted: 0, skipped (done): 0\n"
    rows = query(db, "SELECT slug, description, steps, priority, status, retry_count FROM tasks ORDER BY slug")
    assert rows == [("a", None, '["x","ü"]', 1, "open", 0), ("b", None, None, 2, "open", 0)]
    # forward reference: a (line 1) depends on b (line 2)
    assert "deps: b\n" in ok(run_task("list", "--markdown"))
    uuid = query(db, "SELECT id FROM tasks WHERE slug='a'")[0][0]
    assert len(uuid) == 36 and uuid[14] == "4"


def test_plan_sync_empty_and_whitespace_input(run_task):
    assert ok(run_task("plan-sync", input="")) == "inserted: 0, updated: 0, deleted: 0, skipped (done): 0\n"
    assert ok(run_task("plan-sync", input="\n   \n\t\n")) == "inserted: 0, updated: 0, deleted: 0, skipped (done): 0\n"


def test_plan_sync_updates_changed_tasks_skips_done_and_keeps_status(run_task, db):
    ok(run_task("plan-sync", input=jsonl({"id": "a", "t": "A"}, {"id": "b", "t": "B"}, {"id": "c", "t": "C"})))
    ok(run_task("claim", "b"))
    ok(run_task("claim", "c"))
    ok(run_task("done", "c"))
    out = ok(run_task("plan-sync", input=jsonl({"id": "a", "t": "A2"}, {"id": "b", "t": "B", "p": 0},
                                               {"id": "c", "t": "C changed", "deps": ["a"]})))
    assert out == "inserted: 0, updated: 2, deleted: 0, skipped (done): 1\n"
    assert query(db, "SELECT slug, title, status, priority FROM tasks ORDER BY slug") == [
        ("a", "A2", "open", 2), ("b", "B", "active", 0), ("c", "C", "done", 2)]
    assert query(db, "SELECT count(*) FROM task_deps")[0][0] == 0


def test_plan_sync_replaces_dependencies_and_skips_unknown_slugs(run_task, db):
    ok(run_task("plan-sync", input=jsonl({"id": "a", "t": "A", "deps": ["b", "ghost"]}, {"id": "b", "t": "B"},
                                         {"id": "c", "t": "C"})))
    assert query(db, "SELECT count(*) FROM task_deps")[0][0] == 1
    out = ok(run_task("plan-sync", input=jsonl({"id": "a", "t": "A", "deps": ["c"]}, {"id": "b", "t": "B"},
                                               {"id": "c", "t": "C"})))
    assert out == "inserted: 0, updated: 0, deleted: 0, skipped (done): 0\n"
    assert "deps: c\n" in ok(run_task("show", "a")) or "  c (open)" in ok(run_task("show", "a"))
    assert query(db, "SELECT b.slug FROM task_deps d JOIN tasks b ON b.id = d.blocked_by") == [("c",)]


def test_plan_sync_soft_deletes_orphans_of_each_spec_only(run_task, db):
    ok(run_task("plan-sync", input=jsonl({"id": "a", "t": "A", "spec": "s1"}, {"id": "b", "t": "B", "spec": "s1"},
                                         {"id": "d", "t": "D", "spec": "s1"},
                                         {"id": "c", "t": "C", "spec": "s2"}, {"id": "n", "t": "N"})))
    ok(run_task("claim", "d"))
    ok(run_task("done", "d"))
    ok(run_task("plan-sync", input=jsonl({"id": "x", "t": "X", "spec": "s1"}), env={"RALPH_SCOPE_BRANCH": "o"}))
    out = ok(run_task("plan-sync", input=jsonl({"id": "a", "t": "A", "spec": "s1"})))
    assert out == "inserted: 0, updated: 0, deleted: 1, skipped (done): 0\n"
    assert query(db, "SELECT slug, status, deleted_at IS NOT NULL FROM tasks WHERE scope_branch='main' ORDER BY slug") == [
        ("a", "open", 0), ("b", "deleted", 1), ("c", "open", 0), ("d", "done", 0), ("n", "open", 0)]
    assert query(db, "SELECT status FROM tasks WHERE scope_branch='o'") == [("open",)]
    out = ok(run_task("plan-sync", input=jsonl({"id": "a", "t": "A", "spec": "s1"}, {"id": "b", "t": "B2", "spec": "s1"})))
    assert out == "inserted: 0, updated: 1, deleted: 0, skipped (done): 0\n"
    assert query(db, "SELECT status, title FROM tasks WHERE slug='b'") == [("deleted", "B2")]


@pytest.mark.parametrize("line,error", [
    ("{not json", "Error: line 2: invalid JSON: {not json"),
    ("x" * 100, "Error: line 2: invalid JSON: " + "x" * 80),
    ('{"t":"T"}', 'Error: line 2: field "id" is missing or empty'),
    ('{"id":null,"t":"T"}', 'Error: line 2: field "id" is missing or empty'),
    ('{"id":"","t":"T"}', 'Error: line 2: field "id" is missing or empty'),
    ('["id"]', 'Error: line 2: field "id" is missing or empty'),
    ('{"id":"z"}', 'Error: line 2: field "t" is missing or empty'),
    ('{"id":"z","t":""}', 'Error: line 2: field "t" is missing or empty'),
    ('{"id":"z","t":"T","p":-1}', 'Error: line 2: field "p" must be a non-negative integer, got: -1'),
    ('{"id":"z","t":"T","p":"high"}', 'Error: line 2: field "p" must be a non-negative integer, got: "high"'),
    ('{"id":"z","t":"T","p":1.5}', 'Error: line 2: field "p" must be a non-negative integer, got: 1.5'),
], ids=["bad-json", "truncated-80", "no-id", "null-id", "empty-id", "not-object", "no-t", "empty-t",
        "negative-p", "string-p", "float-p"])
def test_plan_sync_validates_every_line_before_writing(run_task, db, line, error):
    ok(run_task("plan-sync", input=jsonl({"id": "keep", "t": "K", "spec": "s"})))
    before = dump(db)
    text = '{"id":"new","t":"N","spec":"s"}\n\n' + line + '\n{"id":"late","t":"L"}\n'
    fails(run_task("plan-sync", input=text), 1, error + "\n")
    assert dump(db) == before


def test_plan_sync_rejects_arguments(run_task):
    fails(run_task("plan-sync", "--force", input=""), 1, "Error: unknown flag '--force'\n")


# --- plan-status, peek, claim (s.9.2-9.4) -----------------------------------------------

def test_plan_status_counts_blocked_of_any_status(run_task):
    ok(run_task("plan-sync", input=jsonl({"id": "a", "t": "A"}, {"id": "b", "t": "B", "deps": ["a"]},
                                         {"id": "c", "t": "C"}, {"id": "d", "t": "D"}, {"id": "e", "t": "E"})))
    ok(run_task("claim", "c"))
    ok(run_task("claim", "d"))
    ok(run_task("done", "d"))
    ok(run_task("delete", "e"))
    assert ok(run_task("plan-status")) == "1 open, 1 active, 1 done, 1 blocked, 1 deleted\n"
    ok(run_task("block", "c", "--by", "a"))
    assert ok(run_task("plan-status")) == "1 open, 0 active, 1 done, 2 blocked, 1 deleted\n"
    fails(run_task("plan-status", "-v"), 1, "Error: unknown flag '-v'\n")


def test_plan_status_counts_a_done_task_with_an_unfinished_blocker_as_done_and_blocked(run_task):
    ok(run_task("create", "a", "A"))
    ok(run_task("create", "b", "B"))
    ok(run_task("claim", "b"))
    ok(run_task("done", "b"))
    ok(run_task("create", "c", "C", "--deps", "a,b"))  # one unfinished blocker of two
    ok(run_task("block", "b", "--by", "a"))
    assert ok(run_task("plan-status")) == "1 open, 0 active, 1 done, 2 blocked, 0 deleted\n"
    ok(run_task("claim", "a"))
    ok(run_task("done", "a"))
    assert ok(run_task("plan-status")) == "1 open, 0 active, 2 done, 0 blocked, 0 deleted\n"


def test_plan_status_counts_the_scope_only_and_a_blocker_by_its_id(run_task, db):
    other = {"RALPH_SCOPE_BRANCH": "other"}
    ok(run_task("create", "a", "A"))
    ok(run_task("create", "x", "X", env=other))
    ok(run_task("create", "y", "Y", "--deps", "x", env=other))
    ok(run_task("create", "z", "Z", env=other))
    ok(run_task("delete", "z", env=other))
    assert ok(run_task("plan-status")) == "1 open, 0 active, 0 done, 0 blocked, 0 deleted\n"
    assert ok(run_task("plan-status", env=other)) == "1 open, 0 active, 0 done, 1 blocked, 1 deleted\n"
    # The CLIs never write a dependency across scopes; another writer's still blocks by id.
    query(db, "INSERT INTO task_deps (task_id, blocked_by) SELECT a.id, x.id FROM tasks a, tasks x "
              "WHERE a.slug = 'a' AND x.slug = 'x'")
    assert ok(run_task("plan-status")) == "0 open, 0 active, 0 done, 1 blocked, 0 deleted\n"
    ok(run_task("claim", "x", env=other))
    ok(run_task("done", "x", env=other))
    assert ok(run_task("plan-status")) == "1 open, 0 active, 0 done, 0 blocked, 0 deleted\n"


def test_peek_lists_claimable_in_order_then_all_active(run_task, db):
    ok(run_task("plan-sync", input=jsonl(
        {"id": "low", "t": "Low", "p": 3}, {"id": "first", "t": "First", "p": 1},
        {"id": "second", "t": "Second", "p": 1, "cat": "c", "spec": "s", "ref": "r", "steps": ["s1"], "deps": ["done1"]},
        {"id": "blocked", "t": "Blocked", "p": 0, "deps": ["low"]}, {"id": "done1", "t": "D", "p": 9},
        {"id": "act", "t": "Act", "p": 0})))
    ok(run_task("claim", "done1"))
    ok(run_task("done", "done1", "--result", '{"commit": "c1"}'))
    ok(run_task("claim", "act", "--agent", "ag1"))
    out = ok(run_task("peek", "-n", "2"))
    assert out == ("## Task first\nid: first\ntitle: First\npriority: 1\nstatus: open\n\n"
                   "## Task second\nid: second\ntitle: Second\npriority: 1\nstatus: open\ncategory: c\n"
                   "spec: s\nref: r\ndeps: done1\nsteps:\n- s1\n\n"
                   "## Task act\nid: act\ntitle: Act\npriority: 0\nstatus: active\nassignee: ag1\n")
    assert ok(run_task("peek")).count("## Task") == 4
    assert ok(run_task("peek", "-n", "0")) == "## Task act\nid: act\ntitle: Act\npriority: 0\nstatus: active\nassignee: ag1\n"
    # an expired lease shows as open, without assignee, among the claimable
    query(db, "UPDATE tasks SET lease_expires_at = datetime('now', '-5 seconds') WHERE slug = 'act'")
    assert ok(run_task("peek", "-n", "1")) == "## Task act\nid: act\ntitle: Act\npriority: 0\nstatus: open\n"


def test_peek_nothing_to_show_is_empty(run_task):
    assert ok(run_task("peek")) == ""


@pytest.mark.parametrize("args,error", [
    (["-n", "abc"], "Error: -n must be a non-negative integer, got: abc\n"),
    (["-n", "-1"], "Error: -n must be a non-negative integer, got: -1\n"),
    (["-n"], "Error: -n requires a value\n"),
    (["--limit", "3"], "Error: unknown flag '--limit'\n"),
], ids=["word", "negative", "no-value", "unknown"])
def test_peek_argument_errors(run_task, args, error):
    fails(run_task("peek", *args), 1, error)


def test_claim_prints_every_field_with_blocker_results(run_task, db):
    ok(run_task("create", "dep-b", "B"))
    ok(run_task("create", "dep-a", "A"))
    ok(run_task("create", "t", "Target", "-p", "0", "-c", "feat", "-r", "spec.md", "--ref", "R",
                "-s", '["one","two"]', "--deps", "dep-b, dep-a"))
    for slug, result in (("dep-a", '{"commit": "abc123"}'), ("dep-b", "")):
        ok(run_task("claim", slug))
        ok(run_task("done", slug, *(["--result", result] if result else [])))
    out = ok(run_task("claim", "--agent", "a1", "--lease", "60"))
    lease = query(db, "SELECT lease_expires_at, datetime('now', '+60 seconds') >= lease_expires_at FROM tasks WHERE slug='t'")[0]
    assert lease[1] == 1
    assert out == ("## Task t\nid: t\ntitle: Target\npriority: 0\nstatus: active\ncategory: feat\n"
                   f"spec: spec.md\nref: R\nassignee: a1\nlease_expires_at: {lease[0]}\nretry_count: 0\n"
                   "deps: dep-a, dep-b\nsteps:\n- one\n- two\nblocker_results:\n- dep-a: {\"commit\":\"abc123\"}\n")


def test_claim_uses_ralph_agent_id_and_empty_agent_is_stored_empty(run_task, db):
    ok(run_task("create", "a", "A"))
    ok(run_task("create", "b", "B"))
    assert "assignee: env1\n" in ok(run_task("claim", env={"RALPH_AGENT_ID": "env1"}))
    assert "assignee" not in ok(run_task("claim"))
    assert query(db, "SELECT slug, assignee FROM tasks ORDER BY slug") == [("a", "env1"), ("b", "")]


def test_claim_nothing_eligible_exits_2_without_error_prefix(run_task):
    fails(run_task("claim"), 2, "No eligible tasks\n")
    ok(run_task("create", "a", "A"))
    ok(run_task("create", "b", "B", "--deps", "a"))
    fails(run_task("claim", "b"), 2, "Task not eligible\n")
    fails(run_task("claim", "ghost"), 2, "Task not eligible\n")
    ok(run_task("claim", "a"))
    fails(run_task("claim", "a"), 2, "Task not eligible\n")
    fails(run_task("claim"), 2, "No eligible tasks\n")


def test_reclaiming_an_expired_lease_increments_retry_count(run_task, db):
    ok(run_task("create", "a", "A"))
    ok(run_task("claim", "a", "--lease", "0", "--agent", "x"))
    query(db, "UPDATE tasks SET lease_expires_at = datetime('now', '-1 seconds')")
    out = ok(run_task("claim", "--agent", "y"))
    assert "assignee: y\n" in out and "retry_count: 1\n" in out


def test_claims_keep_the_spec_order_of_open_tasks_and_run_out_leases(run_task, db):
    """s.8 and s.9.4: a lease that ran out is claimable where the order puts its task; the
    PostgreSQL store claims an open task without looking at leases only while none ran out."""
    ok(run_task("plan-sync",
                input=jsonl(*({"id": f"t{p}", "t": f"T{p}", "p": p} for p in range(4)))))
    ok(run_task("claim", "t1", "--agent", "x"))
    ok(run_task("claim", "t3", "--agent", "x"))
    query(db, "UPDATE tasks SET lease_expires_at = datetime('now', '-1 seconds') "
              "WHERE slug IN ('t1', 't3')")
    taken = []
    for agent in ("a", "b", "c", "d"):
        out = ok(run_task("claim", "--agent", agent))
        taken.append((out.splitlines()[1], "retry_count: 1\n" in out))
    assert taken == [("id: t0", False), ("id: t1", True), ("id: t2", False), ("id: t3", True)]
    fails(run_task("claim"), 2, "No eligible tasks\n")
    # a claim by id while another task's lease has run out
    query(db, "UPDATE tasks SET status = 'open', assignee = NULL WHERE slug = 't2'")
    query(db, "UPDATE tasks SET lease_expires_at = datetime('now', '-1 seconds') WHERE slug = 't0'")
    assert "id: t2\n" in ok(run_task("claim", "t2", "--agent", "e"))
    out = ok(run_task("claim", "--agent", "f"))                     # t0's run-out lease
    assert "id: t0\n" in out and "assignee: f\n" in out and "retry_count: 1\n" in out


@pytest.mark.parametrize("value", ["abc", "-5", "1.5", ""], ids=["word", "negative", "float", "empty"])
def test_claim_and_renew_refuse_bad_leases(run_task, value, db):
    ok(run_task("create", "a", "A"))
    before = dump(db)
    msg = f"Error: --lease must be a non-negative integer, got: {value}\n"
    fails(run_task("claim", "--lease", value), 1, msg)
    fails(run_task("renew", "a", "--lease", value), 1, msg)
    assert dump(db) == before


def test_value_flags_take_the_next_argument_verbatim(run_task):
    ok(run_task("create", "a", "A"))
    assert "assignee: --lease\n" in ok(run_task("claim", "--agent", "--lease"))
    fails(run_task("claim", "--agent"), 1, "Error: --agent requires a value\n")
    ok(run_task("fail", "a", "--reason", "-x"))
    assert "Fail reason: -x\n" in ok(run_task("show", "a"))


# --- renew, done, fail (s.9.5-9.7) -------------------------------------------------------

def test_renew_checks_and_extends_the_lease(run_task, db):
    ok(run_task("create", "a", "A"))
    fails(run_task("renew"), 1, "Error: missing task ID\nUsage: ralph task renew <id> [--lease N]\n")
    fails(run_task("renew", "--bogus"), 1, "Error: unknown flag '--bogus'\n")
    fails(run_task("renew", "ghost"), 2, "Error: task 'ghost' not found\n")
    fails(run_task("renew", "a"), 1, "Error: task 'a' is not active (status: open)\n")
    ok(run_task("claim", "a", "--agent", "me", "--lease", "5"))
    fails(run_task("renew", "a"), 1, "Error: agent '' is not the assignee of task 'a'\n")
    fails(run_task("renew", "a", "--agent", "you"), 1, "Error: agent 'you' is not the assignee of task 'a'\n")
    assert ok(run_task("renew", "a", "--lease", "3600", env={"RALPH_AGENT_ID": "me"})) == "renewed a\n"
    assert query(db, "SELECT lease_expires_at > datetime('now', '+3000 seconds') FROM tasks")[0][0] == 1


def test_done_validates_result_then_unblocks_dependents(run_task, db):
    ok(run_task("create", "a", "A"))
    ok(run_task("create", "b", "B", "--deps", "a"))
    fails(run_task("done"), 1, "Error: missing task ID\nUsage: ralph task done <id> [--result '<json>']\n")
    for bad in ('{"sha":"x"}', '{"commit":null}', '{"commit":false}', "not json", '["commit"]',
                '{bad', '{', '"x', '{"commit":"a"', '[1,'):     # errors inside: no traceback
        fails(run_task("done", "ghost", "--result", bad), 1, "Error: result JSON must include a 'commit' key\n")
    fails(run_task("done", "ghost"), 2, "Error: task 'ghost' not found\n")
    fails(run_task("done", "a", "--bogus"), 1, "Error: unknown flag '--bogus'\n")
    fails(run_task("done", "a"), 1, "Error: task 'a' is not active (status: open)\n")
    ok(run_task("claim", "a"))
    assert ok(run_task("done", "a", "--result", '{"commit": "abc", "n": 1}')) == "done a\n"
    assert query(db, "SELECT status, result FROM tasks WHERE slug='a'") == [("done", '{"commit": "abc", "n": 1}')]
    assert "## Task b" in ok(run_task("peek"))
    ok(run_task("claim", "b"))
    ok(run_task("done", "b", "--result", ""))
    assert query(db, "SELECT result FROM tasks WHERE slug='b'") == [(None,)]
    ok(run_task("create", "z", "Z"))
    ok(run_task("claim", "z"))
    assert ok(run_task("done", "z", "--result", '{"commit": 0}')) == "done z\n"


def test_fail_reopens_and_accumulates_retries(run_task, db):
    ok(run_task("create", "a", "A"))
    fails(run_task("fail"), 1, 'Error: missing task ID\nUsage: ralph task fail <id> [--reason "<text>"]\n')
    fails(run_task("fail", "ghost"), 2, "Error: task 'ghost' not found\n")
    fails(run_task("fail", "a"), 1, "Error: task 'a' is not active (status: open)\n")
    query(db, "UPDATE tasks SET retry_count = 3")
    ok(run_task("claim", "a", "--agent", "z"))
    assert ok(run_task("fail", "a", "--reason", "it's \"broken\" $(x) <b>&")) == "failed a\n"
    assert query(db, "SELECT status, assignee, lease_expires_at, retry_count, fail_reason FROM tasks") == [
        ("open", None, None, 4, "it's \"broken\" $(x) <b>&")]
    ok(run_task("claim", "a"))
    ok(run_task("fail", "a", "--reason", ""))
    assert query(db, "SELECT retry_count, fail_reason FROM tasks") == [(5, None)]


def test_launcher_works_through_a_symlink_from_anywhere(git_repo, base_env, bin_dir):
    import subprocess
    link = bin_dir / "task"
    link.symlink_to(ROOT / "scripts" / "task")
    proc = subprocess.run([str(link), "plan-status"], cwd=git_repo, env=base_env, capture_output=True, text=True)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "0 open, 0 active, 0 done, 0 blocked, 0 deleted\n", "")


def test_database_is_opened_before_arguments_are_checked(run_task, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    msg = "Error: not inside a git repository. Run: git init\n"
    fails(run_task("claim", "--bogus", cwd=outside), 1, msg)
    fails(run_task("agent", cwd=outside), 1, msg)
    fails(run_task("plan-sync", cwd=outside, input="not json\n"), 1, msg)
    fails(run_task("_render-md", cwd=outside), 1, "Error: missing JSON argument\n")


def test_values_are_stored_and_printed_byte_for_byte(run_task, db):
    nasty = "it's a \"quote\" / <html> & $(echo hi) `x` \\ back\\slash ünï"
    slug = "we'ird/$(id)"
    ok(run_task("create", slug, nasty, "-c", nasty, "-d", nasty, "--ref", nasty))
    assert f"## Task {slug}\nid: {slug}\ntitle: {nasty}\n" in ok(run_task("peek"))
    assert f"Description: {nasty}\n" in ok(run_task("show", slug))
    assert query(db, "SELECT slug, title, category, description, ref FROM tasks") == [(slug, nasty, nasty, nasty, nasty)]


def test_numbers_beyond_sqlite_range_are_one_line_errors(run_task, db):
    ok(run_task("create", "a", "A"))
    before = dump(db)
    fails(run_task("claim", "--lease", "999999999999"), 1,
          "Error: --lease is too large (at most 99999999999 seconds), got: 999999999999\n")
    fails(run_task("create", "b", "B", "-p", "9" * 30), 1, "Error: number out of range\n")
    fails(run_task("plan-sync", input='{"id":"c","t":"C","p":%s}\n' % ("9" * 30)), 1, "Error: number out of range\n")
    assert dump(db) == before
    assert "## Task a" in ok(run_task("peek", "-n", "9" * 30))

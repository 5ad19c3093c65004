"""Black-box tests of the shared, dependency, agent and internal task commands
(docs/contract/task-cli.md s.9.8-9.17, and ralph.py's internal extensions), byte for byte."""
from __future__ import annotations

import io
import json
import socket

import pytest

from ralphpy.tasks import run_edits
from ralphpy.tasks.context import Ctx
from task_helpers import dump, fails, jsonl, ok, on_tasks, query, traced

TABLE_HEADER = "ID                   P S        CAT   TITLE                               AGENT\n"


pytestmark = pytest.mark.usefixtures("any_store")


@pytest.fixture
def db(any_store):
    return any_store


# --- list (s.9.8) -------------------------------------------------------------------------

def test_list_prints_the_aligned_table_in_order(run_task):
    assert ok(run_task("list")) == ""
    ok(run_task("create", "b", "Second", "-p", "1"))
    ok(run_task("create", "a-very-long-task-identifier", "A title that is longer than thirty-five chars",
                "-p", "1", "-c", "category"))
    ok(run_task("create", "z", "Zero", "-p", "0", "-c", "c"))
    ok(run_task("claim", "z", "--agent", "ag"))
    assert ok(run_task("list")) == (
        TABLE_HEADER
        + "z                    0 active   c     Zero                                ag\n"
        + "b                    1 open     -     Second                              -\n"
        + "a-very-long-task-identifier 1 open     category A title that is longer than thirty-five chars -\n")


def test_list_filters_by_status_all_and_assignee(run_task):
    for slug in ("a", "b", "c", "d"):
        ok(run_task("create", slug, slug.upper()))
    ok(run_task("claim", "a", "--agent", "x"))
    ok(run_task("claim", "b", "--agent", "y"))
    ok(run_task("delete", "d"))
    slugs = lambda out: [line.split()[0] for line in out.splitlines()[1:]]  # noqa: E731
    assert slugs(ok(run_task("list"))) == ["a", "b", "c"]
    assert slugs(ok(run_task("list", "--all"))) == ["a", "b", "c", "d"]
    assert slugs(ok(run_task("list", "--status", "deleted"))) == ["d"]
    assert slugs(ok(run_task("list", "--status", " open , deleted "))) == ["c", "d"]
    assert slugs(ok(run_task("list", "--status", "active", "--assignee", "y"))) == ["b"]
    assert ok(run_task("list", "--assignee", "nobody")) == ""
    fails(run_task("list", "--all", "--status", "open"), 1, "Error: --all and --status are mutually exclusive\n")
    fails(run_task("list", "--status"), 1, "Error: --status requires a value\n")
    fails(run_task("list", "extra"), 1, "Error: unknown flag 'extra'\n")


def test_list_markdown_writes_the_list_fields_only(run_task):
    ok(run_task("create", "dep", "Dep"))
    ok(run_task("claim", "dep"))
    ok(run_task("done", "dep"))
    ok(run_task("create", "t", "T", "-c", "cat", "-r", "s.md", "--ref", "R", "-s", '["x"]', "-d", "hidden",
                "--deps", "dep", "-p", "0"))
    ok(run_task("claim", "t", "--agent", "me"))
    assert ok(run_task("list", "--markdown", "--status", "active")) == (
        "## Task t\nid: t\ntitle: T\npriority: 0\nstatus: active\ncategory: cat\nspec: s.md\nref: R\n"
        "assignee: me\ndeps: dep\nsteps:\n- x\n")
    out = ok(run_task("list", "--all", "--markdown"))
    assert out.count("\n\n") == 1 and "hidden" not in out and "lease" not in out


# --- show (s.9.9) -------------------------------------------------------------------------

def test_show_writes_present_fields_steps_dependencies_and_blocker_results(run_task, db):
    ok(run_task("create", "res-a", "A"))
    ok(run_task("create", "res-b", "B"))
    ok(run_task("claim", "res-a"))
    ok(run_task("done", "res-a", "--result", '{"commit": "abc123"}'))
    ok(run_task("create", "t", "Title", "-c", "feat", "-d", "Desc", "-r", "spec.md", "--ref", "R",
                "-s", '["one","two"]', "--deps", "res-b,res-a"))
    created = query(db, "SELECT created_at, updated_at FROM tasks WHERE slug='t'")[0]
    base = (f"ID:          t\nTitle:       Title\nStatus:      open\nPriority:    2\nCategory:    feat\n"
            f"Description: Desc\nSpec:        spec.md\nRef:         R\nCreated:     {created[0]}\n"
            f"Updated:     {created[1]}\n\nSteps:\n  1. one\n  2. two\n\nDependencies:\n"
            "  res-a (done)\n  res-b (open)\n")
    assert ok(run_task("show", "t")) == base
    assert ok(run_task("show", "t", "--with-deps")) == base + '\nBlocker Results:\n  res-a: {"commit": "abc123"}\n'
    assert ok(run_task("show", "res-b", "--with-deps")).endswith("\n") and "Blocker" not in ok(run_task("show", "res-b", "--with-deps"))


def test_show_of_a_failed_deleted_task_has_retries_reason_and_deleted(run_task, db):
    ok(run_task("create", "a", "A"))
    ok(run_task("claim", "a"))
    ok(run_task("fail", "a", "--reason", "flaky"))
    ok(run_task("delete", "a"))
    out = ok(run_task("show", "a"))
    deleted = query(db, "SELECT deleted_at FROM tasks")[0][0]
    assert "Status:      deleted\n" in out and "Retries:     1\n" in out and "Fail reason: flaky\n" in out
    assert f"Deleted:     {deleted}\n" in out and "Assignee" not in out


HOSTILE = "Red \x1b[31mALERT\x1b[0m \x1b]0;pwned\x07 \x9b2J\x7f"
SHOWN = "Red \\x1b[31mALERT\\x1b[0m \\x1b]0;pwned\\x07 \\x9b2J\\x7f"


def test_list_show_and_deps_show_control_characters_escaped_never_raw(run_task):
    """A title from a planner model or a fleet's store is data: its escape sequences are shown
    (`\\x1b[31m`), never sent to the terminal; a description keeps its newlines and tabs,
    a one-line table cell shows them escaped. The store keeps the text as given."""
    ok(run_task("create", "a", HOSTILE, "-d", "one\n\ttwo\x1b[2J"))
    ok(run_task("create", "b", "Plain\ntitle", "--deps", "a"))
    table = ok(run_task("list"))
    assert table == (TABLE_HEADER + f"a                    2 open     -     {SHOWN:<35} -\n"
                     + "b                    2 open     -     Plain\\ntitle                        -\n")
    markdown = ok(run_task("list", "--markdown"))
    assert f"title: {SHOWN}\n" in markdown and "title: Plain\ntitle\n" in markdown
    shown = ok(run_task("show", "a"))
    assert f"Title:       {SHOWN}\n" in shown
    assert "Description: one\n\ttwo\\x1b[2J\n" in shown
    assert ok(run_task("deps", "b")) == f"a [open] {SHOWN}\n"
    for out in (table, markdown, shown):
        assert not any(c in out for c in "\x1b\x07\x9b\x7f")
    assert json.loads(ok(run_task("_export-json")).splitlines()[0])["title"] == HOSTILE


def test_show_errors(run_task):
    fails(run_task("show"), 1, "Error: missing task ID\nUsage: ralph task show <id> [--with-deps]\n")
    fails(run_task("show", "a", "--deps"), 1, "Error: unknown flag '--deps'\n")
    fails(run_task("show", "ghost"), 2, "Error: task 'ghost' not found\n")


# --- create, update, delete (s.9.10-9.12) ------------------------------------------------

CREATE_USAGE = ("Usage: ralph task create <id> <title> [-p PRIORITY] [-c CATEGORY] [-d DESCRIPTION] "
                "[-s STEPS_JSON] [-r SPEC_REF] [--ref REF] [--deps DEP_IDS]\n")


@pytest.mark.parametrize("args,code,error", [
    ([], 1, "Error: missing task ID\n" + CREATE_USAGE),
    (["x"], 1, "Error: missing task title\n" + CREATE_USAGE),
    (["x", ""], 1, "Error: missing task title\n" + CREATE_USAGE),
    (["x", "T", "--bogus"], 1, "Error: unknown flag '--bogus'\n"),
    (["x", "T", "-p", "high"], 1, "Error: -p (priority) must be a non-negative integer, got: high\n"),
    (["x", "T", "-p", "-1"], 1, "Error: -p (priority) must be a non-negative integer, got: -1\n"),
    (["x", "T", "-s", "not json"], 1, "Error: -s (steps) must be a JSON array, got: not json\n"),
    (["x", "T", "-s", '{"a":1}'], 1, 'Error: -s (steps) must be a JSON array, got: {"a":1}\n'),
    (["x", "T", "-s", "[1]"], 1, "Error: -s (steps) must be a JSON array, got: [1]\n"),
    (["x", "T", "-s", "{bad"], 1, "Error: -s (steps) must be a JSON array, got: {bad\n"),
    (["dup", "T"], 1, "Error: task 'dup' already exists\n"),
], ids=["no-id", "no-title", "empty-title", "unknown-flag", "word-priority", "negative-priority",
        "bad-steps", "object-steps", "non-string-steps", "broken-object-steps", "duplicate"])
def test_create_errors_write_nothing(run_task, db, args, code, error):
    ok(run_task("create", "dup", "Existing"))
    ok(run_task("delete", "dup"))
    before = dump(db)
    fails(run_task("create", *args), code, error)
    assert dump(db) == before


def test_create_stores_values_verbatim_and_empty_as_null(run_task, db):
    title = "it's \"q\" / <html> & $(rm -rf) \\n ü"
    assert ok(run_task("create", "web/01", title, "-d", "", "-c", "", "-s", "[]", "--deps", " ,ghost")) == "web/01\n"
    assert query(db, "SELECT title, description, category, steps, priority, status, retry_count, "
                     "created_at IS NOT NULL, updated_at IS NOT NULL FROM tasks") == [
        (title, None, None, None, 2, "open", 0, 1, 1)]
    assert query(db, "SELECT count(*) FROM task_deps")[0][0] == 0
    assert f"title: {title}\n" in ok(run_task("peek"))


UPDATE_USAGE = ("Usage: ralph task update <id> [--title T] [--priority N] [--description D] "
                "[--steps S] [--status S]\n")


@pytest.mark.parametrize("args,code,error", [
    ([], 1, "Error: missing task ID\n" + UPDATE_USAGE),
    (["a", "--bogus", "1"], 1, "Error: unknown flag '--bogus'\n"),
    (["a"], 1, "Error: no fields to update\n"),
    (["ghost"], 1, "Error: no fields to update\n"),
    (["a", "--title", ""], 1, "Error: missing task title\n"),
    (["a", "--priority", "x"], 1, "Error: --priority must be a non-negative integer, got: x\n"),
    (["a", "--steps", "{}"], 1, "Error: --steps must be a JSON array, got: {}\n"),
    (["a", "--steps", '["a",'], 1, 'Error: --steps must be a JSON array, got: ["a",\n'),
    (["a", "--status", "closed"], 1, "Error: --status must be one of open, active, done, deleted, got: closed\n"),
    (["ghost", "--title", "T"], 2, "Error: task 'ghost' not found\n"),
    (["d", "--title", "T"], 1, "Error: task 'd' is done and cannot be updated\n"),
    (["d", "--status", "open"], 1, "Error: task 'd' is done and cannot be updated\n"),
], ids=["no-id", "unknown-flag", "no-fields", "no-fields-before-lookup", "empty-title", "bad-priority",
        "bad-steps", "broken-array-steps", "bad-status", "unknown-task", "done-task",
        "done-task-status"])
def test_update_errors_write_nothing(run_task, db, args, code, error):
    ok(run_task("create", "a", "A"))
    ok(run_task("create", "d", "D"))
    ok(run_task("claim", "d"))
    ok(run_task("done", "d"))
    before = dump(db)
    fails(run_task("update", *args), code, error)
    assert dump(db) == before


def test_update_changes_only_the_given_fields(run_task, db):
    ok(run_task("create", "a", "A", "-d", "desc", "-s", '["s"]'))
    ok(run_task("claim", "a", "--agent", "me"))
    assert ok(run_task("update", "a", "--title", "New", "--priority", "0", "--description", "",
                       "--steps", "[]", "--status", "open")) == "updated a\n"
    assert query(db, "SELECT title, priority, description, steps, status, assignee, "
                     "lease_expires_at IS NOT NULL FROM tasks") == [("New", 0, None, None, "open", "me", 1)]


def test_delete_soft_deletes_and_unblocks(run_task, db):
    ok(run_task("create", "a", "A"))
    ok(run_task("create", "b", "B", "--deps", "a"))
    fails(run_task("delete"), 1, "Error: missing task ID\nUsage: ralph task delete <id>\n")
    fails(run_task("delete", "ghost"), 2, "Error: task 'ghost' not found\n")
    assert ok(run_task("delete", "a")) == "deleted a\n"
    assert query(db, "SELECT status, deleted_at = updated_at FROM tasks WHERE slug='a'") == [("deleted", 1)]
    assert query(db, "SELECT count(*) FROM task_deps")[0][0] == 1
    assert ok(run_task("plan-status")) == "1 open, 0 active, 0 done, 0 blocked, 1 deleted\n"


def test_batch_delete_by_status_spec_and_category(run_task, db):
    ok(run_task("plan-sync", input=jsonl(
        {"id": "a", "t": "A", "spec": "s1", "cat": "x"}, {"id": "b", "t": "B", "spec": "s1"},
        {"id": "c", "t": "C", "spec": "s2"}, {"id": "d", "t": "D"})))
    ok(run_task("claim", "d"))
    assert ok(run_task("delete", "--status", "open", "--spec", "s1", "--category", "x")) == "deleted 1 tasks\n"
    assert ok(run_task("delete", "--status", "open,done", "--spec", "s1")) == "deleted 1 tasks\n"
    assert ok(run_task("delete", "--status", "open", "--spec", "s1")) == "deleted 0 tasks\n"
    assert ok(run_task("delete", "--all", "--confirm")) == "deleted 2 tasks\n"
    assert query(db, "SELECT count(*) FROM tasks WHERE status='deleted'")[0][0] == 4


@pytest.mark.parametrize("args,error", [
    (["--status"], "Error: --status requires a value\n"),
    (["--spec"], "Error: --spec requires a value\n"),
    (["-x"], "Error: unknown flag '-x'\n"),
    (["a", "b"], "Error: unexpected argument 'b'\n"),
    (["a", "--status", "open"], "Error: cannot combine positional ID with filter flags\n"),
    (["a", "--all"], "Error: cannot combine positional ID with filter flags\n"),
    (["--all", "--status", "open"], "Error: --all and --status are mutually exclusive\n"),
    (["--all"], "Error: --all requires --confirm flag\n"),
    (["--spec", "s1"], "Error: --spec and --category require --status or --all\n"),
    (["--confirm"], "Error: missing task ID\nUsage: ralph task delete <id>\n"),
    (["--status", "open,deleted"], "Error: cannot use 'deleted' as a status filter\n"),
], ids=["status-no-value", "spec-no-value", "unknown", "second-positional", "id-and-status", "id-and-all",
        "all-and-status", "all-no-confirm", "spec-alone", "no-filter", "deleted-filter"])
def test_batch_delete_argument_errors_write_nothing(run_task, db, args, error):
    ok(run_task("create", "a", "A", "-r", "s1"))
    before = dump(db)
    fails(run_task("delete", *args), 1, error)
    assert dump(db) == before


# --- deps, block, unblock (s.9.13-9.14) --------------------------------------------------

def test_deps_tree_with_diamond_and_cycle(run_task):
    for slug in "abcde":
        ok(run_task("create", slug, slug.upper()))
    fails(run_task("deps"), 1, "Error: missing task ID\nUsage: ralph task deps <id>\n")
    fails(run_task("deps", "ghost"), 2, "Error: task 'ghost' not found\n")
    assert ok(run_task("deps", "a")) == "(no dependencies)\n"
    ok(run_task("claim", "e"))
    ok(run_task("done", "e"))
    for task, by in (("a", "c"), ("a", "b"), ("b", "d"), ("c", "d"), ("d", "e"), ("e", "a")):
        assert ok(run_task("block", task, "--by", by)) == f"blocked {task} by {by}\n"
    assert ok(run_task("deps", "a")) == "b [open] B\nc [open] C\n  d [open] D\n    e [done] E\n"
    assert ok(run_task("deps", "e")) == "a [open] A\n  b [open] B\n  c [open] C\n    d [open] D\n"


def test_block_and_unblock(run_task, db):
    ok(run_task("create", "a", "A"))
    ok(run_task("create", "b", "B"))
    usage = "Usage: ralph task block <id> --by <blocker-id>\n"
    fails(run_task("block"), 1, "Error: missing task ID\n" + usage)
    fails(run_task("block", "a"), 1, "Error: missing --by <blocker-id>\n" + usage)
    fails(run_task("block", "a", "--by"), 1, "Error: --by requires a value\n")
    fails(run_task("block", "a", "--with", "b"), 1, "Error: unknown flag '--with'\n")
    fails(run_task("block", "ghost", "--by", "b"), 2, "Error: task 'ghost' not found\n")
    fails(run_task("block", "a", "--by", "ghost"), 2, "Error: blocker task 'ghost' not found\n")
    ok(run_task("block", "a", "--by", "b"))
    assert ok(run_task("block", "a", "--by", "b")) == "blocked a by b\n"
    assert query(db, "SELECT count(*) FROM task_deps")[0][0] == 1
    assert "deps: b\n" in ok(run_task("list", "--markdown"))
    fails(run_task("unblock", "a"), 1,
          "Error: missing --by <blocker-id>\nUsage: ralph task unblock <id> --by <blocker-id>\n")
    fails(run_task("unblock", "b", "--by", "a"), 2, "Error: dependency not found\n")
    fails(run_task("unblock", "ghost", "--by", "a"), 2, "Error: dependency not found\n")
    assert ok(run_task("unblock", "a", "--by", "b")) == "unblocked a from b\n"
    assert query(db, "SELECT count(*) FROM task_deps")[0][0] == 0


# --- agents (s.9.15) ----------------------------------------------------------------------

def test_agent_register_list_deregister(run_task, db):
    fails(run_task("agent"), 1, "Error: missing agent subcommand\nUsage: ralph task agent <register|list|deregister>\n")
    fails(run_task("agent", "kill"), 1, "Error: unknown agent subcommand 'kill'\n")
    assert ok(run_task("agent", "list")) == ""
    first = ok(run_task("agent", "register")).strip()
    second = ok(run_task("agent", "register")).strip()
    assert len(first) == 4 and int(first, 16) >= 0 and first != second
    rows = query(db, "SELECT id, pid, hostname, started_at FROM agents ORDER BY rowid DESC")
    assert rows[0][2] == socket.gethostname() and rows[0][1] > 0
    expected = "ID     PID      HOSTNAME             STARTED                   STATUS\n" + "".join(
        f"{i:<6} {pid!s:<8} {host:<20} {started:<25} active\n" for i, pid, host, started in rows)
    assert ok(run_task("agent", "list")) == expected
    fails(run_task("agent", "deregister"), 1, "Error: missing agent ID\nUsage: ralph task agent deregister <id>\n")
    fails(run_task("agent", "deregister", "zzzz"), 2, "Error: agent 'zzzz' not found\n")
    assert ok(run_task("agent", "deregister", first)) == f"deregistered {first}\n"
    assert ok(run_task("agent", "deregister", first)) == f"deregistered {first}\n"
    assert ok(run_task("agent", "list")).count("\n") == 2
    assert query(db, "SELECT status FROM agents ORDER BY rowid") == [("stopped",), ("active",)]


# --- _render-md (s.9.17) ------------------------------------------------------------------

def test_render_md_of_the_spec_example(run_task, tmp_path):
    obj = {"id": "web/01", "t": "Full task", "p": 1, "s": "open", "cat": "feat", "spec": "spec.md",
           "ref": "ref-1", "assignee": "a1b2", "deps": ["dep/01", "dep/02"], "steps": ["first", "second"],
           "d": "never shown", "retry_count": None, "lease_expires_at": ""}
    assert ok(run_task("_render-md", json.dumps(obj), cwd=tmp_path)) == (
        "## Task web/01\nid: web/01\ntitle: Full task\npriority: 1\nstatus: open\ncategory: feat\n"
        "spec: spec.md\nref: ref-1\nassignee: a1b2\ndeps: dep/01, dep/02\nsteps:\n- first\n- second\n")


def test_render_md_long_keys_zero_priority_and_non_strings(run_task, tmp_path):
    obj = {"id": "x", "title": "T", "priority": 0, "status": "active", "category": "c",
           "ref": ["src", "main.py"], "retry_count": 0, "steps": [], "deps": [],
           "blocker_results": {"b": {"commit": "1"}, "a": "raw"}}
    assert ok(run_task("_render-md", json.dumps(obj), cwd=tmp_path)) == (
        "## Task x\nid: x\ntitle: T\npriority: 0\nstatus: active\ncategory: c\nref: [\"src\",\"main.py\"]\n"
        "retry_count: 0\nblocker_results:\n- b: {\"commit\":\"1\"}\n- a: raw\n")
    assert "priority" not in ok(run_task("_render-md", '{"id":"x","p":null,"priority":3}', cwd=tmp_path))


@pytest.mark.parametrize("args", [[], ["not json"], ["[1]"]], ids=["missing", "invalid", "not-object"])
def test_render_md_bad_argument_is_one_error_line(run_task, tmp_path, args):
    proc = run_task("_render-md", *args, cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout == "" and proc.stderr.startswith("Error: ")
    assert proc.stderr.count("\n") == 1


# --- internal extensions of ralph.py ------------------------------------------------------

def test_export_json_lists_every_task_of_the_scope(run_task):
    ok(run_task("create", "b", "B", "-s", '["s1"]'))
    ok(run_task("create", "a", "A", "-p", "1", "--deps", "b"))
    ok(run_task("delete", "b"))
    ok(run_task("create", "x", "X", env={"RALPH_SCOPE_BRANCH": "other"}))
    ok(run_task("_hold", "a", "--reason", "failed too often"))
    lines = [json.loads(line) for line in ok(run_task("_export-json")).splitlines()]
    assert [(t["id"], t["status"], t["deps"], t["steps"], t["held"]) for t in lines] == [
        ("a", "open", ["b"], None, "failed too often"), ("b", "deleted", [], ["s1"], None)]
    assert list(lines[0]) == ["id", "title", "description", "priority", "status", "category", "spec", "ref",
                              "assignee", "lease_expires_at", "retry_count", "fail_reason", "steps", "deps",
                              "result", "created_at", "updated_at", "deleted_at", "held"]


def test_an_agent_session_cannot_release_a_hold(run_task, db):
    """The agent's environment carries its session's tag: `_unhold` there is refused, writes
    nothing, and the task stays held for a person."""
    ok(run_task("create", "a", "A"))
    ok(run_task("_hold", "a", "--reason", "verification failed"))
    fails(run_task("_unhold", "a", env={"RALPH_SESSION_TAG": "123-abc"}), 1,
          "Error: _unhold is refused inside an agent session: a held task waits for a person "
          "(run `ralph task _unhold <id>` from your own shell)\n")
    assert ok(run_task("plan-status")) == "0 open, 0 active, 0 done, 1 blocked, 0 deleted\n"
    assert ok(run_task("_unhold", "a")) == "unheld a\n"


def test_hold_makes_a_task_unclaimable_and_blocked_until_unhold(run_task, db):
    ok(run_task("create", "a", "A"))
    ok(run_task("create", "b", "B"))
    fails(run_task("_hold", "ghost"), 2, "Error: task 'ghost' not found\n")
    assert ok(run_task("_hold", "a", "--reason", "respawned without progress")) == "held a\n"
    assert ok(run_task("plan-status")) == "1 open, 0 active, 0 done, 1 blocked, 0 deleted\n"
    assert "## Task a" not in ok(run_task("peek"))
    fails(run_task("claim", "a"), 2, "Task not eligible\n")
    assert "## Task b" in ok(run_task("claim"))
    fails(run_task("claim"), 2, "No eligible tasks\n")
    assert ok(run_task("_unhold", "a")) == "unheld a\n"
    assert "## Task a" in ok(run_task("claim"))
    ok(run_task("delete", "a"))
    query(db, "PRAGMA foreign_keys=ON")
    assert query(db, "SELECT count(*) FROM task_holds")[0][0] == 0


def test_plan_status_counts_a_held_task_as_blocked_only_while_open_or_active_and_once(run_task):
    ok(run_task("create", "a", "A"))
    ok(run_task("create", "b", "B", "--deps", "a"))  # held and blocked: one blocked task
    ok(run_task("create", "c", "C"))
    ok(run_task("create", "d", "D"))
    ok(run_task("claim", "c"))
    ok(run_task("claim", "d"))
    ok(run_task("done", "d"))
    for slug in ("b", "c", "d"):
        ok(run_task("_hold", slug, "--reason", "parked"))
    assert ok(run_task("plan-status")) == "1 open, 0 active, 1 done, 2 blocked, 0 deleted\n"
    ok(run_task("_unhold", "c"))
    assert ok(run_task("plan-status")) == "1 open, 1 active, 1 done, 1 blocked, 0 deleted\n"


def test_show_and_list_say_that_a_task_is_held_and_why(run_task):
    ok(run_task("create", "a", "A", "-p", "1"))
    ok(run_task("create", "b", "B", "-p", "2"))
    before_b = ok(run_task("show", "b"))
    reason = "failed 3 times (--max-attempts 3): session exited without completing task"
    ok(run_task("_hold", "a", "--reason", reason))
    shown = ok(run_task("show", "a")).splitlines()
    assert shown[2:4] == ["Status:      open",
                          f"Held:        {reason}; release it with: ralph task _unhold a"]
    assert ok(run_task("show", "b")) == before_b                      # not held: as before
    table = ok(run_task("list")).splitlines()
    assert table[1].split()[:3] == ["a", "1", "held"] and table[2].split()[:3] == ["b", "2", "open"]
    assert table[3:] == [f"held a: {reason}"]
    md = ok(run_task("list", "--markdown"))
    assert f"## Task a\nid: a\ntitle: A\npriority: 1\nstatus: open\nheld: {reason}\n" in md
    assert "## Task b\nid: b\ntitle: B\npriority: 2\nstatus: open\n" in md
    ok(run_task("_unhold", "a"))
    assert "Held:" not in ok(run_task("show", "a")) and "held" not in ok(run_task("list"))


def test_frozen_ids_file_limits_peek_and_claim(run_task, tmp_path):
    for slug in ("a", "b", "c"):
        ok(run_task("create", slug, slug.upper()))
    frozen = tmp_path / "frozen.txt"
    frozen.write_text("b\n\nc\n")
    env = {"RALPH_FROZEN_IDS_FILE": str(frozen)}
    assert [l for l in ok(run_task("peek", env=env)).splitlines() if l.startswith("## ")] == ["## Task b", "## Task c"]
    fails(run_task("claim", "a", env=env), 2, "Task not eligible\n")
    assert "## Task b" in ok(run_task("claim", env=env))
    assert "## Task a" in ok(run_task("claim", env={"RALPH_FROZEN_IDS_FILE": ""}))
    frozen.write_text("a\n")
    fails(run_task("claim", env=env), 2, "No eligible tasks\n")
    fails(run_task("peek", env={"RALPH_FROZEN_IDS_FILE": str(tmp_path / "missing")}), 1,
          f"Error: cannot read RALPH_FROZEN_IDS_FILE {tmp_path / 'missing'}: No such file or directory\n")


def test_deps_lists_a_task_at_every_depth_it_is_reached_and_stays_fast_on_ladders(run_task):
    ok(run_task("plan-sync", input=jsonl({"id": "a", "t": "A", "deps": ["b", "d"]}, {"id": "b", "t": "B", "deps": ["c"]},
                                         {"id": "c", "t": "C", "deps": ["d"]}, {"id": "d", "t": "D"})))
    assert ok(run_task("deps", "a")) == "b [open] B\nd [open] D\n  c [open] C\n    d [open] D\n"
    # each task blocked by the two before it: 2^n paths, answered in one walk per depth
    ladder = [{"id": f"l{i:02}", "t": "L", "deps": [f"l{i - 1:02}", f"l{i - 2:02}"][: min(i, 2)]} for i in range(60)]
    ok(run_task("plan-sync", input=jsonl(*ladder)))
    out = ok(run_task("deps", "l59"))
    assert out.splitlines()[:3] == ["l57 [open] L", "l58 [open] L", "  l55 [open] L"]
    assert out.splitlines()[-1] == "  " * 58 + "l00 [open] L"


OLD = "abc1234" + "5" * 33
NEW = "f00d" + "6" * 36


def test_recommit_puts_a_rebased_commit_s_new_id_in_the_result_and_nothing_else(run_task):
    ok(run_task("create", "a", "A"))
    fails(run_task("_recommit", "a", OLD, NEW), 1, "Error: task 'a' is not done (status: open)\n")
    fails(run_task("_recommit", "ghost", OLD, NEW), 2, "Error: task 'ghost' not found\n")
    fails(run_task("_recommit", "a", OLD), 1, "Error: missing argument\nUsage: ralph task "
                                               "_recommit <id> <old-commit> <new-commit>\n")
    fails(run_task("_recommit", "a", OLD, "abc"), 1, "Error: not a full commit id: abc\nUsage: "
                                                     "ralph task _recommit <id> <old-commit> "
                                                     "<new-commit>\n")
    ok(run_task("claim", "a", "--agent", "ag"))
    ok(run_task("done", "a", "--result", '{"tests": "abc1234",  "commit" : "abc1234", "n": 1}'))
    before = json.loads(ok(run_task("_export-json")))
    assert ok(run_task("_recommit", "a", NEW, OLD)) == "unchanged a\n"    # names another one
    assert json.loads(ok(run_task("_export-json"))) == before
    assert ok(run_task("_recommit", "a", OLD, NEW)) == "recommitted a\n"
    after = json.loads(ok(run_task("_export-json")))
    # the abbreviation the agent wrote becomes the new full id; every other byte stays
    assert after == {**before, "result": f'{{"tests": "abc1234",  "commit" : "{NEW}", "n": 1}}'}
    assert ok(run_task("_recommit", "a", OLD, NEW)) == "unchanged a\n"    # done already


def test_recommit_reads_its_task_once(run_task, db, git_repo):
    ok(run_task("create", "a", "A"))
    ok(run_task("claim", "a", "--agent", "ag"))
    ok(run_task("done", "a", "--result", '{"commit": "abc1234"}'))
    with traced(db) as (conn, scope, sent):
        ctx = Ctx(conn, scope, {}, str(git_repo), io.StringIO())
        assert run_edits.recommit(ctx, ["a", OLD, NEW]) == "recommitted a\n"
    assert on_tasks(sent) == ["SELECT", "UPDATE"]
    assert query(db, "SELECT result FROM tasks") == [(f'{{"commit": "{NEW}"}}',)]


def test_reopen_sends_a_done_task_back_to_open_with_the_reason(run_task):
    ok(run_task("create", "a", "A"))
    fails(run_task("_reopen", "a", "--reason", "x"), 1, "Error: task 'a' is not done (status: open)\n")
    fails(run_task("_reopen", "ghost"), 2, "Error: task 'ghost' not found\n")
    ok(run_task("claim", "a", "--agent", "ag"))
    ok(run_task("done", "a", "--result", '{"commit": "abc"}'))
    assert ok(run_task("_reopen", "a", "--reason", "rebase conflicts in README.md")) == "reopened a\n"
    (task,) = [json.loads(line) for line in ok(run_task("_export-json")).splitlines()]
    assert (task["status"], task["assignee"], task["retry_count"], task["fail_reason"],
            task["result"]) == ("open", None, 1, "rebase conflicts in README.md", None)
    assert "## Task a" in ok(run_task("claim"))


def test_release_sends_an_active_task_back_to_open_without_counting_a_failure(run_task, db):
    """`_release` is `fail` for a session that was no attempt at its task (a usage limit, the
    run's own Ctrl+C): retry_count stays, the reason is kept for `show`."""
    ok(run_task("create", "a", "A"))
    ok(run_task("claim", "a", "--agent", "ag"))
    ok(run_task("fail", "a", "--reason", "tests failed"))            # one real failure
    ok(run_task("claim", "a", "--agent", "ag"))
    assert ok(run_task("_release", "a", "--reason", "usage limit: resets 5am")) == "released a\n"
    (task,) = [json.loads(line) for line in ok(run_task("_export-json")).splitlines()]
    assert (task["status"], task["assignee"], task["lease_expires_at"], task["retry_count"],
            task["fail_reason"]) == ("open", None, None, 1, "usage limit: resets 5am")
    shown = ok(run_task("show", "a"))
    assert "Retries:     1\n" in shown and "Fail reason: usage limit: resets 5am\n" in shown
    assert "## Task a" in ok(run_task("claim"))


def test_release_of_a_task_that_is_not_active_or_not_there_writes_nothing(run_task, db):
    ok(run_task("create", "a", "A"))
    ok(run_task("create", "d", "D"))
    ok(run_task("claim", "d", "--agent", "ag"))
    ok(run_task("done", "d", "--result", '{"commit": "abc"}'))
    before = dump(db)
    fails(run_task("_release", "a", "--reason", "x"), 1,
          "Error: task 'a' is not active (status: open)\n")
    fails(run_task("_release", "d", "--reason", "x"), 1,
          "Error: task 'd' is not active (status: done)\n")
    fails(run_task("_release", "ghost", "--reason", "x"), 2, "Error: task 'ghost' not found\n")
    fails(run_task("_release"), 1,
          'Error: missing task ID\nUsage: ralph task _release <id> [--reason "<text>"]\n')
    assert dump(db) == before


def test_a_sessions_release_of_a_task_another_agent_holds_is_refused(run_task, db, tmp_path):
    """As `fail`: a caller presenting a claims file (a session of a --parallel run) may give
    back only a task its own agent holds."""
    def session(agent: str) -> dict[str, str]:
        return {"RALPH_AGENT_ID": agent, "RALPH_CLAIMS_FILE": str(tmp_path / f"claims-{agent}")}

    ok(run_task("create", "a", "A"))
    ok(run_task("claim", "a", env=session("one")))
    before = dump(db)
    fails(run_task("_release", "a", "--reason", "x", env=session("two")), 1,
          "Error: task 'a' is held by agent 'one', not by this session's agent 'two': "
          "nothing written\n")
    assert dump(db) == before
    assert ok(run_task("_release", "a", "--reason", "x", env=session("one"))) == "released a\n"

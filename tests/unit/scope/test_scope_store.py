"""The per-session check after a session wrote the task database (speed: a status
change is not a scope change): the store's fingerprint (lib/ralphpy/tasks/fingerprint.py)
keeps the last listing when only statuses moved, and any definition change by any writer is
still caught. Real SQLite files; status writes through the real task CLI (in-process, as
ralph.py calls it), definition edits with sqlite3 directly, as a user would make them."""
from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest

from ralphpy.runs import state as run_state
from ralphpy.scope import freeze
from ralphpy.backlog import calls as backlog_calls
from ralphpy.scope.cache import ListingCache
from ralphpy.tasks import cli
from ralphpy.tasks import fingerprint

ROOT = Path(__file__).resolve().parents[3]
PLAN = [
    {"id": "t-1", "t": "First", "d": "The first part", "p": 1, "spec": "specs/feature.md",
     "steps": ["write the test", "make it pass"]},
    {"id": "t-2", "t": "Second", "p": 2, "deps": ["t-1"]},
    {"id": "t-3", "t": "Third", "p": 3},
]


class Store:
    """A frozen run over PLAN: check() runs the per-session check as ralph.py does."""

    def __init__(self, repo: Path, env: dict[str, str], task: backlog_calls.TaskCommand) -> None:
        self.repo, self.env, self.task = repo, env, task
        self.db = str(repo / ".ralph" / "tasks.db")
        state = run_state.RunState(run_state.new_run_id(), "build", 0)
        self.freeze = freeze.start(task, env, repo / ".ralph", state, repo,
                                      stop_on_change=False)

    def check(self, task: backlog_calls.TaskCommand | None = None) -> freeze.Check:
        return freeze.check(self.freeze, task or self.task, self.env)

    def cli(self, *argv: str, stdin: str = "") -> str:
        out, err = io.StringIO(), io.StringIO()
        rc = cli.main(list(argv), stdin=io.StringIO(stdin), stdout=out, stderr=err,
                      environ=self.env)
        assert rc == 0, err.getvalue()
        return out.getvalue()

    def finish(self, slug: str) -> None:
        """What a session does: claim the task, then mark it done (status columns only)."""
        self.cli("claim", slug)
        self.cli("done", slug, "--result", '{"commit": "abc"}')

    def sql(self, statement: str, *params: object) -> None:
        """A user editing the database with sqlite3: updated_at is left alone."""
        conn = sqlite3.connect(self.db, isolation_level=None)
        try:
            conn.execute(statement, params)
        finally:
            conn.close()


@pytest.fixture
def store(git_repo: Path, base_env: dict[str, str], monkeypatch) -> Store:
    monkeypatch.chdir(git_repo)                 # the embedded task CLI works in the cwd
    env = {**base_env, "RALPH_AGENT_ID": "agent-1"}
    scope = dict(line.split(":", 1) for line in io.StringIO(_cli_out(["_get-scope"], env)))
    env.update({"RALPH_SCOPE_REPO": scope["repo"].strip(),
                "RALPH_SCOPE_BRANCH": scope["branch"].strip()})
    _cli_out(["plan-sync"], env, "".join(json.dumps(t) + "\n" for t in PLAN))
    task = backlog_calls.resolve(ROOT, env)
    assert task.embedded
    made = Store(git_repo, env, task)
    first = made.check()                        # the freeze's own listing, paired with the store
    assert first.report is not None and not first.report.changed
    return made


def _cli_out(argv: list[str], env: dict[str, str], stdin: str = "") -> str:
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(argv, stdin=io.StringIO(stdin), stdout=out, stderr=err, environ=env) == 0, \
        err.getvalue()
    return out.getvalue()


def test_a_status_only_write_keeps_the_listing_and_the_target_follows_the_fresh_statuses(
        store):
    for slug in ("t-1", "t-2"):
        store.finish(slug)
        found = store.check()
        assert found.listing_reused and found.statuses_refreshed
        assert not found.report.changed and found.new_lines == []
        assert not found.target_done
    store.cli("claim", "t-3")
    store.cli("fail", "t-3", "--reason", "flaky")        # back to open: still not done
    assert not store.check().target_done
    store.finish("t-3")                                   # the last frozen task is done
    last = store.check()
    assert last.listing_reused and last.statuses_refreshed
    assert not last.report.changed and last.target_done


EDITS = {
    "title": ("UPDATE tasks SET title = 'Renamed' WHERE slug = 't-1'", "definition"),
    "description": ("UPDATE tasks SET description = 'Other' WHERE slug = 't-1'", "definition"),
    "steps": ("UPDATE tasks SET steps = '[\"write the test\"]' WHERE slug = 't-1'",
              "definition"),
    "priority": ("UPDATE tasks SET priority = 7 WHERE slug = 't-1'", "definition"),
    "deps-added": ("INSERT INTO task_deps (task_id, blocked_by) SELECT a.id, b.id FROM "
                   "tasks a, tasks b WHERE a.slug = 't-1' AND b.slug = 't-3'", "definition"),
    "deps-changed": ("UPDATE task_deps SET blocked_by = (SELECT id FROM tasks WHERE slug = "
                     "'t-3')", "blocker"),          # same number of rows: t-2 now waits on t-3
    "blocker-renamed": ("UPDATE tasks SET slug = 't-0' WHERE slug = 't-1'", "renamed"),
    "spec": ("UPDATE tasks SET spec_ref = 'specs/other.md' WHERE slug = 't-1'", "spec"),
    "deleted": ("UPDATE tasks SET status = 'deleted' WHERE slug = 't-3'", "removed"),
    "added": ("INSERT INTO tasks (id, slug, scope_repo, scope_branch, title) SELECT 'x-9', "
              "'t-9', scope_repo, scope_branch, 'Sneaked in' FROM tasks WHERE slug = 't-1'",
              "added"),
}


@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
def test_a_definition_edited_with_sqlite3_after_a_status_write_is_still_detected(store, edit):
    statement, kind = edit
    store.finish("t-1")
    assert store.check().statuses_refreshed
    store.sql(statement)
    found = store.check()
    assert not found.listing_reused and not found.statuses_refreshed
    report = found.report
    expected = {
        "definition": (report.definition_modified, ["t-1"]),
        "blocker": (report.definition_modified, ["t-2"]),
        "renamed": ((report.added, report.removed, report.definition_modified),
                    (["t-0"], ["t-1"], ["t-2"])),        # t-2's blocker slug moved too
        "spec": ([c.task_id for c in report.spec_modified], ["t-1"]),
        "removed": (report.removed, ["t-3"]),
        "added": (report.added, ["t-9"]),
    }[kind]
    assert expected[0] == expected[1], report.lines()
    store.cli("claim")                         # the next session claims whatever is first
    again = store.check()                      # the new listing is paired: statuses only
    assert again.listing_reused and again.statuses_refreshed
    assert again.report.lines() == report.lines()


def test_an_edit_reverted_later_is_reported_as_reverted(store):
    store.sql("UPDATE tasks SET title = 'Renamed' WHERE slug = 't-2'")
    assert store.check().report.definition_modified == ["t-2"]
    store.finish("t-1")
    assert store.check().statuses_refreshed
    store.sql("UPDATE tasks SET title = 'Second' WHERE slug = 't-2'")
    found = store.check()
    assert not found.listing_reused and not found.report.changed


def test_an_external_task_command_never_reads_the_store_fingerprint(store):
    external = backlog_calls.resolve(ROOT, {**store.env,
                                         "RALPH_TASK_CMD": str(ROOT / "scripts" / "task")})
    assert not external.embedded
    for slug in ("t-1", "t-2"):
        store.finish(slug)
        found = store.check(external)
        assert found.report is not None        # listed with `list --all --markdown`
        assert not found.listing_reused and not found.statuses_refreshed


def test_a_listing_raced_by_a_definition_write_is_not_paired_with_the_store(store):
    cache = ListingCache()
    calls = []

    def lister():                              # the listing, then a writer gets in first
        calls.append(1)
        tasks = freeze.list_tasks(store.task, store.env)
        store.sql("UPDATE tasks SET description = 'raced' WHERE slug = 't-3'")
        return tasks
    assert not cache.listing(store.env, True, lister).reused
    assert cache.digest is None                # the listing shows the old description
    store.finish("t-1")
    assert not cache.listing(store.env, True, lister).reused
    assert len(calls) == 2


def test_the_fingerprint_ignores_statuses_and_reads_committed_state_only(store):
    before = fingerprint.read(store.db, store.env["RALPH_SCOPE_REPO"],
                              store.env["RALPH_SCOPE_BRANCH"])
    assert before.statuses == {"t-1": "open", "t-2": "open", "t-3": "open"}
    store.finish("t-1")
    store.cli("_hold", "t-3", "--reason", "respawned without progress")
    writer = sqlite3.connect(store.db, isolation_level=None)
    try:                                       # an uncommitted edit never blocks nor shows
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("UPDATE tasks SET title = 'uncommitted' WHERE slug = 't-2'")
        during = fingerprint.read(store.db, store.env["RALPH_SCOPE_REPO"],
                                  store.env["RALPH_SCOPE_BRANCH"])
        writer.execute("COMMIT")
    finally:
        writer.close()
    assert during.digest == before.digest
    assert during.statuses == {"t-1": "done", "t-2": "open", "t-3": "open"}
    after = fingerprint.read(store.db, store.env["RALPH_SCOPE_REPO"],
                             store.env["RALPH_SCOPE_BRANCH"])
    assert after.digest != before.digest


def test_the_fingerprint_of_a_missing_or_foreign_database_is_none(tmp_path):
    (tmp_path / "other.db").write_bytes(b"not a database at all" * 100)
    assert fingerprint.read(str(tmp_path / "missing.db"), "acme/widgets", "main") is None
    assert fingerprint.read(str(tmp_path / "other.db"), "acme/widgets", "main") is None
    assert not (tmp_path / "missing.db").exists()


@pytest.mark.parametrize("first, second", [
    ("UPDATE tasks SET priority = 0.1 WHERE slug = 't-3'",
     "UPDATE tasks SET priority = 0.10000000000000002 WHERE slug = 't-3'"),
    ("INSERT INTO tasks (id, slug, scope_repo, scope_branch, title) VALUES "
     "('o-uuid', 'o-1', 'acme/other', 'main', 'Elsewhere'); INSERT INTO task_deps VALUES "
     "((SELECT id FROM tasks WHERE slug = 't-3'), 'o-uuid')",
     "UPDATE tasks SET slug = 'o-2' WHERE id = 'o-uuid'"),
], ids=["priority-17th-digit", "blocker-in-another-scope-renamed"])
def test_a_change_the_export_shows_but_a_short_digest_could_miss_is_detected(
        store, first, second):
    for statement in first.split("; "):
        store.sql(statement)
    found = store.check()
    assert found.report.definition_modified == ["t-3"], found.report.lines()
    store.finish("t-1")
    assert store.check().statuses_refreshed        # the edited listing is paired
    store.sql(second)
    found = store.check()
    assert not found.listing_reused
    assert found.report.definition_modified == ["t-3"]

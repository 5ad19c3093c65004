"""The inbox (seed 002 "Task Sourcing"): JSON tasks and .md directives imported into
the real backlog with `task create`, each file once, highest priority first; bad files are
reported and skipped."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ralphpy.assign import choice
from ralphpy.assign import inbox
from ralphpy.backlog import calls
from ralphpy.backlog.client import export_tasks

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def task_call(git_repo, base_env, monkeypatch):
    """The real task CLI, in process (fast); the stub agents use scripts/task as a process."""
    monkeypatch.chdir(git_repo)
    return calls.resolve(ROOT, base_env).bound(base_env)   # the loop's own call


@pytest.fixture
def inbox_dir(git_repo: Path) -> Path:
    path = git_repo / ".ralph" / "inbox"
    path.mkdir(parents=True)
    return path


def put(inbox_dir: Path, name: str, content) -> Path:
    path = inbox_dir / name
    if name.startswith("latin1"):
        path.write_bytes(content.encode("latin-1"))
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_inbox_tasks_are_claimed_highest_priority_first(inbox_dir, task_call):
    put(inbox_dir, "a-low.json", {"objective": "Tidy docs", "priority": "low"})
    put(inbox_dir, "b-critical.json", {"id": "fix/prod", "objective": "Fix prod outage",
                                       "priority": "critical"})
    put(inbox_dir, "c-high.md", "# Add metrics\nPriority: high\n\nExport counters.\n")
    put(inbox_dir, "d-default.json", {"title": "Medium by default"})
    report = inbox.import_inbox(inbox_dir, task_call)
    assert report.problems == []
    assert report.imported == ["fix/prod", "c-high", "d-default", "a-low"]
    claimed = [choice.claim_next(task_call).id for _ in range(4)]
    assert claimed == ["fix/prod", "c-high", "d-default", "a-low"]
    tasks = {t["id"]: t for t in export_tasks(task_call)}
    assert [tasks[i]["priority"] for i in claimed] == [0, 1, 2, 3]


def test_a_json_task_carries_why_criteria_and_deadline_into_the_anti_drift_block(
        inbox_dir, task_call, git_repo):
    put(inbox_dir, "post.json", {
        "objective": "Write the Ralph Loop post", "why_it_matters": "Customers ask for it",
        "success_criteria": ["Post is 800-1500 words", "Frontmatter matches template"],
        "deadline": "2026-12-01", "priority": 1, "spec": "specs/feature.md",
        "steps": ["draft", "review"]})
    inbox.import_inbox(inbox_dir, task_call)
    task = choice.claim_next(task_call, repo=git_repo)
    assert task.id == "post" and task.title == "Write the Ralph Loop post"
    assert task.why == "Customers ask for it"
    assert task.criteria == ["Post is 800-1500 words", "Frontmatter matches template"]
    assert "Deadline: 2026-12-01" in task.description
    assert task.steps == ["draft", "review"]
    assert task.source == "task post (spec specs/feature.md, ref inbox:post.json)"


def test_a_markdown_directive_takes_its_title_from_the_first_heading(inbox_dir, task_call):
    put(inbox_dir, "Rotate Keys!.md", "Preamble\n## Rotate the API keys\n\n- [ ] old keys revoked\n")
    report = inbox.import_inbox(inbox_dir, task_call)
    assert report.imported == ["rotate-keys"]
    task = choice.claim_next(task_call)
    assert task.title == "Rotate the API keys"
    assert task.criteria == ["old keys revoked"]
    assert task.description == "Preamble\n\n- [ ] old keys revoked"


def test_a_second_import_imports_nothing_new(inbox_dir, task_call):
    put(inbox_dir, "one.json", {"objective": "One"})
    assert inbox.import_inbox(inbox_dir, task_call).imported == ["one"]
    again = inbox.import_inbox(inbox_dir, task_call)
    assert again.imported == [] and again.problems == []
    put(inbox_dir, "two.md", "# Two\n")
    assert inbox.import_inbox(inbox_dir, task_call).imported == ["two"]
    assert [t["id"] for t in export_tasks(task_call)] == ["one", "two"]
    record = json.loads((inbox_dir / ".imported.json").read_text())
    assert record["one.json"]["outcome"] == "imported" and record["one.json"]["slugs"] == ["one"]
    assert len(record["two.md"]["sha256"]) == 64


@pytest.mark.parametrize("name, content, problem", [
    ("broken.json", "{not json", "inbox file broken.json: invalid JSON"),
    ("empty.json", {"priority": "high"},
     'inbox file empty.json: field "objective" (or "title") is missing or empty; skipped'),
    ("prio.json", {"objective": "X", "priority": "urgent"},
     "inbox file prio.json: priority must be critical, high, medium, low or a number >= 0, "
     "got: 'urgent'; skipped"),
    ("list.json", [1, 2],
     "inbox file list.json: expected a JSON object or a non-empty array of objects; skipped"),
    ("steps.json", {"objective": "X", "steps": "do it"},
     'inbox file steps.json: field "steps" must be an array of strings; skipped'),
    ("blank.md", "  \n", "inbox file blank.md: empty directive; skipped"),
    ("latin1.md", "caf\xe9", "inbox file latin1.md: not UTF-8 text; skipped"),
], ids=["invalid-json", "no-objective", "bad-priority", "not-objects", "bad-steps", "empty-md",
        "not-utf8"])
def test_a_bad_file_is_reported_once_and_the_others_are_imported(
        inbox_dir, task_call, name, content, problem):
    put(inbox_dir, name, content)
    put(inbox_dir, "good.json", {"objective": "Good"})
    report = inbox.import_inbox(inbox_dir, task_call)
    assert report.imported == ["good"]
    assert len(report.problems) == 1 and report.problems[0].startswith(problem)
    assert inbox.import_inbox(inbox_dir, task_call).problems == []   # reported once


def test_an_edited_bad_file_is_tried_again(inbox_dir, task_call):
    put(inbox_dir, "late.json", "{")
    assert inbox.import_inbox(inbox_dir, task_call).problems
    put(inbox_dir, "late.json", {"objective": "Fixed now"})
    assert inbox.import_inbox(inbox_dir, task_call).imported == ["late"]


def test_an_id_that_already_exists_is_reported_and_the_task_left_alone(
        inbox_dir, task_call, run_task):
    assert run_task("create", "dup", "Original").returncode == 0
    put(inbox_dir, "x.json", {"id": "dup", "objective": "Replacement"})
    report = inbox.import_inbox(inbox_dir, task_call)
    assert report.imported == []
    assert report.problems == ["inbox file x.json: task create dup failed "
                               "(does the id already exist?); skipped"]
    assert [t["title"] for t in export_tasks(task_call)] == ["Original"]


def test_a_json_array_gives_one_task_per_object(inbox_dir, task_call):
    put(inbox_dir, "batch.json", [{"objective": "A"}, {"id": "named", "objective": "B"}])
    assert inbox.import_inbox(inbox_dir, task_call).imported == ["batch-1", "named"]


def test_a_missing_inbox_folder_imports_nothing(tmp_path, task_call):
    report = inbox.import_inbox(tmp_path / "nope", task_call)
    assert report.imported == [] and report.problems == []


def test_other_files_and_dotfiles_in_the_inbox_are_ignored(inbox_dir, task_call):
    put(inbox_dir, "notes.txt", "ignore me")
    put(inbox_dir, ".hidden.json", {"objective": "hidden"})
    (inbox_dir / "imported").mkdir()
    assert inbox.import_inbox(inbox_dir, task_call).imported == []


def test_an_array_with_one_existing_id_imports_the_rest_and_is_recorded_as_partial(
        inbox_dir, task_call, run_task):
    run_task("create", "taken", "Already here", "-p", "0")
    put(inbox_dir, "mix.json", [{"id": "taken", "objective": "X", "priority": "critical"},
                                {"id": "fresh", "objective": "Y", "priority": "low"}])
    report = inbox.import_inbox(inbox_dir, task_call)
    assert report.imported == ["fresh"] and len(report.problems) == 1
    entry = json.loads((inbox_dir / ".imported.json").read_text())["mix.json"]
    assert (entry["outcome"], entry["slugs"]) == ("partial", ["fresh"])

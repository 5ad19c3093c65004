"""Assignment mode's choice and prompt: priority words, the claim through a real
task CLI (own and external-style), why / criteria / source, and the anti-drift template."""
from __future__ import annotations

from pathlib import Path

import pytest

from ralphpy.assign import choice
from ralphpy.errors import UsageError
from ralphpy.backlog import calls
from ralphpy.backlog.answers import parse_export, parse_markdown_kv, parse_show

ROOT = Path(__file__).resolve().parents[3]
TASK = ROOT / "scripts" / "task"


@pytest.fixture
def task_call(git_repo, base_env, monkeypatch):
    """The real task CLI, in process (fast); the stub agents use scripts/task as a process."""
    monkeypatch.chdir(git_repo)
    return calls.resolve(ROOT, base_env).bound(base_env)   # the loop's own call


@pytest.fixture
def process_task_call(git_repo, base_env, monkeypatch):
    """scripts/task as a process, as with RALPH_TASK_CMD (the loop's subprocess call)."""
    monkeypatch.chdir(git_repo)
    command = calls.resolve(ROOT, {**base_env, "RALPH_TASK_CMD": str(TASK)})
    assert not command.embedded
    return command.bound(base_env)


@pytest.fixture
def external_task_call(task_call):
    """A task CLI without ralph.py's `_export-json` extension (like ralph.sh's)."""
    def call(argv):
        return (False, "") if argv[:1] == ["_export-json"] else task_call(argv)
    return call


DESCRIPTION = ("Add a /health endpoint.\n\n## Why\nThe load balancer needs it\nto drain nodes.\n\n"
               "- [ ] GET /health returns 200\n- [ ] The handler must not touch the database\n")


@pytest.mark.parametrize("value, number", [
    ("critical", 0), ("HIGH", 1), (" medium ", 2), ("low", 3), (0, 0), (7, 7), ("4", 4),
], ids=["critical", "high-any-case", "medium-spaces", "low", "zero", "int", "digits"])
def test_criticality_words_map_onto_store_priorities(value, number):
    assert choice.parse_priority(value) == number


@pytest.mark.parametrize("value", ["urgent", -1, 1.5, True, None, ""],
                         ids=["unknown-word", "negative", "float", "bool", "null", "empty"])
def test_a_bad_priority_is_refused_with_its_value(value):
    with pytest.raises(ValueError, match="priority must be critical, high, medium, low"):
        choice.parse_priority(value)


@pytest.mark.parametrize("number, word", [(0, "critical"), (1, "high"), (2, "medium"),
                                          (3, "low"), (9, "low")],
                         ids=["0", "1", "2", "3", "above-3"])
def test_priority_numbers_read_as_words(number, word):
    assert choice.priority_word(number) == word


@pytest.mark.parametrize("caller", ["task_call", "process_task_call", "external_task_call"],
                         ids=["in-process", "process", "show-fallback"])
def test_the_highest_priority_task_is_claimed_and_read_fully(request, run_task, git_repo, caller):
    call = request.getfixturevalue(caller)
    run_task("create", "docs", "Docs", "-p", "3")
    run_task("create", "web/health", "Health endpoint", "-p", "1", "-d", DESCRIPTION,
             "-r", "specs/feature.md", "-s", '["write handler","add test"]')
    task = choice.claim_next(call, agent="a1b2", lease=900, repo=git_repo)
    assert (task.id, task.title, task.priority, task.status) == (
        "web/health", "Health endpoint", 1, "active")
    assert task.description.rstrip("\n") == DESCRIPTION.rstrip("\n")
    assert task.why == "The load balancer needs it to drain nodes."
    assert task.criteria == ["GET /health returns 200",
                             "The handler must not touch the database"]
    assert task.steps == ["write handler", "add test"]
    assert task.source == "task web/health (spec specs/feature.md)"
    shown = run_task("show", "web/health").stdout
    assert "Assignee:    a1b2" in shown and "Status:      active" in shown


def test_a_task_without_criteria_falls_back_to_its_spec_file(run_task, task_call, git_repo):
    run_task("create", "f1", "Feature", "-r", "specs/feature.md")
    assert choice.claim_next(task_call, repo=git_repo).criteria == ["it works"]


def test_a_failed_task_shows_its_last_fail_reason(run_task, task_call):
    run_task("create", "t1", "Retry me")
    run_task("claim")
    run_task("fail", "t1", "--reason", "tests were red")
    task = choice.claim_next(task_call)
    assert task.fail_reason == "tests were red" and task.retry_count == 1


def test_an_empty_backlog_claims_nothing(task_call):
    assert choice.claim_next(task_call) is None


def test_a_targeted_claim_takes_that_task(run_task, task_call):
    run_task("create", "first", "First", "-p", "0")
    run_task("create", "second", "Second", "-p", "3")
    assert choice.claim_next(task_call, target="second").id == "second"
    assert choice.claim_next(task_call, target="second") is None


@pytest.mark.parametrize("description, why", [
    ("Why: users lose data\nsecond line\n\nrest", "users lose data second line"),
    ("**Why it matters:** money", "money"),
    ("## Why it matters\n\nCompliance deadline.\n## Next", "Compliance deadline."),
    ("Why\nnot a label", ""),
    ("Why not use SQLite?", ""),
    ("Why - speed", "speed"),
    ("No reason given", ""),
], ids=["label", "bold-label", "heading", "bare-word", "question", "dash", "absent"])
def test_why_it_matters_is_read_from_the_description(description, why):
    assert choice.extract_why(description) == why


def sample_task(**overrides) -> choice.AssignedTask:
    fields = dict(id="web/01", title="Add login", priority=1, why="Users asked",
                  criteria=["form validates", "tests pass"], source="task web/01 (spec s.md)",
                  steps=["a", "b"], description="Details here")
    fields.update(overrides)
    return choice.AssignedTask(**fields)


def test_the_default_block_names_the_task_and_forbids_unrelated_work():
    block = choice.render_block(sample_task(), choice.load_template(),
                                    task_cmd="ralph task", current_task_file=".ralph/current-task.json")
    lines = block.splitlines()
    assert lines[1] == "CURRENT TASK (Ralph Loop — Anti-Drift)"
    assert "Task: web/01 (priority 1, high)" in lines
    assert "Objective: Add login" in lines and "Why it matters: Users asked" in lines
    index = lines.index("Acceptance Criteria:")
    assert lines[index + 1:index + 3] == ["- form validates", "- tests pass"]
    assert "Source: task web/01 (spec s.md)" in lines
    assert "IMPORTANT: Complete THIS task before starting anything else." in lines
    assert ("- ralph task done web/01 --result '{\"commit\": \"<sha>\", \"verification_notes\": "
            "\"<how each criterion was met>\", \"artifacts\": [\"<files changed, commits made>\"]}'"
            ) in lines
    assert "- update .ralph/current-task.json: set \"status\" to \"completed\", add \"verification_notes\"" in lines
    assert "Do NOT start unrelated work (tests for other modules, refactoring, etc.)" in lines
    assert not any(line != line.rstrip() for line in lines)


def test_lines_whose_placeholders_are_all_empty_are_dropped():
    block = choice.render_block(sample_task(why="", steps=[], description=""),
                                    choice.load_template())
    assert "Why it matters" not in block and "Steps:" not in block and "Details:" not in block
    assert "Previous attempt failed" not in block
    assert "Task: web/01 (priority 1, high)" in block


def test_a_custom_template_gets_simple_substitution(tmp_path):
    path = tmp_path / "mine.md"
    path.write_text("Do {id}: {objective} {unknown}!\nJSON {\"k\": {id}} stays\nx{why}\nC:{criteria}\n")
    block = choice.render_block(sample_task(why=""), choice.load_template(path))
    assert block == 'Do web/01: Add login !\nJSON {"k": web/01} stays\nC:\n- form validates\n- tests pass'


def test_a_value_with_braces_is_not_substituted_again():
    block = choice.render_block(sample_task(title="use {id} literally"), "{objective}")
    assert block == "use {id} literally"


def test_an_unreadable_template_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match=r"assignment prompt template .*nope.md cannot be read"):
        choice.load_template(tmp_path / "nope.md")


def test_the_session_prompt_runs_the_build_skill_with_the_block():
    assert choice.session_prompt("BLOCK\nline") == "/ralph-build BLOCK\nline"


def test_claim_output_parses_every_markdown_kv_field():
    text = ("## Task web/01\nid: web/01\ntitle: T: with colon\npriority: 0\nstatus: active\n"
            "assignee: a1\nretry_count: 2\ndeps: a, b\nsteps:\n- one\n- two\n"
            "blocker_results:\n- a: {\"commit\":\"abc\"}\n\n## Task x\nid: x\ntitle: X")
    first, second = parse_markdown_kv(text)
    assert first == {"id": "web/01", "title": "T: with colon", "priority": 0, "status": "active",
                     "assignee": "a1", "retry_count": 2, "deps": ["a", "b"],
                     "steps": ["one", "two"], "blocker_results": {"a": '{"commit":"abc"}'}}
    assert second == {"id": "x", "title": "X"}


def test_show_output_parses_a_multi_line_description():
    text = ("ID:          t\nTitle:       T\nStatus:      open\nPriority:    2\n"
            "Description: line one\n\nNote: not a label\nRetries:     3\n"
            "Fail reason: flaky\nCreated:     2026-01-01 00:00:00\n\nSteps:\n  1. a. b\n"
            "\nDependencies:\n  dep/1 (done)")
    record = parse_show(text)
    assert record["description"] == "line one\n\nNote: not a label"
    assert record["retry_count"] == 3 and record["priority"] == 2
    assert record["fail_reason"] == "flaky"
    assert record["steps"] == ["a. b"] and record["deps"] == ["dep/1"]


@pytest.mark.parametrize("description", [
    "Add a route.\n\nWhy it matters: drains nodes\nfor real\n\nAcceptance criteria:\n"
    "- [ ] returns 200\n\nDeadline: 2026-12-01",
    "Add a route.\n\n## Why\n\ndrains nodes for real\n\n- [ ] returns 200\n\nDeadline: 2026-12-01",
], ids=["label", "heading"])
def test_details_leave_out_what_the_block_already_shows(description):
    task = choice.build_task({"id": "r", "title": "Route", "description": description})
    assert task.why.startswith("drains nodes") and task.criteria == ["returns 200"]
    block = choice.render_block(task, "Details:{details}")
    assert block == "Details:\nAdd a route.\n\nDeadline: 2026-12-01"


def test_a_spec_path_outside_the_repository_is_not_read(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (tmp_path / "secret.md").write_text("- [ ] leaked line\n")
    task = choice.build_task({"id": "x", "spec": "../secret.md"}, repo)
    assert task.criteria == ["Complete the assigned task"]
    assert task.source == "task x (spec ../secret.md)"


def test_an_export_listing_keeps_a_unicode_line_separator_inside_a_task(run_task):
    # The real task CLI's `_export-json`, read by the one parser every caller uses.
    assert run_task("create", "t-1", "Line\u2028separated", "-d", "a\u2029b").returncode == 0
    tasks = parse_export(run_task("_export-json").stdout)
    assert [(t["id"], t["title"], t["description"]) for t in tasks] == [
        ("t-1", "Line\u2028separated", "a\u2029b")]
    assert parse_export('{"id": "x"}\nnot json\n') is None

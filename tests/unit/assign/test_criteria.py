"""Acceptance-criteria extraction (seed 002): checkboxes, "criteria"/"must" lines,
at most five, a default, and the task's own text before its spec file."""
from __future__ import annotations

from pathlib import Path

import pytest

from ralphpy.assign.criteria import DEFAULT_CRITERIA, extract_criteria, task_criteria


@pytest.mark.parametrize("line, expected", [
    ("- [ ] returns 404 for unknown ids", "returns 404 for unknown ids"),
    ("* [ ] logs the request", "logs the request"),
    ("   - [ ] indented checkbox counts", "indented checkbox counts"),
    ("The endpoint must reject empty bodies", "The endpoint must reject empty bodies"),
    ("- MUST keep the old flag", "MUST keep the old flag"),
    ("Success criteria: p95 under 200 ms", "Success criteria: p95 under 200 ms"),
], ids=["dash-checkbox", "star-checkbox", "indented", "must", "must-uppercase-bullet",
        "criteria-with-text"])
def test_a_criterion_line_is_extracted_without_its_bullet(line, expected):
    assert extract_criteria(f"Intro text\n{line}\nmore text") == [expected]


@pytest.mark.parametrize("line", [
    "## Acceptance criteria", "Acceptance Criteria:", "- [x] must already be done",
    "Mustard is a condiment", "plain text without keywords", "- [] not a checkbox",
], ids=["heading", "label", "checked-box", "must-inside-a-word", "plain", "malformed-box"])
def test_a_line_that_is_not_a_criterion_is_ignored(line):
    assert extract_criteria(line) == []


def test_at_most_five_criteria_are_kept_in_text_order():
    text = "\n".join(f"- [ ] item {n}" for n in range(1, 9))
    assert extract_criteria(text) == [f"item {n}" for n in range(1, 6)]


def test_checkboxes_come_before_keyword_lines_and_duplicates_are_dropped():
    text = ("The API must stay backwards compatible\n- [ ] first box\n- [ ] first box\n"
            "* [ ] second box\n")
    assert extract_criteria(text) == ["first box", "second box",
                                      "The API must stay backwards compatible"]


def test_a_task_without_criteria_gets_the_default():
    assert task_criteria("Just do the thing", ["write code"]) == list(DEFAULT_CRITERIA)
    assert DEFAULT_CRITERIA == ("Complete the assigned task",)


def test_steps_are_searched_after_the_description():
    found = task_criteria("- [ ] from the description", ["the step must pass lint"])
    assert found == ["from the description", "the step must pass lint"]


def test_the_spec_file_is_used_only_when_the_task_text_has_no_criteria(tmp_path: Path):
    spec = tmp_path / "spec.md"
    spec.write_text("# Spec\n- [ ] spec box one\n- [ ] spec box two\n")
    assert task_criteria("nothing to check here", None, spec) == ["spec box one", "spec box two"]
    assert task_criteria("- [ ] own box", None, spec) == ["own box"]


def test_a_missing_spec_file_gives_the_default(tmp_path: Path):
    assert task_criteria("", None, tmp_path / "nope.md") == list(DEFAULT_CRITERIA)

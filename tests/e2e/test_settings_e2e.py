"""Black-box tests of the settings: one duration grammar on the command line and in ralph.yml
(a run persists what it was given), and a bad duration refused before anything is written."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import treehash
from conftest import install_stub


def persisted_options(repo: Path) -> dict:
    (state,) = (repo / ".ralph" / "runs").glob("*/state.json")
    return json.loads(state.read_text())["options"]


@pytest.mark.parametrize("where", ["flag", "ralph.yml"])
@pytest.mark.parametrize("text", ["1h 30m", "1h30m", "5400", "90 m"], ids=repr)
def test_a_duration_reads_the_same_on_the_command_line_and_in_ralph_yml(
        git_repo, run_ralph, bin_dir, where, text):
    install_stub(bin_dir)
    if where == "flag":
        result = run_ralph("build", "--max-runtime", text)
    else:
        (git_repo / "ralph.yml").write_text(f"max_runtime: {text}\n")
        result = run_ralph("build")
    assert (result.returncode, result.stderr) == (0, "")
    assert "\nNo tasks available. Exiting loop.\n" in result.stdout
    assert persisted_options(git_repo) == {"max_runtime": 5400.0}


@pytest.mark.parametrize("where,message", [
    ("flag", "Error: --max-runtime requires a duration (e.g. 90s, 15m, 1h)"),
    ("ralph.yml", "Error: ralph.yml: max_runtime must be a duration (seconds, or like 30s, "
                  "15m, 1h), got '1h 30'"),
])
def test_a_unit_less_number_after_a_part_is_refused_before_any_write(
        git_repo, run_ralph, bin_dir, where, message):
    install_stub(bin_dir)
    if where == "flag":
        args = ("--max-runtime", "1h 30")
    else:
        (git_repo / "ralph.yml").write_text("max_runtime: 1h 30\n")
        args = ()
    before = treehash.snapshot(git_repo)
    result = run_ralph("build", *args)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", message + "\n")
    assert treehash.diff(before, treehash.snapshot(git_repo)) == []


@pytest.mark.parametrize("args,message", [
    (("--max-runtime", "0"), "Error: --max-runtime must be greater than 0, got 0"),
    (("--max-runtime", "0m"), "Error: --max-runtime must be greater than 0, got 0"),
    (("--max-cost", "0.00"), "Error: --max-cost must be greater than 0, got 0"),
], ids=["0", "0m", "0.00"])
def test_a_zero_limit_on_the_command_line_is_shown_as_given_not_as_a_float(
        git_repo, run_ralph, bin_dir, args, message):
    install_stub(bin_dir)
    before = treehash.snapshot(git_repo)
    result = run_ralph("build", *args)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", message + "\n")
    assert treehash.diff(before, treehash.snapshot(git_repo)) == []


def test_plan_minus_n_0_is_the_one_error_even_with_a_bad_ralph_yml(git_repo, run_ralph, bin_dir):
    # docs/contract/ralph-cli.md s.3: a flag error stops ralph.py before anything else, ralph.yml's
    # checks included.
    install_stub(bin_dir)
    (git_repo / "ralph.yml").write_text("max_runtime: bogus\n")
    result = run_ralph("plan", "-n", "0")
    assert result.returncode == 1
    assert result.stderr == "Error: plan mode requires at least 1 iteration (-n 0 is not allowed)\n"
    assert not (git_repo / ".ralph").exists()

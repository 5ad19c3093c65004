"""Black-box tests of `--dry-run` (prints the run, the task data, the prompt and the
agent argv; writes nothing at all, checked with a hash of the whole tree) and of ralph.yml
(precedence CLI > environment > ralph.yml > defaults, validation before any write)."""
from __future__ import annotations

import json
import shlex

import pytest

import treehash
from conftest import install_stub

RULE = "\u2501" * 40


def sync(run_task, *slugs: str) -> None:
    lines = "".join(json.dumps({"id": s, "t": f"Task {s}"}) + "\n" for s in slugs)
    assert run_task("plan-sync", input=lines).returncode == 0


@pytest.mark.parametrize("with_backlog", [True, False], ids=["backlog", "no-database-yet"])
def test_dry_run_prints_peek_prompt_and_argv_and_writes_nothing(git_repo, run_ralph, run_task,
                                                               bin_dir, with_backlog):
    install_stub(bin_dir)
    if with_backlog:
        sync(run_task, "alpha", "beta")
    before = treehash.snapshot(git_repo)

    result = run_ralph("build", "--dry-run", "-n", "2", "--danger", "-m", "sonnet")

    assert result.returncode == 0, result.stderr
    assert treehash.diff(before, treehash.snapshot(git_repo)) == []
    out = result.stdout
    assert out.startswith(RULE + "\nMode:   build\n") and "Max:    2 iterations\n" in out
    assert "Agent:" not in out                                    # no agent registered
    assert "Dry run: nothing is written" in out
    assert "Run: would start a new run" in out
    if with_backlog:
        peek = run_task("peek", "-n", "10").stdout.rstrip("\n")
        assert f"Task data (task peek -n 10, read-only):\n{peek}\n" in out
        prompt = f"/ralph-build {peek}"
    else:
        assert "Task data: none: " in out and "does not exist yet" in out
        assert not (git_repo / ".ralph").exists()
        prompt = "/ralph-build"
    argv = ["claude", "-p", prompt, "--output-format=stream-json", "--verbose",
            "--dangerously-skip-permissions", "--model", "sonnet"]
    assert out.endswith(f"Prompt:\n{prompt}\nAgent argv:\n{shlex.join(argv)}\n")


def test_dry_run_of_plan_mode_shows_the_whole_backlog_and_a_held_lock(git_repo, run_ralph,
                                                                       run_task, tmp_path):
    sync(run_task, "alpha")
    lock = git_repo / ".ralph" / "run.lock"
    lock.write_text(json.dumps({"runId": "20260101T000000Z-aaaaaa", "pid": 1,
                                "pidStartTime": None, "bootId": None,
                                "host": "elsewhere", "startedAt": "2026-01-01T00:00:00Z"}))
    before = treehash.snapshot(git_repo)
    result = run_ralph("plan", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert treehash.diff(before, treehash.snapshot(git_repo)) == []
    listing = run_task("list", "--all", "--markdown").stdout.rstrip("\n")
    assert f"(task list --all --markdown, read-only):\n{listing}\n" in result.stdout
    assert "Run: would be refused (exit 3): run lock held by pid 1 on host elsewhere" \
        in result.stdout


def test_new_flags_are_listed_just_before_help_in_the_mode_help(run_ralph):
    out = run_ralph("build", "--help").stdout
    # Other features' option lines may sit around these (docs/contract/ralph-cli.md s.4: all just
    # before `--help, -h`).
    assert out.endswith("  --help, -h                  Show this help\n")
    extra = out.split("  --danger                    Enable --dangerously-skip-permissions\n")[1]
    assert ("  --dry-run                   Show what would run; write nothing\n"
            "  --resume                    Continue the last unfinished run\n") in extra


@pytest.mark.parametrize("yml, args, expected", [
    ("max_iterations: 2\n", [], "Max:    2 iterations\n"),
    ("max_iterations: 2\n", ["-n", "1"], "Max:    1 iteration\n"),
    ("danger: yes\n", [], "Safe:   NO (--dangerously-skip-permissions)\n"),
    ("model: sonnet\n", ["-m", "haiku"], "Model:  haiku (haiku)\n"),
], ids=["file", "cli-over-file", "boolean", "cli-over-file-model"])
def test_ralph_yml_sets_flags_and_the_command_line_wins(git_repo, run_ralph, yml, args, expected):
    (git_repo / "ralph.yml").write_text(yml)
    result = run_ralph("build", "--dry-run", *args)
    assert result.returncode == 0, result.stderr
    assert expected in result.stdout


def test_environment_wins_over_ralph_yml_and_the_run_persists_the_merged_settings(
        git_repo, run_ralph, run_task):
    sync(run_task, "alpha")
    run_task("delete", "alpha")
    (git_repo / "ralph.yml").write_text("freeze_scope: true\nmax_cost: 20\n")
    result = run_ralph("build", env={"FREEZE_SCOPE": "0"})
    assert result.returncode == 0, result.stderr
    run_dir, = (git_repo / ".ralph" / "runs").iterdir()
    options = json.loads((run_dir / "state.json").read_text())["options"]
    assert options == {"freeze_scope": False, "max_cost": 20.0}


def test_ralph_yml_is_read_at_the_git_top_level_from_a_subdirectory(git_repo, run_ralph):
    (git_repo / "ralph.yml").write_text("max_iteration: 3\n")
    sub = git_repo / "sub"
    (sub / "specs").mkdir(parents=True)
    (sub / "specs" / "x.md").write_text("x\n")
    result = run_ralph("build", cwd=sub)
    assert result.returncode == 1
    assert "unknown key 'max_iteration' (did you mean 'max_iterations'?)" in result.stderr


def test_every_bad_setting_is_one_error_line_exit_1_and_nothing_is_written(git_repo, run_ralph):
    (git_repo / "ralph.yml").write_text("max_iteration: 3\nmax_cost: ten\ndanger: maybe\n")
    before = treehash.snapshot(git_repo)
    result = run_ralph("build", env={"FREEZE_SCOPE": "perhaps"})
    assert result.returncode == 1
    assert result.stdout == ""
    assert sorted(result.stderr.splitlines()) == sorted([
        "Error: ralph.yml: unknown key 'max_iteration' (did you mean 'max_iterations'?)",
        "Error: ralph.yml: max_cost must be a number, got 'ten'",
        "Error: ralph.yml: danger must be a boolean (1/0, true/false, yes/no), got 'maybe'",
        "Error: environment variable FREEZE_SCOPE must be a boolean (1/0, true/false, yes/no),"
        " got 'perhaps'",
    ])
    assert treehash.diff(before, treehash.snapshot(git_repo)) == []


@pytest.mark.parametrize("yml, line", [
    ("max_iterations: 0\n", "Error: plan mode requires at least 1 iteration (-n 0 is not allowed)"),
    ("- a\n- b\n", "Error: ralph.yml: the top level must be a mapping of settings "
                   "(key: value lines), got a list"),
    ("a: [\n", "Error: ralph.yml: invalid YAML"),
], ids=["plan-zero", "not-a-mapping", "bad-yaml"])
def test_ralph_yml_errors_stop_plan_mode_before_anything(git_repo, run_ralph, yml, line):
    (git_repo / "ralph.yml").write_text(yml)
    result = run_ralph("plan")
    assert result.returncode == 1
    assert result.stderr.startswith(line) and len(result.stderr.splitlines()) == 1
    assert not (git_repo / ".ralph").exists()


def test_flag_errors_keep_ralph_sh_messages_before_ralph_yml_is_read(git_repo, run_ralph):
    (git_repo / "ralph.yml").write_text("bogus: 1\n")
    result = run_ralph("build", "--dry-run=1")
    assert result.returncode == 1
    assert result.stderr == "Error: Unknown option '--dry-run=1'\nRun 'ralph build --help' for usage\n"

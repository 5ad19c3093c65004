"""Black-box: dispatch on the first argument, help texts byte for byte, every flag error with
its exit code (and nothing run or written), `ralph task` passthrough
(docs/contract/ralph-cli.md s.2-s.4)."""
from __future__ import annotations

import stat
from pathlib import Path

import pytest

from loophelp import agent, tasks  # noqa: F401  (fixtures)

GENERAL_HELP = """\
Usage: ralph <command> [options]

Commands:
  plan   Run the planner (study specs, create tasks)
  build  Run the builder (claim and implement tasks)
  task   Interact with the task backlog

Run 'ralph <command> --help' for command-specific options.
"""

PLAN_HELP = """\
Usage: ralph plan [options]

Options:
  --max-iterations N, -n N   Limit loop iterations
                             (default: 1)
  --model <alias>, -m <alias> Select model by alias (see models.json)
  --danger                    Enable --dangerously-skip-permissions
  --completion-promise TEXT   Stop early on <promise>TEXT</promise>
                              (default: COMPLETE)
  --help, -h                  Show this help
"""

BUILD_HELP = """\
Usage: ralph build [options]

Options:
  --max-iterations N, -n N   Limit loop iterations
                             (default: unlimited)
  --model <alias>, -m <alias> Select model by alias (see models.json)
  --danger                    Enable --dangerously-skip-permissions
  --help, -h                  Show this help
"""


HELP_TAIL = "  --help, -h                  Show this help\n"


def spec_help(out: str) -> str:
    """The mode help without the option lines later features add just before `--help, -h`
    (s.4 allows them; the spec's own lines never change). Each added line is an option line
    (`  --flag ...`) or its continuation (30 spaces), so anything else still fails."""
    lines = out.splitlines(keepends=True)
    try:
        end = lines.index(HELP_TAIL)
    except ValueError:
        return out
    start = next(i for i, line in enumerate(lines) if line.startswith("  --danger"))
    if lines[start + 1].startswith("  --completion-promise"):
        start += 2                         # plan mode's last spec option and its default line
    extra = lines[start + 1:end]
    assert all(line.startswith(("  --", " " * 30)) for line in extra), extra
    return "".join(lines[:start + 1] + lines[end:])


@pytest.mark.parametrize("args", [[], [""], ["--help"], ["-h"], ["--help", "bogus"]],
                         ids=["none", "empty", "--help", "-h", "help-then-junk"])
def test_general_help_is_printed_exactly_with_exit_0_and_one_stderr_line_points_to_ralph_help(
        run_ralph, args):
    proc = run_ralph(*args)
    assert (proc.returncode, proc.stdout) == (0, GENERAL_HELP)        # s.2, byte for byte
    assert len(proc.stderr.splitlines()) == 1                        # one line, naming the others
    assert proc.stderr.startswith("More commands (install, status, ctl, report")
    assert proc.stderr.endswith("): run 'ralph help'\n")


def test_ralph_help_lists_every_command_with_a_line_each_and_how_to_release_a_held_task(
        run_ralph):
    proc = run_ralph("help")
    assert (proc.returncode, proc.stderr) == (0, "")
    head, rest = proc.stdout.split("Commands:\n", 1)
    rows = rest.split("\n\n", 1)[0].splitlines()
    listed = {row.split()[0]: row.split(None, 1)[1:] for row in rows}
    assert set(listed) >= {"plan", "build", "task", "install", "status", "report", "ctl",
                           "help"}
    assert all(text for text in listed.values()), rows                 # a line each
    for name in listed:                                                 # each one dispatches
        assert "unknown command" not in run_ralph(name, "--help").stderr
    assert "Release it with: ralph task _unhold <id>\n" in proc.stdout


def test_ralph_help_with_a_command_shows_that_commands_help(run_ralph, tasks):
    proc = run_ralph("help", "build", env=tasks.env)
    assert (proc.returncode, spec_help(proc.stdout), proc.stderr) == (0, BUILD_HELP, "")


@pytest.mark.parametrize("args", [["bogus"], ["build", "plan"], ["help"]],
                         ids=["unknown", "two", "itself"])
def test_ralph_help_with_an_unknown_command_is_one_error_and_exit_1(run_ralph, args):
    proc = run_ralph("help", *args)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (f"Error: unknown command '{' '.join(args)}'\n"
                           "Run 'ralph help' for every command\n")


@pytest.mark.parametrize("arg", ["--plan", "-p", "--bogus", "bogus", "Plan", "--build"])
def test_unknown_first_argument_is_an_unknown_command(run_ralph, arg):
    proc = run_ralph(arg, "-n", "1")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == f"Error: unknown command '{arg}'\nRun 'ralph --help' for usage\n"


@pytest.mark.parametrize("mode,flag,text", [
    ("plan", "--help", PLAN_HELP), ("plan", "-h", PLAN_HELP),
    ("build", "--help", BUILD_HELP), ("build", "-h", BUILD_HELP),
], ids=["plan--help", "plan-h", "build--help", "build-h"])
def test_mode_help_is_printed_exactly_with_exit_0(run_ralph, tasks, mode, flag, text):
    proc = run_ralph(mode, flag, env=tasks.env)
    assert (proc.returncode, spec_help(proc.stdout), proc.stderr) == (0, text, "")
    assert tasks.calls() == []


def test_help_stops_parsing_so_later_bad_arguments_are_not_examined(run_ralph, tasks):
    proc = run_ralph("build", "-n", "2", "--help", "--bogus", "-n", "x", env=tasks.env)
    assert (proc.returncode, spec_help(proc.stdout)) == (0, BUILD_HELP)


def test_help_is_printed_even_without_specs(run_ralph, tasks, git_repo):
    (git_repo / "specs" / "feature.md").unlink()
    assert spec_help(run_ralph("plan", "-h", env=tasks.env).stdout) == PLAN_HELP


N_ERR = "Error: --max-iterations requires a number"
M_ERR = "Error: --model requires an alias (e.g. opus-4.5, sonnet, haiku)"
P_ERR = "Error: --completion-promise requires a text"
ZERO_ERR = "Error: plan mode requires at least 1 iteration (-n 0 is not allowed)"


def unknown(arg, mode):
    return f"Error: Unknown option '{arg}'\nRun 'ralph {mode} --help' for usage"


FLAG_ERRORS = [
    ("build", ["-n"], N_ERR), ("build", ["--max-iterations"], N_ERR),
    ("build", ["-n", ""], N_ERR), ("build", ["-n", "-1"], N_ERR), ("build", ["-n", "abc"], N_ERR),
    ("build", ["-n", "1.5"], N_ERR), ("build", ["-n", "+3"], N_ERR), ("build", ["-n", " 3"], N_ERR),
    ("plan", ["-n", "x"], N_ERR), ("build", ["-n", "--danger"], N_ERR),
    ("build", ["-m"], M_ERR), ("build", ["--model", ""], M_ERR), ("plan", ["-m", "-n"], M_ERR),
    ("plan", ["--completion-promise"], P_ERR), ("plan", ["--completion-promise", ""], P_ERR),
    ("plan", ["--completion-promise", "-x"], P_ERR),
    ("build", ["--completion-promise", "DONE"], unknown("--completion-promise", "build")),
    ("build", ["--max-iterations=3"], unknown("--max-iterations=3", "build")),
    ("plan", ["--bogus"], unknown("--bogus", "plan")), ("build", ["-x"], unknown("-x", "build")),
    ("build", ["extra"], unknown("extra", "build")), ("build", ["--plan"], unknown("--plan", "build")),
    ("plan", ["-n", "0"], ZERO_ERR), ("plan", ["--max-iterations", "00"], ZERO_ERR),
    ("plan", ["-n", "0", "--bogus"], unknown("--bogus", "plan")),
    ("plan", ["-n", "0", "-n", "x"], N_ERR),
    ("build", ["--danger", "-m", "sonnet", "-n", "2", "--oops"], unknown("--oops", "build")),
]


@pytest.mark.parametrize("mode,args,message", FLAG_ERRORS,
                         ids=[f"{m}:{' '.join(a) or 'none'}" for m, a, _ in FLAG_ERRORS])
def test_a_flag_error_prints_its_message_exits_1_and_runs_nothing(
        run_ralph, tasks, agent, git_repo, mode, args, message):
    proc = run_ralph(mode, *args, env={**tasks.env, **agent.env})
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", message + "\n")
    assert tasks.calls() == [] and agent.calls() == []
    assert not (git_repo / ".ralph").exists()


def test_build_accepts_n_0_as_unlimited_and_shows_no_max_line(run_ralph, tasks, agent):
    proc = run_ralph("build", "-n", "0", env={**tasks.env, **agent.env})
    assert proc.returncode == 0
    assert "Max:" not in proc.stdout and "No tasks available. Exiting loop." in proc.stdout


def test_a_flag_given_twice_keeps_its_last_value(run_ralph, tasks, agent):
    proc = run_ralph("plan", "-n", "5", "--max-iterations", "1", "-m", "a", "-m", "sonnet",
                     env={**tasks.env, **agent.env})
    assert "Max:    1 iteration\n" in proc.stdout
    assert "Model:  sonnet (sonnet)\n" in proc.stdout
    assert len(agent.calls()) == 1


def write_exe(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_ralph_task_runs_the_task_command_with_the_rest_and_its_streams_and_status(
        run_ralph, bin_dir, git_repo):
    (git_repo / "specs" / "feature.md").unlink()        # no preflight for `task`
    fake = write_exe(bin_dir / "mytask", '#!/bin/sh\nprintf "%s|" "$@"; cat; echo err >&2; exit 7\n')
    proc = run_ralph("task", "peek", "-n", "3", "--x", "a b", "$(x)", env={"RALPH_TASK_CMD": str(fake)},
                     input="from stdin")
    assert (proc.returncode, proc.stdout, proc.stderr) == (7, "peek|-n|3|--x|a b|$(x)|from stdin", "err\n")
    assert not (git_repo / ".ralph").exists()


def test_ralph_task_looks_a_command_without_slash_up_on_path(run_ralph, bin_dir):
    write_exe(bin_dir / "mytask", '#!/bin/sh\necho "ran $*"\n')
    proc = run_ralph("task", "plan-status", env={"RALPH_TASK_CMD": "mytask"})
    assert (proc.returncode, proc.stdout) == (0, "ran plan-status\n")


@pytest.mark.parametrize("value", ["/nonexistent/task", "no-such-task-cmd", "notexec"],
                         ids=["missing-path", "not-on-path", "not-executable"])
def test_ralph_task_with_a_task_command_that_cannot_run_exits_127_naming_it(
        run_ralph, bin_dir, value):
    if value == "notexec":
        (bin_dir / "notexec").write_text("#!/bin/sh\necho hi\n")
        value = str(bin_dir / "notexec")
    proc = run_ralph("task", "list", env={"RALPH_TASK_CMD": value})
    assert proc.returncode == 127
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and value in lines[0]


def test_ralph_task_with_the_stub_task_cli_passes_its_output_through(run_ralph, tasks):
    proc = run_ralph("task", "fail", "t-1", env=tasks.env)
    assert (proc.returncode, proc.stdout) == (0, "failed t-1\n")
    assert tasks.calls() == [["fail", "t-1"]]


def test_ralph_task_answers_from_the_store_the_tasks_setting_of_ralph_yml_names(
        run_ralph, run_task, git_repo, pg_url):
    created = run_task("create", "t-pg", "On the server", env={"RALPH_TASKS_DB": pg_url})
    assert created.returncode == 0, created.stderr
    (git_repo / "ralph.yml").write_text(f"tasks: {pg_url}\n")
    listed = run_ralph("task", "list", "--status", "open")
    assert (listed.returncode, listed.stderr) == (0, "")
    assert "t-pg" in listed.stdout
    # the environment wins over ralph.yml, as for a run
    local = run_ralph("task", "list", "--status", "open", env={"RALPH_TASKS": "sqlite"})
    assert (local.returncode, "t-pg" in local.stdout) == (0, False)


def test_a_typo_in_ralph_yml_that_ralph_task_does_not_use_leaves_it_working(
        run_ralph, run_task, git_repo):
    """`ralph task` reads one setting (`tasks`): a misspelt key or a bad value of another
    setting is the business of `ralph build`, which refuses it, not of the task CLI."""
    assert run_task("create", "t1", "First").returncode == 0
    (git_repo / "ralph.yml").write_text("modle: sonnet\nmax_cost: ten\n")
    listed = run_ralph("task", "list")
    assert (listed.returncode, listed.stderr) == (0, "")
    assert listed.stdout.splitlines()[1].startswith("t1 ")
    build = run_ralph("build", "-n", "1")
    assert (build.returncode, build.stdout) == (1, "")
    assert build.stderr == ("Error: ralph.yml: unknown key 'modle' (did you mean 'model'?)\n"
                            "Error: ralph.yml: max_cost must be a number, got 'ten'\n")


def test_ralph_task_refuses_a_bad_tasks_setting_in_ralph_yml_in_one_line_writing_nothing(
        run_ralph, git_repo):
    (git_repo / "ralph.yml").write_text("tasks: ftp://example.org/backlog\n")
    proc = run_ralph("task", "plan-status")
    assert proc.returncode == 1 and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith("Error: ")
    assert "ftp://example.org/backlog" in proc.stderr
    assert not (git_repo / ".ralph").exists()


def test_ralph_runs_through_a_chain_of_symlinks_and_exports_the_real_script_dir(
        tmp_path, bin_dir, base_env, git_repo, tasks, agent):
    import subprocess
    import sys
    from conftest import RALPH
    link1 = tmp_path / "link1.py"
    link1.symlink_to(RALPH)
    link2 = bin_dir / "ralph"
    link2.symlink_to(link1)
    proc = subprocess.run([sys.executable, str(link2), "plan"], cwd=git_repo, capture_output=True,
                          text=True, env={**base_env, **tasks.env, **agent.env}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert agent.calls()[0]["env"]["SCRIPT_DIR"] == str(RALPH.parent.resolve())


def test_an_empty_ralph_task_cmd_means_the_projects_own_task_cli(run_ralph):
    proc = run_ralph("task", "--help", env={"RALPH_TASK_CMD": ""})
    assert proc.returncode == 0 and proc.stdout.startswith("Usage: ralph task <command> [options]\n")


@pytest.mark.parametrize("script, module", [("ralph.py", "loop/features"),
                                            ("scripts/task", "sources/entry")])
def test_a_checkouts_bytecode_is_cached_even_under_pythondontwritebytecode(
        tmp_path, base_env, script, module):
    # containers often set it; compiling the package again at every start would double the
    # CPU of each `ralph status`, `ralph ctl` or task call (docs/decisions/0002)
    import shutil
    import subprocess
    import sys
    from conftest import ROOT
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "lib", checkout / "lib",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (checkout / "scripts").mkdir()
    for name in ("ralph.py", "scripts/task"):
        shutil.copy2(ROOT / name, checkout / name)
    env = {**base_env, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, str(checkout / script), "--help"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    tag = sys.implementation.cache_tag
    folder, name = module.rsplit("/", 1)
    assert (checkout / "lib" / "ralphpy" / folder / "__pycache__" / f"{name}.{tag}.pyc").exists()

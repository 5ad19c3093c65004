"""Black-box: the mistakes a newcomer makes stop `ralph plan|build` with one `Error:` line, a
code of the exit-code table and nothing written, before any session (docs/compatibility.md,
Preflight): an agent program that cannot run, a backlog that cannot be read, a PostgreSQL store
never reached; `./specs` asked of the built-in backlog only, from the repository's root; and
a checkout's ralph.py always running with its .venv (one `make setup` serves every feature)."""
from __future__ import annotations

import json
import socket
import sys
import sysconfig

import pytest

import treehash
from conftest import RALPH, ROOT, git, run_process
from loophelp import agent, tasks  # noqa: F401  (fixtures)
from sourcehelp import (TK, agent_env, claims, commit_all,  # noqa: F401 (fixtures)
                        flowctl_launcher, need, tool)

NO_SPECS = "Error: No specs found. Run /ralph-spec first to generate specs in ./specs/\n"


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on: bound, then let go."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def assert_one_error_and_nothing_written(proc, code: int, before, repo, line: str) -> None:
    assert (proc.returncode, proc.stdout) == (code, ""), proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [line]
    assert treehash.diff(before, treehash.snapshot(repo)) == []


# ---------------------------------------------------------------------------- the agent

@pytest.fixture
def one_task(run_task, git_repo):
    """One open task in the repository's backlog: a build run has a session to start."""
    made = run_task("create", "t-1", "One task")
    assert made.returncode == 0, made.stderr
    return git_repo


@pytest.mark.parametrize("mode", ["plan", "build"])
def test_an_agent_command_that_does_not_exist_stops_the_run_before_any_session(
        run_ralph, one_task, git_repo, mode):
    before = treehash.snapshot(git_repo)
    proc = run_ralph(mode, "-n", "3", "--agent", "command", "--agent-cmd", "/nope/agent {prompt}")
    assert_one_error_and_nothing_written(
        proc, 1, before, git_repo,
        "Error: cannot run the agent: '/nope/agent' does not exist; fix --agent-cmd")


def test_an_agent_program_that_is_not_executable_stops_the_run(run_ralph, one_task, git_repo,
                                                              bin_dir):
    (bin_dir / "myagent").write_text("#!/bin/sh\nexit 0\n")
    before = treehash.snapshot(git_repo)
    proc = run_ralph("build", "-n", "3", "--agent", "command", "--agent-cmd",
                     f"{bin_dir / 'myagent'} {{prompt}}")
    assert_one_error_and_nothing_written(
        proc, 1, before, git_repo,
        f"Error: cannot run the agent: '{bin_dir / 'myagent'}' is not an executable file; "
        "fix --agent-cmd")


def test_no_claude_on_path_stops_the_run_before_any_session(run_ralph, one_task, git_repo):
    before = treehash.snapshot(git_repo)
    proc = run_ralph("build", "-n", "3")                 # no claude stub installed
    assert_one_error_and_nothing_written(
        proc, 1, before, git_repo, "Error: cannot run the agent: 'claude' is not on PATH; "
        "install it, or give its path with --agent-cmd")


def test_a_build_with_nothing_to_claim_does_not_ask_for_the_agent(run_ralph, git_repo):
    proc = run_ralph("build", "-n", "3")                 # no claude stub, no session to start
    assert proc.returncode == 0, proc.stderr
    assert "No tasks available. Exiting loop." in proc.stdout


def test_a_missing_claude_under_an_external_task_command_keeps_ralph_shs_session(
        run_ralph, tasks):
    """ralph.sh's own suite drives ralph with RALPH_TASK_CMD and no claude:
    docs/contract/ralph-cli.md s.11's error line and a finished session, as before (the
    compatibility rule of the preflight)."""
    tasks.script(peek={"out": "x"}, plan_status={"out": "1 open, 0 active\n"})
    proc = run_ralph("build", "-n", "1", env=tasks.env)
    assert proc.returncode == 0
    assert proc.stderr.startswith("Error: cannot run 'claude'")
    assert ["plan-status"] in tasks.calls()


# ---------------------------------------------------------------------------- the backlog

def test_outside_a_git_repository_the_run_stops_with_the_task_clis_cause(
        run_ralph, tmp_path, agent):
    folder = tmp_path / "plain"
    (folder / "specs").mkdir(parents=True)
    (folder / "specs" / "a.md").write_text("# A\n")
    before = treehash.snapshot(folder)
    proc = run_ralph("build", "-n", "2", cwd=folder, env=agent.env)
    assert_one_error_and_nothing_written(
        proc, 1, before, folder,
        "Error: cannot read the backlog: not inside a git repository. Run: git init")
    assert agent.calls() == []


def test_without_an_origin_remote_the_run_stops_and_scope_repo_lets_it_run(
        run_ralph, git_repo, base_env, agent):
    git(git_repo, "remote", "remove", "origin", env=base_env)
    before = treehash.snapshot(git_repo)
    proc = run_ralph("build", "-n", "2", env=agent.env)
    assert_one_error_and_nothing_written(
        proc, 1, before, git_repo, "Error: cannot read the backlog: no git remote \"origin\" "
        "found. Run: git remote add origin <url>")
    named = run_ralph("build", "-n", "2", env={**agent.env, "RALPH_SCOPE_REPO": "acme/widgets"})
    assert named.returncode == 0, named.stderr
    assert named.stdout.splitlines()[-2:] == ["No tasks available. Exiting loop.",
                                              "deregistered " + named.stdout.split(
                                                  "Agent:  ")[1].split("\n")[0]]


def test_a_task_database_that_is_not_one_stops_the_run_with_exit_8(run_ralph, git_repo, agent):
    (git_repo / ".ralph").mkdir()
    (git_repo / ".ralph" / "tasks.db").write_text("garbage\n")
    before = treehash.snapshot(git_repo)
    proc = run_ralph("build", "-n", "2", env=agent.env)
    assert_one_error_and_nothing_written(
        proc, 8, before, git_repo,
        "Error: cannot read the backlog .ralph/tasks.db: database error: file is not a database")
    assert agent.calls() == []


def test_a_failing_peek_of_an_external_task_command_runs_no_backlog_preflight(
        run_ralph, tmp_path, tasks, agent):
    """Outside git, with a task command of its own: it owns its backlog, and its failing peek
    stays transient (s.15), as ralph.sh's suite requires."""
    folder = tmp_path / "plain"
    (folder / "specs").mkdir(parents=True)
    (folder / "specs" / "a.md").write_text("# A\n")
    tasks.script(peek=[{"out": "", "rc": 1, "err": "Error: database is locked\n"}, {"out": ""}],
                 plan_status={"out": "1 open, 0 active\n"})
    proc = run_ralph("build", cwd=folder, env={**tasks.env, **agent.env})
    assert proc.returncode == 0 and proc.stderr == ""
    assert agent.prompts() == ["/ralph-build"]


# ---------------------------------------------------------------------------- the store

def test_a_store_never_reached_at_start_is_one_line_after_the_connect_timeout(run_ralph, git_repo,
                                                                              agent):
    pytest.importorskip("psycopg")
    url = f"postgresql://user:secret@127.0.0.1:{closed_port()}/db"
    before = treehash.snapshot(git_repo)
    proc = run_ralph("build", "--tasks", url, "--store-connect-timeout", "1", env=agent.env,
                     timeout=60)
    shown = url.replace("secret", "***")
    assert (proc.returncode, proc.stdout) == (1, ""), proc.stderr
    waiting, error = proc.stderr.splitlines()
    assert waiting == f"waiting up to 1s for {shown}"
    assert error.startswith(f"Error: task store unreachable: {shown}: ")
    assert error.endswith("not reached within 1s (store_connect_timeout): check its host and port")
    assert "secret" not in proc.stderr and agent.calls() == []
    assert treehash.diff(before, treehash.snapshot(git_repo)) == []


def test_ralph_task_on_a_store_never_reached_gives_its_one_line_within_the_bound(
        run_ralph, git_repo):
    """Before, the task CLI retried the store for 300 s: this run's 60 s timeout failed."""
    pytest.importorskip("psycopg")
    url = f"postgresql://user:secret@127.0.0.1:{closed_port()}/db"
    (git_repo / "ralph.yml").write_text(f"tasks: {url}\nstore_connect_timeout: 1s\n")
    proc = run_ralph("task", "list", timeout=60)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert [line.split(":")[0] for line in proc.stderr.splitlines()] == [
        f"waiting up to 1s for postgresql", "Error"]
    assert not (git_repo / ".ralph").exists()


@pytest.mark.parametrize("value,line", [
    ("0", "Error: --store-connect-timeout must be at least 1, got 0"),
    ("soon", "Error: --store-connect-timeout requires a duration (e.g. 90s, 15m, 1h)"),
], ids=["zero", "not-a-duration"])
def test_a_bad_store_connect_timeout_is_one_line_and_nothing_written(run_ralph, git_repo, agent,
                                                                     value, line):
    before = treehash.snapshot(git_repo)
    proc = run_ralph("build", "--store-connect-timeout", value, env=agent.env)
    assert (proc.returncode, proc.stdout) == (1, "")
    (shown,) = proc.stderr.splitlines()
    assert shown.startswith(line)                  # `got 0` may be shown as `0.0`
    assert treehash.diff(before, treehash.snapshot(git_repo)) == [] and agent.calls() == []


# ---------------------------------------------------------------------------- specs

def test_a_run_from_a_subdirectory_finds_the_repositorys_specs(run_ralph, git_repo, agent):
    (git_repo / "src").mkdir()
    proc = run_ralph("build", "-n", "1", cwd=git_repo / "src", env=agent.env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert NO_SPECS not in proc.stdout and "No tasks available. Exiting loop." in proc.stdout


def test_the_built_in_backlog_without_specs_still_asks_for_them(run_ralph, git_repo, agent):
    for spec in (git_repo / "specs").iterdir():
        spec.unlink()
    proc = run_ralph("build", "-n", "1", env=agent.env)
    assert (proc.returncode, proc.stdout) == (1, NO_SPECS)


def test_tk_users_without_specs_build_from_their_tickets(run_ralph, git_repo, base_env, bin_dir,
                                                         agent_env, tmp_path):
    need(TK)
    (bin_dir / "tk").symlink_to(TK)
    for spec in (git_repo / "specs").iterdir():
        spec.unlink()
    (git_repo / "specs").rmdir()
    made = tool(["tk", "create", "First ticket"], git_repo, base_env)
    assert made.returncode == 0, made.stderr
    commit_all(git_repo, base_env, "tickets")
    proc = run_ralph("build", "-n", "1", "--tasks", "tk", env=agent_env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert NO_SPECS not in proc.stdout
    assert claims(tmp_path) == [made.stdout.strip()]


# ---------------------------------------------------------------------------- .ralph/

def test_ralph_task_over_flowctl_names_its_spec_file_and_leaves_nothing_untracked(
        run_ralph, git_repo, base_env, flowctl_launcher):
    """flowctl's specs are `.flow/specs/<epic>.md`: the task names that file (the prompt and
    scope freeze read it); the listing's cache under .ralph/ is ignored from its first write."""
    def flowctl(*args: str) -> dict:
        proc = tool([flowctl_launcher, *args, "--json"], git_repo, base_env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return json.loads(proc.stdout)
    flowctl("init")
    spec = flowctl("spec", "create", "--title", "Widgets")["id"]
    task = flowctl("task", "create", "--spec", spec, "--title", "One")["id"]
    commit_all(git_repo, base_env, "flow")
    proc = run_ralph("task", "peek", env={"RALPH_TASKS": "flowctl",
                                          "FLOWCTL": str(flowctl_launcher)}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"## Task {task}\n" in proc.stdout
    assert f"\nspec: .flow/specs/{spec}.md\n" in proc.stdout + "\n"
    assert (git_repo / ".ralph").is_dir()
    assert git(git_repo, "status", "--porcelain", "--untracked-files=all", env=base_env) == ""


def test_the_first_write_of_a_run_makes_ralph_ignore_itself(run_ralph, git_repo, base_env, agent):
    proc = run_ralph("build", "-n", "1", env=agent.env)
    assert proc.returncode == 0, proc.stderr
    assert (git_repo / ".ralph" / ".gitignore").read_text() == "*\n"
    assert git(git_repo, "status", "--porcelain", "--untracked-files=all", env=base_env) == ""


# ---------------------------------------------------------------------------- the checkout

def test_a_checkouts_ralph_py_runs_with_its_venv_whichever_python_starts_it(
        one_task, git_repo, base_env, agent, tmp_path):
    """Before, a Python that had PyYAML ran ralph.py itself, without the .venv's psycopg."""
    venv_python = ROOT / ".venv" / "bin" / "python"
    if not venv_python.exists():
        pytest.skip("no .venv in this checkout: make setup")
    seen = tmp_path / "ralph-argv0"
    # the stub runs this through sh: its parent is the stub, whose parent is ralph
    agent.env["STUB_ACTION"] = (f"ralph=$(cut -d' ' -f4 /proc/$PPID/stat); "
                                f"tr '\\0' '\\n' < /proc/$ralph/cmdline | head -n 1 > {seen}")
    env = {**base_env, **agent.env,
           "PYTHONPATH": sysconfig.get_paths()["purelib"]}   # PyYAML for the other Python too
    proc = run_process([sys._base_executable, str(RALPH), "build", "-n", "1"], cwd=git_repo,
                       env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert seen.read_text().strip() == str(venv_python)

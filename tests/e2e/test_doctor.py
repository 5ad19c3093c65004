"""Black-box: `ralph doctor` with a controlled PATH (stub agent CLIs and tools in a bin
directory, git beside them, nothing else) and a private HOME: one line per check, exit 0 when
nothing required is missing and 1 otherwise, nothing written, no secret printed; the same
causes the preflight of `ralph build` names (tests/e2e/test_preflight.py)."""
from __future__ import annotations

import os
import shutil
import socket

import pytest

import treehash
from conftest import git, wait_for

SECRET = "sk-ant-api03-FAKE-doctor-must-never-print-this"
CLIS = ("claude", "codex", "gemini", "opencode", "pi", "amp")


@pytest.fixture
def doctor(run_ralph, base_env, bin_dir, tmp_path):
    """run(*args, env=..., cwd=...): `ralph doctor` whose PATH holds bin_dir and git only."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "git").symlink_to(shutil.which("git"))

    def run(*args: str, env: dict[str, str] | None = None, cwd=None):
        return run_ralph("doctor", *args, cwd=cwd,
                         env={"PATH": f"{bin_dir}{os.pathsep}{tools}", **(env or {})})
    return run


def stub(bin_dir, name: str, said: str = "", code: int = 0) -> None:
    """A program on the test's PATH that prints `said` (default: `<name> 1.2.3`) to any argv."""
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\necho '{said or name + ' 1.2.3'}'\nexit {code}\n")
    path.chmod(0o755)


@pytest.fixture
def all_tools(bin_dir):
    for name in (*CLIS, "bwrap", "chromium"):
        stub(bin_dir, name)


def lines(proc) -> dict[str, str]:
    """{check name: its line} of the output (its last line is the verdict)."""
    found = {}
    for line in proc.stdout.splitlines()[:-1]:
        status, rest = line.split(" ", 1)
        found[rest.strip().split(":", 1)[0]] = f"{status} {rest.strip()}"
    return found


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_with_everything_present_every_check_is_ok_and_it_exits_0(
        doctor, all_tools, git_repo, home, bin_dir):
    before, home_before = treehash.snapshot(git_repo), treehash.snapshot(home)
    proc = doctor(env={"ANTHROPIC_API_KEY": SECRET})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = lines(proc)
    assert got["claude"] == f"ok claude: claude 1.2.3 at {bin_dir / 'claude'}, the run's agent"
    for name in CLIS[1:]:
        assert got[name] == f"ok {name}: {name} 1.2.3 at {bin_dir / name}"
    assert got["claude login"] == "ok claude login: $ANTHROPIC_API_KEY is set"
    assert got["codex login"].startswith("warning codex login: none found ($OPENAI_API_KEY, ")
    assert got["git identity"] == "ok git identity: Test <test@example.com>"
    assert got["git repository"] == f"ok git repository: {git_repo}"
    assert got["origin"].startswith("ok origin: tasks are scoped to ")
    assert got["task store"] == ("ok task store: .ralph/tasks.db not created yet (the first "
                                 "`ralph plan` or `ralph task` creates it)")
    assert got["specs"] == "ok specs: present"
    assert got["bwrap"] == f"ok bwrap: {bin_dir / 'bwrap'}"
    assert got["chromium"] == f"ok chromium: {bin_dir / 'chromium'}"
    assert proc.stdout.splitlines()[-1] == "Nothing required is missing."
    assert proc.stderr == ""
    assert SECRET not in proc.stdout + proc.stderr
    assert treehash.diff(before, treehash.snapshot(git_repo)) == []
    assert treehash.diff(home_before, treehash.snapshot(home)) == []


def test_a_login_file_counts_as_present_and_optional_tools_may_be_missing(
        doctor, bin_dir, home, git_repo):
    stub(bin_dir, "claude")
    (home / ".claude").mkdir()
    (home / ".claude" / ".credentials.json").write_text('{"token": "' + SECRET + '"}')
    proc = doctor()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = lines(proc)
    assert got["claude login"] == "ok claude login: ~/.claude/.credentials.json"
    assert got["codex"] == ("missing codex: not on PATH (optional: for --agent codex; "
                            "npm install -g @openai/codex)")
    assert got["bwrap"] == ("missing bwrap: not on PATH (optional: the sandbox uses it; "
                            "install the Debian package bubblewrap)")
    assert SECRET not in proc.stdout + proc.stderr


def test_without_claude_on_path_the_run_agent_is_missing_and_it_exits_1(doctor, bin_dir,
                                                                        git_repo):
    stub(bin_dir, "codex")
    proc = doctor()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    got = lines(proc)
    assert got["claude"] == ("missing claude: cannot run the agent: 'claude' is not on PATH; "
                             "install it, or give its path with --agent-cmd")
    assert "claude login" not in got
    assert got["codex"].startswith("ok codex: codex 1.2.3 at ")
    assert proc.stdout.splitlines()[-1] == ("1 required check failed: fix the lines marked "
                                            "missing.")


def test_the_run_agent_is_the_one_ralph_yml_names(doctor, bin_dir, git_repo):
    stub(bin_dir, "claude")
    (git_repo / "ralph.yml").write_text("agent: command\nagent_cmd: /nope/mytool {prompt}\n")
    proc = doctor()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert lines(proc)["command (/nope/mytool)"] == (
        "missing command (/nope/mytool): cannot run the agent: '/nope/mytool' does not exist; "
        "fix --agent-cmd")


def test_a_cli_whose_version_fails_is_a_warning_not_a_failure(doctor, bin_dir, git_repo):
    stub(bin_dir, "claude", said="boom", code=2)
    proc = doctor()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert lines(proc)["claude"] == (f"warning claude: found at {bin_dir / 'claude'}, the run's "
                                     "agent; `claude --version` failed (exit 2)")


def test_a_cli_whose_version_hangs_is_a_warning_and_its_wrapper_s_children_are_stopped(
        doctor, bin_dir, git_repo, tmp_path):
    marker = tmp_path / "child.pid"
    sleep = shutil.which("sleep")                   # not on the test's PATH
    (bin_dir / "claude").write_text(f"#!/bin/sh\n{sleep} 300 &\necho $! > {marker}\nwait\n")
    (bin_dir / "claude").chmod(0o755)
    proc = doctor()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert lines(proc)["claude"] == (f"warning claude: found at {bin_dir / 'claude'}, the run's "
                                     "agent; `claude --version` gave no answer within 5s")
    child = int(marker.read_text())
    wait_for(lambda: not os.path.exists(f"/proc/{child}") or
             open(f"/proc/{child}/stat").read().split()[2] == "Z")


def test_without_a_git_identity_it_says_how_to_set_one(doctor, all_tools, git_repo):
    proc = doctor(env={k: "" for k in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
                                       "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL")})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert lines(proc)["git identity"] == (
        'missing git identity: user.name and user.email not set; git config --global '
        'user.name "Your Name"; git config --global user.email "you@example.com"')


def test_without_an_origin_remote_it_names_the_remote_and_the_variable(
        doctor, all_tools, git_repo, base_env):
    git(git_repo, "remote", "remove", "origin", env=base_env)
    proc = doctor()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    got = lines(proc)
    assert got["origin"] == ('missing origin: no git remote "origin" found. Run: git remote add '
                             'origin <url>, or set RALPH_SCOPE_REPO')
    assert "task store" not in got
    named = doctor(env={"RALPH_SCOPE_REPO": "acme/widgets"})
    assert named.returncode == 0, named.stdout
    assert lines(named)["origin"] == "ok origin: tasks are scoped to acme/widgets (branch main)"


def test_a_garbage_task_database_is_missing_with_the_preflights_cause(doctor, all_tools,
                                                                      git_repo):
    (git_repo / ".ralph").mkdir()
    (git_repo / ".ralph" / "tasks.db").write_text("garbage\n")
    before = treehash.snapshot(git_repo)
    proc = doctor()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert lines(proc)["task store"] == ("missing task store: cannot read the backlog "
                                         ".ralph/tasks.db: database error: file is not a "
                                         "database")
    assert treehash.diff(before, treehash.snapshot(git_repo)) == []


def test_a_task_database_with_tasks_is_ok(doctor, all_tools, git_repo, run_task):
    assert run_task("create", "t-1", "One task").returncode == 0
    proc = doctor()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert lines(proc)["task store"] == "ok task store: .ralph/tasks.db opens and is a task store"


def test_outside_a_git_repository_it_says_so_and_writes_nothing(doctor, all_tools, tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    before = treehash.snapshot(folder)
    proc = doctor(cwd=folder, env={"ANTHROPIC_API_KEY": SECRET})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    got = lines(proc)
    assert got["git repository"] == ("missing git repository: not inside a git repository. "
                                     "Run: git init (the built-in backlog lives in one)")
    assert got["claude"].startswith("ok claude: ")
    assert "origin" not in got and "task store" not in got
    assert SECRET not in proc.stdout + proc.stderr
    assert treehash.diff(before, treehash.snapshot(folder)) == []


def test_a_store_never_reached_is_missing_within_the_connect_timeout_without_its_password(
        doctor, all_tools, git_repo):
    pytest.importorskip("psycopg")
    url = f"postgresql://ralph:{SECRET}@127.0.0.1:{closed_port()}/db"
    (git_repo / "ralph.yml").write_text(f"tasks: {url}\nstore_connect_timeout: 1\n")
    before = treehash.snapshot(git_repo)
    proc = doctor()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    shown = url.replace(SECRET, "***")
    line = lines(proc)["task store"]
    assert line.startswith(f"missing task store: task store unreachable: {shown}: "), line
    assert line.endswith("not reached within 1s (store_connect_timeout): check its host and port")
    assert proc.stderr == f"waiting up to 1s for {shown}\n"
    assert SECRET not in proc.stdout + proc.stderr
    assert treehash.diff(before, treehash.snapshot(git_repo)) == []


def test_help_is_printed_and_an_unknown_option_is_one_error_line(doctor, git_repo):
    helped = doctor("--help")
    assert helped.returncode == 0 and helped.stdout.startswith("Usage: ralph doctor [options]\n")
    assert "Exit 0 when nothing required is missing, else 1." in helped.stdout
    bad = doctor("--bogus")
    assert (bad.returncode, bad.stdout) == (1, "")
    assert bad.stderr == "Error: Unknown option '--bogus'\nRun 'ralph doctor --help' for usage\n"


def test_a_task_source_whose_tool_is_missing_is_named_with_what_installs_it(
        doctor, all_tools, git_repo):
    (git_repo / "ralph.yml").write_text("tasks: tk\n")
    proc = doctor()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert lines(proc)["task source tk"].startswith("missing task source tk: tk not found: "
                                                    "install ")


def test_an_external_task_command_owns_its_backlog_and_is_only_checked_to_be_executable(
        doctor, all_tools, tmp_path):
    folder = tmp_path / "plain"                 # outside git: the command's backlog, not ours
    (folder / "specs").mkdir(parents=True)
    (folder / "specs" / "a.md").write_text("# A\n")
    proc = doctor(cwd=folder, env={"RALPH_TASK_CMD": "/nope/task"})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    got = lines(proc)
    assert got["task command"] == ("missing task command: RALPH_TASK_CMD /nope/task is not an "
                                   "executable file")
    assert "git repository" not in got
    ours = doctor(cwd=folder, env={"RALPH_TASK_CMD": "claude"})      # any executable on PATH
    assert ours.returncode == 0, ours.stdout
    assert lines(ours)["task command"] == "ok task command: RALPH_TASK_CMD claude"


def test_without_specs_the_built_in_backlog_is_missing_them_and_a_source_keeps_its_own(
        doctor, all_tools, git_repo, base_env, bin_dir):
    git(git_repo, "rm", "-rq", "specs", env=base_env)
    proc = doctor()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert lines(proc)["specs"] == ("missing specs: No specs found. Run /ralph-spec first to "
                                    "generate specs in ./specs/ (the built-in backlog's plan "
                                    "and build need them)")
    (git_repo / "ralph.yml").write_text("tasks: tk\n")
    assert lines(doctor())["specs"] == "ok specs: the task source tk keeps its own plan"

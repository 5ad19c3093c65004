"""Black-box tests of the Claude Code hooks scripts/hooks/{precompact,session_end}
(docs/contract/ralph-cli.md s.19): run as real processes, against a recording stub task CLI (argv,
environment, failures) and against the real task CLI (scopes, other agents, the effect of
`fail`)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, TASK, run_process
from ralphpy.commands import install

HOOKS = ROOT / "scripts" / "hooks"
PRECOMPACT = HOOKS / "precompact"
SESSION_END = HOOKS / "session_end"
CONTINUE = '{"continue":true}\n'
STOP = '{"continue":false,"stopReason":"Context Limit Reached"}\n'
SCOPE = {"RALPH_SCOPE_REPO": "acme/widgets", "RALPH_SCOPE_BRANCH": "main"}

# A task CLI that records each call (argv and scope variables) as a JSON line in $STUB_TASK_LOG,
# prints $STUB_TASK_LIST for `list` and `failed <slug>` for `fail`, writes noise on stderr, and
# exits with $STUB_TASK_EXIT_<command> (default 0).
STUB_TASK = r'''#!/usr/bin/env python3
import json, os, sys
with open(os.environ["STUB_TASK_LOG"], "a") as fh:
    fh.write(json.dumps({"argv": sys.argv[1:], "stdin_tty_or_null": sys.stdin.read() == "",
                         "env": {k: v for k, v in os.environ.items() if k.startswith("RALPH_")}}) + "\n")
sys.stderr.write("stub task CLI noise on stderr\n")
cmd = sys.argv[1]
if cmd == "list":
    sys.stdout.write(os.environ.get("STUB_TASK_LIST", ""))
elif cmd == "fail":
    sys.stdout.write(f"failed {sys.argv[2]}\n")
sys.exit(int(os.environ.get(f"STUB_TASK_EXIT_{cmd}", "0")))
'''

ONE_ACTIVE = """## Task auth-01
id: auth-01
title: Login form
priority: 1
status: active
assignee: a1b2
"""

TWO_ACTIVE = ONE_ACTIVE + """
## Task auth-02
id: auth-02
title: Logout
priority: 2
status: active
assignee: a1b2"""


@pytest.fixture
def stub_task(tmp_path: Path, base_env: dict[str, str]):
    """(env, calls): env runs the hooks against the recording stub; calls() reads its log."""
    script = tmp_path / "stub-task"
    script.write_text(STUB_TASK)
    script.chmod(0o755)
    log = tmp_path / "task-calls.jsonl"
    env = {**base_env, **SCOPE, "RALPH_TASK_SCRIPT": str(script), "RALPH_AGENT_ID": "a1b2",
           "STUB_TASK_LOG": str(log)}

    def calls() -> list[dict]:
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]
    return env, calls


def run_hook(hook: Path, env: dict[str, str], cwd: Path, stdin: str = '{"hook_event_name":"x"}'):
    return run_process([str(hook)], cwd=cwd, env=env, input=stdin, timeout=30)


@pytest.mark.parametrize("variable", ["RALPH_TASK_SCRIPT", "RALPH_AGENT_ID", "RALPH_SCOPE_REPO",
                                      "RALPH_SCOPE_BRANCH"])
@pytest.mark.parametrize("value", [None, ""], ids=["unset", "empty"])
@pytest.mark.parametrize("hook,stdout", [(PRECOMPACT, CONTINUE), (SESSION_END, "")],
                         ids=["precompact", "session_end"])
def test_hook_calls_nothing_when_a_ralph_variable_is_unset_or_empty(
        stub_task, tmp_path, hook, stdout, variable, value):
    env, calls = stub_task
    env = {**env, "STUB_TASK_LIST": ONE_ACTIVE}
    if value is None:
        del env[variable]
    else:
        env[variable] = value
    result = run_hook(hook, env, tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, stdout, "")
    assert calls() == []


@pytest.mark.parametrize("hook,stdout", [(PRECOMPACT, CONTINUE), (SESSION_END, "")],
                         ids=["precompact", "session_end"])
def test_hook_only_lists_when_the_agent_has_no_active_task(stub_task, tmp_path, hook, stdout):
    env, calls = stub_task
    result = run_hook(hook, env, tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, stdout, "")
    assert [c["argv"] for c in calls()] == [
        ["list", "--status", "active", "--assignee", "a1b2", "--markdown"]]


def test_precompact_fails_the_active_task_and_stops_the_session(stub_task, tmp_path):
    env, calls = stub_task
    result = run_hook(PRECOMPACT, {**env, "STUB_TASK_LIST": ONE_ACTIVE}, tmp_path)
    assert result.returncode == 0
    assert result.stdout == STOP          # the fail call's `failed auth-01` is not passed on
    assert result.stderr == "Warning: agent a1b2 context limit reached, failing task auth-01\n"
    assert [c["argv"] for c in calls()] == [
        ["list", "--status", "active", "--assignee", "a1b2", "--markdown"],
        ["fail", "auth-01", "--reason", "context limit reached"]]


def test_session_end_fails_the_active_task_and_passes_the_fail_output_through(stub_task, tmp_path):
    env, calls = stub_task
    result = run_hook(SESSION_END, {**env, "STUB_TASK_LIST": ONE_ACTIVE}, tmp_path)
    assert result.returncode == 0
    assert result.stdout == "failed auth-01\n"
    assert result.stderr == "Warning: agent a1b2 session ended, failing task auth-01\n"
    assert [c["argv"] for c in calls()][1:] == [
        ["fail", "auth-01", "--reason", "session ended unexpectedly"]]


@pytest.mark.parametrize("hook,stdout", [(PRECOMPACT, STOP), (SESSION_END, "failed auth-01\n")],
                         ids=["precompact", "session_end"])
def test_hook_handles_only_the_first_active_task(stub_task, tmp_path, hook, stdout):
    env, calls = stub_task
    result = run_hook(hook, {**env, "STUB_TASK_LIST": TWO_ACTIVE}, tmp_path)
    assert (result.returncode, result.stdout) == (0, stdout)
    assert [c["argv"][:2] for c in calls()] == [["list", "--status"], ["fail", "auth-01"]]


@pytest.mark.parametrize("hook", [PRECOMPACT, SESSION_END], ids=["precompact", "session_end"])
def test_hook_passes_scope_and_agent_variables_to_the_task_cli_unchanged(stub_task, tmp_path, hook):
    env, calls = stub_task
    env = {**env, "STUB_TASK_LIST": ONE_ACTIVE, "RALPH_SCOPE_REPO": "other org/r'e\"po",
           "RALPH_SCOPE_BRANCH": "feature/x y", "RALPH_AGENT_ID": "ag $(id) 'q'"}
    result = run_hook(hook, env, tmp_path)
    assert result.returncode == 0
    recorded = calls()
    assert len(recorded) == 2
    for call in recorded:
        assert call["env"]["RALPH_SCOPE_REPO"] == "other org/r'e\"po"
        assert call["env"]["RALPH_SCOPE_BRANCH"] == "feature/x y"
        assert call["stdin_tty_or_null"]          # the hook's stdin never reaches the task CLI
    assert recorded[0]["argv"][4] == "ag $(id) 'q'"


@pytest.mark.parametrize("slug", ["a b", "x'y\"z", "$(touch pwned)", "back\\slash", "-dash"],
                         ids=["space", "quotes", "subst", "backslash", "dash"])
def test_hook_passes_the_slug_byte_for_byte(stub_task, tmp_path, slug):
    env, calls = stub_task
    listing = f"## Task {slug}\nid: {slug}\nstatus: active\n"
    result = run_hook(PRECOMPACT, {**env, "STUB_TASK_LIST": listing}, tmp_path)
    assert result.stdout == STOP
    assert result.stderr == f"Warning: agent a1b2 context limit reached, failing task {slug}\n"
    assert calls()[1]["argv"] == ["fail", slug, "--reason", "context limit reached"]
    assert not (tmp_path / "pwned").exists()


def test_only_a_line_starting_with_id_colon_space_names_the_task(stub_task, tmp_path):
    env, calls = stub_task
    listing = "title: id: fake\n id: indented\nid:nospace\n## Task real\nid: real\n"
    result = run_hook(PRECOMPACT, {**env, "STUB_TASK_LIST": listing}, tmp_path)
    assert result.stdout == STOP
    assert calls()[1]["argv"][:2] == ["fail", "real"]


@pytest.mark.parametrize("hook,stdout", [(PRECOMPACT, CONTINUE), (SESSION_END, "")],
                         ids=["precompact", "session_end"])
def test_a_failing_list_call_counts_as_no_active_task(stub_task, tmp_path, hook, stdout):
    env, calls = stub_task
    env = {**env, "STUB_TASK_LIST": ONE_ACTIVE, "STUB_TASK_EXIT_list": "1"}
    result = run_hook(hook, env, tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, stdout, "")
    assert [c["argv"][0] for c in calls()] == ["list"]


@pytest.mark.parametrize("hook,stdout", [(PRECOMPACT, STOP), (SESSION_END, "failed auth-01\n")],
                         ids=["precompact", "session_end"])
def test_a_failing_fail_call_is_ignored(stub_task, tmp_path, hook, stdout):
    env, _ = stub_task
    env = {**env, "STUB_TASK_LIST": ONE_ACTIVE, "STUB_TASK_EXIT_fail": "2"}
    result = run_hook(hook, env, tmp_path)
    assert (result.returncode, result.stdout) == (0, stdout)
    assert result.stderr.startswith("Warning: agent a1b2 ")


@pytest.mark.parametrize("task_script", ["/nonexistent/task", "no-such-task-command-xyz", "."],
                         ids=["missing-path", "not-on-path", "directory"])
@pytest.mark.parametrize("hook,stdout", [(PRECOMPACT, CONTINUE), (SESSION_END, "")],
                         ids=["precompact", "session_end"])
def test_hook_exits_0_quietly_when_the_task_cli_cannot_run(stub_task, tmp_path, hook, stdout,
                                                          task_script):
    env, _ = stub_task
    result = run_hook(hook, {**env, "RALPH_TASK_SCRIPT": task_script}, tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, stdout, "")


@pytest.mark.parametrize("hook", [PRECOMPACT, SESSION_END], ids=["precompact", "session_end"])
def test_hook_ignores_its_stdin_whatever_it_holds(stub_task, tmp_path, hook):
    env, calls = stub_task
    for stdin in ["", "not json at all\n", '{"session_id":"s","reason":"other"}' * 2000]:
        result = run_hook(hook, {**env, "STUB_TASK_LIST": ONE_ACTIVE}, tmp_path, stdin=stdin)
        assert result.returncode == 0
    assert [c["argv"][0] for c in calls()] == ["list", "fail"] * 3


def test_precompact_exits_0_when_its_stdout_is_closed(stub_task, tmp_path):
    env, _ = stub_task
    proc = subprocess.Popen([str(PRECOMPACT)], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0


# --- against the real task CLI -------------------------------------------------------------

def _show(run_task, slug: str, env: dict[str, str] | None = None) -> dict[str, str]:
    out = run_task("show", slug, env=env).stdout
    return {line[:12].strip().rstrip(":"): line[13:] for line in out.splitlines() if line[:1] != " "}


@pytest.fixture
def real_backlog(git_repo: Path, base_env: dict[str, str], run_task):
    """Tasks t-mine (active for agent a1b2), t-theirs (active for ffff), and t-elsewhere
    (active for a1b2 in scope acme/widgets@other); returns the hook environment."""
    other = {"RALPH_SCOPE_BRANCH": "other"}
    for env in (None, other):
        jsonl = "".join(json.dumps({"id": s, "t": s.upper()}) + "\n"
                        for s in (["t-mine", "t-theirs"] if env is None else ["t-elsewhere"]))
        assert run_task("plan-sync", input=jsonl, env=env).returncode == 0
    assert run_task("claim", "t-mine", "--agent", "a1b2").returncode == 0
    assert run_task("claim", "t-theirs", "--agent", "ffff").returncode == 0
    assert run_task("claim", "t-elsewhere", "--agent", "a1b2", env=other).returncode == 0
    return {**base_env, **SCOPE, "RALPH_TASK_SCRIPT": str(TASK), "RALPH_AGENT_ID": "a1b2"}


@pytest.mark.parametrize("hook,reason,stdout", [
    (PRECOMPACT, "context limit reached", STOP),
    (SESSION_END, "session ended unexpectedly", "failed t-mine\n")],
    ids=["precompact", "session_end"])
def test_hook_fails_only_this_agents_task_of_this_scope(real_backlog, git_repo, run_task,
                                                       hook, reason, stdout):
    result = run_hook(hook, real_backlog, git_repo)
    assert (result.returncode, result.stdout) == (0, stdout)
    mine = _show(run_task, "t-mine")
    assert (mine["Status"], mine["Retries"], mine["Fail reason"]) == ("open", "1", reason)
    assert "Assignee" not in mine
    assert _show(run_task, "t-theirs")["Assignee"] == "ffff"
    elsewhere = _show(run_task, "t-elsewhere", env={"RALPH_SCOPE_BRANCH": "other"})
    assert (elsewhere["Status"], elsewhere["Assignee"]) == ("active", "a1b2")


@pytest.mark.parametrize("hook,stdout", [(PRECOMPACT, CONTINUE), (SESSION_END, "")],
                         ids=["precompact", "session_end"])
def test_hook_leaves_an_active_task_of_another_scope_alone(real_backlog, git_repo, run_task,
                                                          hook, stdout):
    env = {**real_backlog, "RALPH_SCOPE_BRANCH": "third"}     # a1b2 has nothing active here
    result = run_hook(hook, env, git_repo)
    assert (result.returncode, result.stdout, result.stderr) == (0, stdout, "")
    assert _show(run_task, "t-mine")["Status"] == "active"
    assert _show(run_task, "t-elsewhere", env={"RALPH_SCOPE_BRANCH": "other"})["Status"] == "active"


def test_hooks_run_from_an_installed_copy_behave_the_same(real_backlog, git_repo, tmp_path,
                                                         run_task):
    install.install(tmp_path / "proj" / ".claude", project=True)
    copy = tmp_path / "proj" / ".claude" / "hooks" / "ralph" / "session_end"
    result = run_hook(copy, real_backlog, git_repo)
    assert (result.returncode, result.stdout) == (0, "failed t-mine\n")
    assert os.access(copy, os.X_OK)

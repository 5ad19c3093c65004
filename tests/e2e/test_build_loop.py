"""Black-box: the build loop of docs/contract/ralph-cli.md s.11, s.13, s.15 with a stub task CLI
recording every call and a stub agent recording its argv."""
from __future__ import annotations

import pytest

from loophelp import agent, assistant, events, result, tasks  # noqa: F401  (fixtures)

TASK_MD = "## Task t-1\nid: t-1\ntitle: One\npriority: 1\nstatus: open\n"
REMAIN = {"out": "1 open, 0 active, 0 done, 0 blocked, 0 deleted\n"}
DONE = {"out": "0 open, 0 active, 4 done, 0 blocked, 1 deleted\n"}
REASON = "session exited without completing task"


def loop(n: int) -> str:
    return f"\n\n======================== LOOP {n} ========================\n"


def after_banner(stdout: str) -> str:
    return stdout.split("\u2501" * 40 + "\n", 2)[2]


def test_empty_peek_ends_the_loop_without_starting_the_agent(run_ralph, tasks, agent):
    proc = run_ralph("build", env={**tasks.env, **agent.env})
    assert proc.returncode == 0
    assert after_banner(proc.stdout) == "No tasks available. Exiting loop.\nderegistered ab12\n"
    assert agent.calls() == []
    assert tasks.calls() == [["_get-scope"], ["agent", "register"], ["peek", "-n", "10"],
                             ["agent", "deregister", "ab12"]]


def test_one_iteration_makes_its_task_calls_in_order(run_ralph, tasks, agent):
    tasks.script(peek=[{"out": TASK_MD}, {"out": ""}],
                 list={"out": "## Task t-1\nid: t-1\nstatus: active\n\n## Task t-2\nid: t-2\n"},
                 plan_status=REMAIN)
    proc = run_ralph("build", env={**tasks.env, **agent.env})
    assert proc.returncode == 0
    assert tasks.calls() == [
        ["_get-scope"], ["agent", "register"], ["peek", "-n", "10"],
        ["list", "--status", "active", "--assignee", "ab12", "--markdown"],
        ["fail", "t-1", "--reason", REASON], ["fail", "t-2", "--reason", REASON],
        ["plan-status"], ["peek", "-n", "10"], ["agent", "deregister", "ab12"]]
    assert after_banner(proc.stdout) == ("failed t-1\nfailed t-2\n" + loop(1)
                                         + "No tasks available. Exiting loop.\nderegistered ab12\n")


def test_the_prompt_is_the_command_a_space_and_the_peek_output(run_ralph, tasks, agent):
    tasks.script(peek=[{"out": TASK_MD + "\n\n"}, {"out": ""}])
    run_ralph("build", env={**tasks.env, **agent.env})
    assert agent.prompts() == ["/ralph-build " + TASK_MD.rstrip("\n")]


def test_peek_output_keeps_its_other_whitespace(run_ralph, tasks, agent):
    tasks.script(peek=[{"out": "  ## Task x \t\n"}, {"out": ""}])
    run_ralph("build", env={**tasks.env, **agent.env})
    assert agent.prompts() == ["/ralph-build   ## Task x \t"]


@pytest.mark.parametrize("answer,prompt", [
    ({"out": "", "rc": 1, "err": "Error: database is locked\n"}, "/ralph-build"),
    ({"out": "partial\n", "rc": 1}, "/ralph-build partial"),
], ids=["failed-empty", "failed-with-output"])
def test_a_failing_peek_is_transient_and_the_session_runs(run_ralph, tasks, agent, answer, prompt):
    tasks.script(peek=[answer, {"out": ""}], plan_status=REMAIN)
    proc = run_ralph("build", env={**tasks.env, **agent.env})
    assert proc.returncode == 0 and proc.stderr == ""
    assert agent.prompts() == [prompt]
    assert proc.stdout.endswith(loop(1) + "No tasks available. Exiting loop.\nderegistered ab12\n")


def test_agent_argv_is_exact_without_flags(run_ralph, tasks, agent):
    tasks.script(peek=[{"out": "x"}, {"out": ""}])
    run_ralph("build", env={**tasks.env, **agent.env})
    assert agent.calls()[0]["argv"] == ["-p", "/ralph-build x", "--output-format=stream-json", "--verbose"]


def test_agent_argv_has_danger_then_model_in_that_order(run_ralph, tasks, agent):
    tasks.script(peek=[{"out": "x"}, {"out": ""}])
    run_ralph("build", "-m", "haiku", "--danger", env={**tasks.env, **agent.env,
                                                       "CLAUDE_CODE_USE_BEDROCK": "1"})
    assert agent.calls()[0]["argv"] == [
        "-p", "/ralph-build x", "--output-format=stream-json", "--verbose",
        "--dangerously-skip-permissions", "--model", "global.anthropic.claude-haiku-4-5-20251001-v1:0"]


def test_a_prompt_with_quotes_substitutions_and_newlines_reaches_the_agent_byte_for_byte(
        run_ralph, tasks, agent):
    nasty = "## Task q\ntitle: it's \"quoted\" $(touch pwned) `id` \\n back\\slash * ?\n\n  end ; | &"
    tasks.script(peek=[{"out": nasty + "\n"}, {"out": ""}])
    proc = run_ralph("build", env={**tasks.env, **agent.env})
    assert agent.prompts() == ["/ralph-build " + nasty]
    assert not any(p.name == "pwned" for p in agent.log.parent.rglob("pwned")) and proc.returncode == 0


def test_the_agent_runs_with_stdin_devnull_in_its_own_process_group(run_ralph, tasks, agent):
    tasks.script(peek=[{"out": "x"}, {"out": ""}])
    agent.env["STUB_ACTION"] = "cat > \"$STUB_LOG.stdin\""
    proc = run_ralph("build", env={**tasks.env, **agent.env}, input="typed by a user\n")
    call = agent.calls()[0]
    assert call["pid"] == call["pgid"]
    assert (agent.log.parent / "claude-calls.jsonl.stdin").read_text() == ""
    assert proc.returncode == 0


def test_the_agent_stderr_is_passed_through(run_ralph, tasks, agent):
    tasks.script(peek=[{"out": "x"}, {"out": ""}])
    agent.env["STUB_ACTION"] = "echo 'from the agent' >&2"
    assert run_ralph("build", env={**tasks.env, **agent.env}).stderr == "from the agent\n"


@pytest.mark.parametrize("status", ["1", "3", "137"])
def test_the_agent_exit_status_is_ignored(run_ralph, tasks, agent, status):
    tasks.script(peek={"out": "x"}, plan_status=REMAIN)
    proc = run_ralph("build", "-n", "2", env={**tasks.env, **agent.env, "STUB_EXIT": status})
    assert proc.returncode == 0
    assert len(agent.calls()) == 2
    assert proc.stdout.endswith(loop(2) + "Reached max iterations: 2\nderegistered ab12\n")


def test_a_missing_claude_is_an_error_line_and_a_finished_session(run_ralph, tasks, bin_dir):
    tasks.script(peek={"out": "x"}, plan_status=REMAIN)
    proc = run_ralph("build", "-n", "1", env=tasks.env)   # no claude stub installed
    assert proc.returncode == 0
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "claude" in lines[0]
    assert ["plan-status"] in tasks.calls()
    assert proc.stdout.endswith(loop(1) + "Reached max iterations: 1\nderegistered ab12\n")


def test_crash_safety_fails_each_active_task_in_output_order_before_plan_status(run_ralph, tasks, agent):
    listing = ("## Task b/2\nid: b/2\ntitle: id: not-this\nstatus: active\n\n"
               "## Task a-1\nid: a-1\n\n## Task it's $(x)\nid: it's $(x)\n")
    tasks.script(peek=[{"out": "x"}, {"out": ""}], list={"out": listing},
                 fail=[{"out": "failed {1}\n"}, {"out": "", "rc": 1, "err": "Error: nope\n"},
                       {"out": "failed {1}\n"}])
    proc = run_ralph("build", env={**tasks.env, **agent.env})
    calls = tasks.calls()
    i = calls.index(["list", "--status", "active", "--assignee", "ab12", "--markdown"])
    assert calls[i + 1:i + 5] == [["fail", "b/2", "--reason", REASON], ["fail", "a-1", "--reason", REASON],
                                  ["fail", "it's $(x)", "--reason", REASON], ["plan-status"]]
    assert "failed b/2\nfailed it's $(x)\n" in proc.stdout and proc.stderr == ""


def test_no_active_task_means_no_fail_call(run_ralph, tasks, agent):
    tasks.script(peek=[{"out": "x"}, {"out": ""}], list={"out": "## Task a\ntitle: none\n"})
    run_ralph("build", env={**tasks.env, **agent.env})
    assert not any(c[0] == "fail" for c in tasks.calls())


PLAN_STATUS = [
    ({"out": "0 open, 0 active, 3 done, 0 blocked, 0 deleted\n"}, True),
    ({"out": "0 open, 0 active, 3 done, 2 blocked, 1 deleted"}, True),
    ({"out": "note: something\n0 open, 0 active, 1 done\n"}, True),
    ({"out": "00 open, 0 active\n"}, True),
    ({"out": "1 open, 0 active, 3 done, 0 blocked, 0 deleted\n"}, False),
    ({"out": "0 open, 1 active, 3 done, 0 blocked, 0 deleted\n"}, False),
    ({"out": "0 open, 0 active, 3 done\n", "rc": 1}, False),
    ({"out": ""}, False),
    ({"out": "garbage\n"}, False),
    ({"out": "0 open\n"}, False),
    ({"out": "open: 0, active: 0\n"}, False),
    ({"out": "0 open, 0 active\n0 open, 2 active\n"}, False),
]
PLAN_STATUS_IDS = ["all-zero", "no-newline", "leading-note", "zero-padded", "open-left", "active-left",
        "failed-call", "empty", "garbage", "no-active-count", "other-format", "two-active-counts"]


@pytest.mark.parametrize("answer,finished", PLAN_STATUS, ids=PLAN_STATUS_IDS)
def test_plan_status_decides_whether_the_loop_goes_on(run_ralph, tasks, agent, answer, finished):
    tasks.script(peek={"out": "x"}, plan_status=answer)
    proc = run_ralph("build", "-n", "1", env={**tasks.env, **agent.env})
    assert proc.returncode == 0
    if finished:
        assert proc.stdout.endswith("\nAll tasks complete. Exiting loop.\nderegistered ab12\n")
        assert "LOOP" not in proc.stdout
    else:
        assert proc.stdout.endswith(loop(1) + "Reached max iterations: 1\nderegistered ab12\n")


def test_loop_separators_count_completed_iterations_up_to_the_limit(run_ralph, tasks, agent):
    tasks.script(peek={"out": "x"}, plan_status=REMAIN)
    agent.stream(events(assistant("hi")))
    proc = run_ralph("build", "-n", "3", env={**tasks.env, **agent.env})
    assert after_banner(proc.stdout) == ("hi" + loop(1) + "hi" + loop(2) + "hi" + loop(3)
                                         + "Reached max iterations: 3\nderegistered ab12\n")
    assert len(agent.calls()) == 3
    assert tasks.calls().count(["peek", "-n", "10"]) == 3   # no peek after the limit


def test_unlimited_build_runs_until_the_backlog_is_empty(run_ralph, tasks, agent):
    tasks.script(peek=[{"out": "a"}, {"out": "b"}, {"out": "c"}, {"out": ""}], plan_status=REMAIN)
    proc = run_ralph("build", "-n", "0", env={**tasks.env, **agent.env})
    assert agent.prompts() == ["/ralph-build a", "/ralph-build b", "/ralph-build c"]
    assert proc.stdout.endswith(loop(3) + "No tasks available. Exiting loop.\nderegistered ab12\n")


def test_all_tasks_complete_ends_the_loop_after_the_session(run_ralph, tasks, agent):
    tasks.script(peek={"out": "x"}, plan_status=[REMAIN, DONE])
    proc = run_ralph("build", env={**tasks.env, **agent.env})
    assert len(agent.calls()) == 2
    assert proc.stdout.endswith(loop(1) + "All tasks complete. Exiting loop.\nderegistered ab12\n")


def test_build_mode_never_checks_the_completion_promise(run_ralph, tasks, agent):
    tasks.script(peek={"out": "x"}, plan_status=REMAIN)
    agent.stream(events(assistant("<promise>COMPLETE</promise>"), result("<promise>COMPLETE</promise>")))
    proc = run_ralph("build", "-n", "2", env={**tasks.env, **agent.env})
    assert len(agent.calls()) == 2 and "Plan complete" not in proc.stdout


def test_each_session_output_is_rendered_between_the_task_calls(run_ralph, tasks, agent):
    tasks.script(peek=[{"out": "x"}, {"out": ""}], list={"out": "id: t\n"}, plan_status=REMAIN)
    agent.stream(events(assistant("working"), result(cost=0.05, turns=2)))
    proc = run_ralph("build", env={**tasks.env, **agent.env})
    assert after_banner(proc.stdout) == (
        "working\n\u2501\u2501 Done (success) | cost: $0.05 | turns: 2 \u2501\u2501\n"
        "failed t\n" + loop(1) + "No tasks available. Exiting loop.\nderegistered ab12\n")


def test_one_log_file_per_session_under_ralph_logs(run_ralph, tasks, agent, git_repo):
    tasks.script(peek={"out": "x"}, plan_status=REMAIN)
    agent.stream(events(assistant("a")))
    run_ralph("build", "-n", "2", env={**tasks.env, **agent.env})
    logs = sorted((git_repo / ".ralph" / "logs").iterdir())
    assert len(logs) == 2 and all(p.read_bytes() == agent.stream_path.read_bytes() for p in logs)
    assert (git_repo / ".ralph" / ".gitignore").read_text() == "*\n"


# With the project's own task CLI (no RALPH_TASK_CMD): calls run in-process, same contract.

CLAIM_AND_DONE = ('id=$("$RALPH_TASK_SCRIPT" claim | sed -n "s/^id: //p"); '
                  '"$RALPH_TASK_SCRIPT" done "$id" --result \'{"commit":"abc"}\' >/dev/null')


def sync(run_task, *slugs: str) -> None:
    lines = "".join(f'{{"id": "{s}", "t": "Task {s}"}}\n' for s in slugs)
    assert run_task("plan-sync", input=lines).returncode == 0


def test_with_the_real_task_cli_the_loop_ends_when_all_tasks_are_done(run_ralph, run_task, agent):
    sync(run_task, "t-1", "t-2", "t-3")
    agent.env["STUB_ACTION"] = CLAIM_AND_DONE
    proc = run_ralph("build", env=agent.env)
    assert proc.returncode == 0, proc.stderr
    agent_id = agent.calls()[0]["env"]["RALPH_AGENT_ID"]
    assert proc.stdout.endswith(loop(2) + f"All tasks complete. Exiting loop.\nderegistered {agent_id}\n")
    assert [p.split("\n")[0] for p in agent.prompts()] == ["/ralph-build ## Task t-1",
                                                           "/ralph-build ## Task t-2",
                                                           "/ralph-build ## Task t-3"]
    assert run_task("plan-status").stdout == "0 open, 0 active, 3 done, 0 blocked, 0 deleted\n"
    assert f"{agent_id}" not in run_task("agent", "list").stdout


def test_with_the_real_task_cli_an_abandoned_task_is_failed_with_the_reason(run_ralph, run_task, agent):
    sync(run_task, "t-1")
    agent.env["STUB_ACTION"] = '"$RALPH_TASK_SCRIPT" claim >/dev/null'
    proc = run_ralph("build", "-n", "1", env=agent.env)
    assert "failed t-1\n" + loop(1) + "Reached max iterations: 1\n" in proc.stdout
    show = run_task("show", "t-1").stdout
    assert "Status:      open\n" in show and "Retries:     1\n" in show
    assert "Fail reason: session exited without completing task\n" in show


def test_with_the_real_task_cli_the_scope_and_script_are_exported(run_ralph, agent, git_repo):
    run_ralph("build", "-n", "1", env={**agent.env, "STUB_ACTION": "true"})
    # An empty backlog: no session. A task makes one.
    assert agent.calls() == []
    (git_repo / "t.jsonl").write_text('{"id": "a", "t": "A"}\n')
    run_ralph("task", "plan-sync", input=(git_repo / "t.jsonl").read_text())
    run_ralph("build", "-n", "1", env=agent.env)
    env = agent.calls()[0]["env"]
    assert (env["RALPH_SCOPE_REPO"], env["RALPH_SCOPE_BRANCH"]) == ("acme/widgets", "main")
    assert env["RALPH_TASK_SCRIPT"] == str(git_repo / ".ralph" / "bin" / "task")   # its launcher
    assert len(env["RALPH_AGENT_ID"]) == 4


def test_an_unwritable_ralph_dir_is_one_error_line_exit_8_before_any_task_call(run_ralph, tasks, agent, git_repo):
    # the run lock and state live in .ralph/ and come before `agent register`, so an
    # unusable .ralph/ stops the run before anything is written to the backlog.
    (git_repo / ".ralph").write_text("a file where the directory should be")
    tasks.script(peek={"out": "x"})
    proc = run_ralph("build", env={**tasks.env, **agent.env})
    assert proc.returncode == 8
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: cannot create ") and ".ralph" in lines[0]
    assert agent.calls() == [] and tasks.calls() == []


def test_an_unwritable_log_dir_is_one_error_line_exit_8_and_deregisters(run_ralph, tasks, agent, git_repo):
    (git_repo / ".ralph").mkdir()
    (git_repo / ".ralph" / "logs").write_text("a file where the directory should be")
    tasks.script(peek={"out": "x"})
    proc = run_ralph("build", env={**tasks.env, **agent.env})
    assert proc.returncode == 8
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: cannot ") and ".ralph" in lines[0]
    assert agent.calls() == [] and tasks.calls()[-1] == ["agent", "deregister", "ab12"]

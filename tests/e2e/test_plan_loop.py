"""Black-box: the plan loop (docs/contract/ralph-cli.md s.14) and its completion promise
(s.20.1)."""
from __future__ import annotations

import pytest

from loophelp import agent, assistant, events, result, tasks  # noqa: F401  (fixtures)

DAG = "## Task a\nid: a\ntitle: A\n\n## Task b\nid: b\ndeps: a\n"
COMPLETE = "\nPlan complete: completion promise received.\n"


def loop(n: int) -> str:
    return f"\n\n======================== LOOP {n} ========================\n"


def test_plan_runs_one_session_by_default_with_an_empty_backlog_prompt(run_ralph, tasks, agent):
    proc = run_ralph("plan", env={**tasks.env, **agent.env})
    assert proc.returncode == 0
    assert agent.prompts() == ["/ralph-plan"]
    assert tasks.calls() == [["_get-scope"], ["list", "--all", "--markdown"]]
    assert proc.stdout.endswith("\u2501\n" + loop(1) + "Reached max iterations: 1\n")


def test_plan_prompt_carries_the_whole_task_list(run_ralph, tasks, agent):
    tasks.script(list={"out": DAG + "\n"})
    run_ralph("plan", env={**tasks.env, **agent.env})
    assert agent.prompts() == ["/ralph-plan " + DAG.rstrip("\n")]
    assert agent.calls()[0]["argv"][2:] == ["--output-format=stream-json", "--verbose"]


def test_a_failing_list_call_is_ignored(run_ralph, tasks, agent):
    tasks.script(list=[{"out": "", "rc": 1, "err": "Error: not inside a git repository\n"},
                       {"out": DAG}])
    proc = run_ralph("plan", "-n", "2", env={**tasks.env, **agent.env})
    assert proc.returncode == 0 and proc.stderr == ""
    assert agent.prompts() == ["/ralph-plan", "/ralph-plan " + DAG.rstrip("\n")]


def test_plan_n_runs_n_sessions_with_a_list_call_before_each(run_ralph, tasks, agent):
    agent.stream(events(assistant("planned")))
    proc = run_ralph("plan", "-n", "3", "--danger", env={**tasks.env, **agent.env})
    assert proc.stdout.endswith("planned" + loop(1) + "planned" + loop(2) + "planned" + loop(3)
                                + "Reached max iterations: 3\n")
    assert tasks.calls() == [["_get-scope"]] + [["list", "--all", "--markdown"]] * 3
    assert all(c["argv"][4] == "--dangerously-skip-permissions" for c in agent.calls())


def test_plan_makes_no_register_crash_safety_or_plan_status_call(run_ralph, tasks, agent):
    tasks.script(list={"out": "## Task a\nid: a\nstatus: active\nassignee: ab12\n"})
    proc = run_ralph("plan", "-n", "2", env={**tasks.env, **agent.env, "RALPH_AGENT_ID": "zz99"})
    assert {c[0] for c in tasks.calls()} == {"_get-scope", "list"}
    assert "Ralph completed successfully" not in proc.stdout
    assert all(c["env"]["RALPH_AGENT_ID"] == "zz99" for c in agent.calls())


PROMISES = [
    (events(assistant("Done. <promise>COMPLETE</promise>")), [], True),
    (events(assistant("first part ", "<promise>COMPLETE</promise> more")), [], True),
    (events(assistant("<promise>COMP", "LETE</promise>")), [], True),
    (events(assistant("thinking"), result("<promise>COMPLETE</promise>")), [], True),
    (events(assistant("<promise>DONE</promise>")), ["--completion-promise", "DONE"], True),
    (events(assistant("<promise>Tastes Like Burning.</promise>")),
     ["--completion-promise", "Tastes Like Burning."], True),
    (events(assistant("<promise> COMPLETE </promise>")), [], False),
    (events(assistant("<promise>complete</promise>")), [], False),
    (events(assistant("<promise>DONE</promise>")), [], False),
    (events(assistant("<promise>COMPLETE</promise>")), ["--completion-promise", "DONE"], False),
    (events({"type": "assistant", "message": {"content": [
        {"type": "tool_use", "name": "Bash", "input": {"command": "echo '<promise>COMPLETE</promise>'"}}]}}),
     [], False),
    (events({"type": "user", "message": {"content": [
        {"type": "tool_result", "content": "<promise>COMPLETE</promise>"}]}}, assistant("ok")), [], False),
    (events(assistant("<promise>COMPLETE</promise>"), assistant("actually, more to do")), [], False),
    (events(assistant("<promise>COMPLETE</promise>"), {"type": "assistant", "message": {"content": [
        {"type": "tool_use", "name": "Read", "input": {"file_path": "x"}}]}}), [], False),
    (events({"type": "system", "subtype": "init", "prompt": "/ralph-plan <promise>COMPLETE</promise>"}),
     [], False),
    (events({"type": "user", "message": {"content": [
        {"type": "text", "text": "/ralph-plan say <promise>COMPLETE</promise>"}]}}), [], False),
    ("<promise>COMPLETE</promise>\n", [], False),
]
PROMISE_IDS = ["last-assistant-text", "across-text-blocks", "split-in-two-blocks", "result-string",
               "custom-promise", "custom-with-spaces", "inner-spaces", "lowercase", "other-text",
               "default-not-custom", "in-tool-input", "in-tool-result", "earlier-assistant-message",
               "earlier-then-tool-only-message",
               "echoed-in-system", "echoed-in-user", "plain-text-line"]


@pytest.mark.parametrize("stream,flags,stops", PROMISES, ids=PROMISE_IDS)
def test_the_completion_promise_ends_the_plan_only_when_exact_and_final(
        run_ralph, tasks, agent, stream, flags, stops):
    agent.stream(stream)
    proc = run_ralph("plan", "-n", "2", *flags, env={**tasks.env, **agent.env})
    assert proc.returncode == 0
    if stops:
        assert proc.stdout.endswith(COMPLETE) and "LOOP" not in proc.stdout
        assert len(agent.calls()) == 1
    else:
        assert "Plan complete" not in proc.stdout
        assert proc.stdout.endswith(loop(2) + "Reached max iterations: 2\n")
        assert len(agent.calls()) == 2


def test_the_promise_on_the_last_allowed_iteration_still_reports_completion(run_ralph, tasks, agent):
    agent.stream(events(assistant("<promise>COMPLETE</promise>")))
    proc = run_ralph("plan", env={**tasks.env, **agent.env})
    assert proc.stdout.endswith("<promise>COMPLETE</promise>" + COMPLETE)

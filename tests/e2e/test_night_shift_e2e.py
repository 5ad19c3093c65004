"""Black-box tests of the night shift's settings (docs/night-shift.md): a malformed pace:, an
unknown agent in agents: (or --fallback-agent), an unknown model in escalate: (or one unknown
to the agent whose list names it, an unknown agent in its mapping) are refused with
one `Error:` line, exit 1, before anything is written; and the session line names the agent
and model when the shift is on, never when it is off (the banner stays byte-exact)."""
from __future__ import annotations

import json
import time

import pytest

import treehash
from conftest import git, ignore_ralph_dir, install_stub

KNOWN = "amp, claude, codex, gemini, opencode, pi"
MODELS = "haiku, opus, opus-4.5, opus-4.6, sonnet"
CODEX_MODELS = "gpt-5, gpt-5-codex, gpt-5-mini"


@pytest.mark.parametrize("args,yml,message", [
    (("--pace", "80"), "", "--pace must be a percentage from 1% to 100% (e.g. 80%), got '80'"),
    (("--pace", "120%"), "",
     "--pace must be a percentage from 1% to 100% (e.g. 80%), got '120%'"),
    ((), "pace: lots\n",
     "ralph.yml: pace must be a percentage from 1% to 100% (e.g. 80%), got 'lots'"),
    ((), "agents: [claude, codx]\n",
     f"ralph.yml: agents must be agents ralph knows ({KNOWN}); not 'codx', "
     "got ['claude', 'codx']"),
    (("--fallback-agent", "codex,cursor"), "",
     f"--fallback-agent must be agents ralph knows ({KNOWN}); not 'cursor', "
     "got ('codex', 'cursor')"),
    ((), "escalate: [haiku, sonet]\n",
     f"escalate: 'sonet' is no model of claude (models.json's claude models: {MODELS}, or a "
     "full claude-... id)"),
    (("--agent", "codex"), "escalate: [haiku, sonnet]\n",
     f"escalate: 'haiku' is no model of codex (models.json's codex models: {CODEX_MODELS})"),
    ((), "escalate: {claude: [haiku], codx: [gpt-5]}\n",
     f"ralph.yml: escalate must be agents ralph knows ({KNOWN}); not 'codx', "
     "got {'claude': ['haiku'], 'codx': ['gpt-5']}"),
    (("--fallback-agent", "codex"), "escalate: {claude: [haiku], codex: [gpt-5, opus]}\n",
     f"escalate: 'opus' is no model of codex (models.json's codex models: {CODEX_MODELS})"),
    ((), "escalate: {codex: gpt-5}\n",
     "ralph.yml: escalate must be a list for 'codex' (e.g. codex: [a, b]), "
     "got {'codex': 'gpt-5'}"),
    ((), "escalate: {claude: [haiku], opencode: [anthropic/claude-sonnet-4-5]}\n",
     "escalate: models.json lists no models of agent 'opencode' (add them with \"agent\": "
     "\"opencode\", or drop it from escalate:)"),
    ((), "escalate: {amp: [smart]}\n",
     "escalate: agent 'amp' takes no model (drop it from escalate:)"),
], ids=["pace-no-percent", "pace-over-100", "pace-yml", "agents-yml", "fallback-flag",
        "escalate-yml", "escalate-other-agent", "escalate-unknown-agent",
        "escalate-model-of-another-agent", "escalate-not-a-list", "escalate-agent-no-models",
        "escalate-agent-takes-no-model"])
def test_a_bad_night_shift_setting_is_one_error_line_exit_1_and_nothing_written(
        git_repo, run_ralph, bin_dir, args, yml, message):
    install_stub(bin_dir)
    if yml:
        (git_repo / "ralph.yml").write_text(yml)
    before = treehash.snapshot(git_repo)
    result = run_ralph("build", *args)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", f"Error: {message}\n")
    assert treehash.diff(before, treehash.snapshot(git_repo)) == []


DONE = r"""
tid=$(cat "$RALPH_FROZEN_IDS_FILE")
echo "$tid" > "out-$tid.txt"
git add -A >/dev/null && git commit -qm "work on $tid" >/dev/null
"$RALPH_TASK_SCRIPT" done "$tid" >/dev/null
"""


def test_parallel_sessions_hand_a_usage_limit_to_the_fallback_agent_without_waiting(
        git_repo, run_ralph, run_task, bin_dir, base_env, tmp_path):
    install_stub(bin_dir, "claude", "claude-limit")          # claude: always limited
    install_stub(bin_dir, "codex", "agent_cli")
    ignore_ralph_dir(git_repo, base_env)
    for tid in ("t1", "t2"):
        assert run_task("create", tid, f"Task {tid}", "-c", f"component:{tid}").returncode == 0
    log = tmp_path / "calls.jsonl"
    proc = run_ralph("build", "--parallel", "2", "--fallback-agent", "codex",
                     env={"STUB_LIMIT_KIND": "event", "STUB_ACTION": DONE, "STUB_LOG": str(log)},
                     timeout=90)
    assert proc.returncode == 0, proc.stderr
    tasks = {t["id"]: t["status"] for t in map(json.loads, run_task("_export-json").stdout
                                               .splitlines())}
    assert tasks == {"t1": "done", "t2": "done"}, proc.stdout + proc.stderr
    assert "Fallback: claude is limited until " in proc.stderr
    assert "Usage limit: waiting" not in proc.stdout
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert {c.get("prog", "claude") for c in calls} == {"claude", "codex"}
    assert sorted(c["env"]["RALPH_FROZEN_IDS_FILE"].rsplit("-", 1)[1]
                  for c in calls if c.get("prog") == "codex") == ["t1", "t2"]


def test_a_fallback_agent_not_installed_is_refused_before_the_first_session(
        git_repo, run_ralph, run_task, bin_dir, base_env):
    install_stub(bin_dir)
    assert run_task("create", "t1", "Task t1").returncode == 0
    result = run_ralph("build", "--fallback-agent", "gemini",
                       env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "Error: cannot run the fallback agent gemini: 'gemini' is not on PATH; install it, or "
        "drop it from agents: (--fallback-agent)")
    assert not (git_repo / ".ralph" / "runs").exists()


ESCALATED = r"""
"$RALPH_TASK_SCRIPT" done t1 >/dev/null 2>&1 || {
  tid=$(cat "$RALPH_FROZEN_IDS_FILE"); "$RALPH_TASK_SCRIPT" done "$tid" >/dev/null; }
"""


@pytest.mark.parametrize("mode", [("--assign",), ("--parallel", "2")], ids=["assign", "parallel"])
def test_a_claimed_task_that_failed_before_gets_the_escalated_model(
        git_repo, run_ralph, run_task, bin_dir, base_env, tmp_path, mode):
    install_stub(bin_dir)
    ignore_ralph_dir(git_repo, base_env)
    assert run_task("create", "t1", "Task t1").returncode == 0
    for _ in range(2):                        # two failed attempts in earlier runs
        assert run_task("claim", "--agent", "earlier").returncode == 0
        assert run_task("fail", "t1", "--reason", "tests fail").returncode == 0
    (git_repo / "ralph.yml").write_text("escalate: [haiku, sonnet, opus]\n")
    log = tmp_path / "calls.jsonl"
    result = run_ralph("build", *mode, "--max-attempts", "5",
                       env={"STUB_LOG": str(log), "STUB_ACTION": ESCALATED}, timeout=90)
    assert result.returncode == 0, result.stderr
    (call,) = [json.loads(line) for line in log.read_text().splitlines()]
    argv = call["argv"]
    assert argv[argv.index("--model") + 1] == "opus"
    assert "Session 1: agent claude, model opus (escalated: its task failed 2 times)" in \
        result.stderr


# codex exec --json at its usage limit: the turn fails with the message (no reset named)
CODEX_LIMITED = """#!/bin/sh
echo '{"type":"thread.started","thread_id":"t"}'
echo '{"type":"turn.started"}'
echo '{"type":"turn.failed","error":{"message":"You'"'"'ve hit your usage limit."}}'
exit 1
"""
CLAIM_AND_FINISH = ('id=$("$RALPH_TASK_SCRIPT" claim | sed -n "s/^id: //p" | head -n 1); '
                    '"$RALPH_TASK_SCRIPT" done "$id" >/dev/null')


def test_with_every_agent_limited_the_run_waits_for_the_first_one_free_not_the_last_hit(
        git_repo, run_ralph, run_task, bin_dir, base_env, tmp_path):
    """claude's limit resets in a minute, codex's (no reset named: --limit-default-wait) in
    five hours: the wait is the minute (simulated), within --max-limit-wait 1h."""
    start = int(time.time())        # the test clock starts at the wall clock's now: a limit
    clock = tmp_path / "clock"      # without a reset is timed from the wall clock
    clock.write_text(f"{start}\n")
    install_stub(bin_dir, "claude", "claude-limit")
    codex = bin_dir / "codex"
    codex.write_text(CODEX_LIMITED)
    codex.chmod(0o755)
    assert run_task("create", "t1", "Task t1").returncode == 0
    result = run_ralph(
        "build", "--fallback-agent", "codex", "--limit-default-wait", "5h",
        "--max-limit-wait", "1h", "--limit-wait-margin", "0",
        env={"RALPH_TEST_CLOCK_FILE": str(clock), "STUB_LIMIT_KIND": "event",
             "STUB_LIMIT_TIMES": "1", "STUB_LIMIT_STATE": str(tmp_path / "calls"),
             "STUB_LIMIT_RESETS_AT": str(start + 60), "STUB_ACTION": CLAIM_AND_FINISH},
        timeout=90)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Usage limit: waiting until " in result.stdout
    assert [line for line in result.stderr.splitlines() if line.startswith("Session ")] == [
        "Session 1: agent claude, model default", "Session 2: agent codex, model default",
        "Session 3: agent claude, model default"]
    assert "Fallback: claude is back: its usage limit has reset" in result.stderr
    assert 60 <= float(clock.read_text()) - start < 3600          # simulated, the minute
    assert json.loads(run_task("_export-json").stdout.splitlines()[0])["status"] == "done"


def test_a_limit_an_earlier_run_left_is_handed_to_the_fallback_agent_without_a_wait(
        git_repo, run_ralph, run_task, bin_dir, base_env, tmp_path):
    install_stub(bin_dir, "claude", "claude-limit")
    install_stub(bin_dir, "codex", "agent_cli")
    assert run_task("create", "t1", "Task t1").returncode == 0
    limited = {"STUB_LIMIT_KIND": "event",
               "STUB_LIMIT_RESETS_AT": str(int(time.time()) + 3 * 3600)}
    first = run_ralph("build", "-n", "1", env=limited)          # not waited out: -n 1
    assert first.returncode == 0 and "Usage limit: not waited out" in first.stdout
    second = run_ralph("build", "--fallback-agent", "codex",
                       env={**limited, "STUB_ACTION": CLAIM_AND_FINISH}, timeout=60)
    assert second.returncode == 0, second.stderr
    assert "Usage limit from an earlier run: resume time " in second.stdout
    assert "Usage limit: waiting" not in second.stdout
    assert "; codex takes over" in second.stderr
    assert [line for line in second.stderr.splitlines() if line.startswith("Session ")] == [
        "Session 1: agent codex, model default"]
    assert json.loads(run_task("_export-json").stdout.splitlines()[0])["status"] == "done"


def test_a_parallel_run_paces_once_its_sessions_have_ended_on_simulated_time(
        git_repo, run_ralph, run_task, bin_dir, base_env, tmp_path):
    start = int(time.time())
    clock = tmp_path / "clock"
    clock.write_text(f"{start}\n")
    stream = tmp_path / "stream.jsonl"
    stream.write_text(json.dumps({"type": "rate_limit_event", "rate_limit_info": {
        "status": "allowed", "unifiedWindows": {
            "five_hour": {"utilization": 0.6, "resetsAt": start + 4 * 3600}}}}) + "\n" +
        json.dumps({"type": "result", "subtype": "success", "is_error": False,
                    "result": "ok", "num_turns": 1, "total_cost_usd": 0.01}) + "\n")
    install_stub(bin_dir)
    ignore_ralph_dir(git_repo, base_env)
    for tid in ("t1", "t2", "t3"):
        assert run_task("create", tid, f"Task {tid}", "-c", f"component:{tid}").returncode == 0
    result = run_ralph("build", "--parallel", "2", "--pace", "80%",
                       env={"RALPH_TEST_CLOCK_FILE": str(clock), "STUB_STREAM": str(stream),
                            "STUB_ACTION": DONE}, timeout=90)
    assert result.returncode == 0, result.stderr
    waits = [line for line in result.stderr.splitlines() if line.startswith("Pace: waiting")]
    assert len(waits) == 1 and "claude's five_hour 60% used, 20% of it gone" in waits[0]
    moved = float(clock.read_text()) - start
    assert 2.75 * 3600 - 60 <= moved <= 2.75 * 3600 + 60
    tasks = {t["id"]: t["status"] for t in map(json.loads, run_task("_export-json").stdout
                                               .splitlines())}
    assert tasks == {"t1": "done", "t2": "done", "t3": "done"}


# codex's attempts at t1: the first two fail it (its retry_count counts them), the third
# finishes it
CODEX_FAILS_TWICE = """
n=$(($(cat "$ATTEMPTS" 2>/dev/null || echo 0) + 1)); echo "$n" > "$ATTEMPTS"
if [ "$n" -le 2 ]; then "$RALPH_TASK_SCRIPT" fail t1 --reason "tests fail" >/dev/null
else "$RALPH_TASK_SCRIPT" done t1 >/dev/null; fi
"""


def test_a_fallback_agent_escalates_a_failing_task_by_its_own_list(
        git_repo, run_ralph, run_task, bin_dir, base_env, tmp_path):
    """claude is limited from its first session; codex takes t1 over, and each of its
    attempts after a failure gets the next model of codex's list (`-m`, as codex takes it)."""
    install_stub(bin_dir, "claude", "claude-limit")
    install_stub(bin_dir, "codex", "agent_cli")
    ignore_ralph_dir(git_repo, base_env)
    assert run_task("create", "t1", "Task t1").returncode == 0
    (git_repo / "ralph.yml").write_text(
        "agents: [codex]\n"
        "escalate:\n  claude: [haiku, opus]\n  codex: [gpt-5-mini, gpt-5]\n")
    log = tmp_path / "calls.jsonl"
    result = run_ralph("build", "--assign", "--max-attempts", "5",
                       env={"STUB_LIMIT_KIND": "event", "STUB_LOG": str(log),
                            "STUB_ACTION": CODEX_FAILS_TWICE,
                            "ATTEMPTS": str(tmp_path / "attempts")}, timeout=90)
    assert result.returncode == 0, result.stdout + result.stderr
    shown = run_task("show", "t1").stdout
    assert "Status:      done" in shown and "Retries:     2" in shown, shown
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    claude = [c["argv"] for c in calls if c.get("prog") is None]
    codex = [c["argv"] for c in calls if c.get("prog") == "codex"]
    assert [a[a.index("--model") + 1] for a in claude] == ["haiku"]
    assert [a[a.index("-m") + 1] for a in codex] == ["gpt-5-mini", "gpt-5", "gpt-5"]
    assert "Session 3: agent codex, model gpt-5 (escalated: its task failed 1 time)" in \
        result.stderr


def test_a_parallel_session_handed_to_the_fallback_agent_gets_its_escalated_model(
        git_repo, run_ralph, run_task, bin_dir, base_env, tmp_path):
    """--parallel retries no task within a run: t1 failed once in an earlier run, so claude's
    session asks for opus and codex's, after claude's limit, for gpt-5."""
    install_stub(bin_dir, "claude", "claude-limit")
    install_stub(bin_dir, "codex", "agent_cli")
    ignore_ralph_dir(git_repo, base_env)
    assert run_task("create", "t1", "Task t1").returncode == 0
    assert run_task("claim", "--agent", "earlier").returncode == 0
    assert run_task("fail", "t1", "--reason", "tests fail").returncode == 0
    (git_repo / "ralph.yml").write_text(
        "agents: [codex]\nescalate: {claude: [haiku, opus], codex: [gpt-5-mini, gpt-5]}\n")
    log = tmp_path / "calls.jsonl"
    result = run_ralph("build", "--parallel", "2",
                       env={"STUB_LIMIT_KIND": "event", "STUB_LOG": str(log),
                            "STUB_ACTION": DONE}, timeout=90)
    assert result.returncode == 0, result.stdout + result.stderr
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert [c["argv"][c["argv"].index("--model") + 1] for c in calls
            if c.get("prog") is None] == ["opus"]
    assert [c["argv"][c["argv"].index("-m") + 1] for c in calls
            if c.get("prog") == "codex"] == ["gpt-5"]
    assert "[t1] Session 2: agent codex, model gpt-5 (escalated: its task failed 1 time)" in \
        result.stderr


def test_a_run_of_codex_escalates_by_a_plain_list_of_codex_models(
        git_repo, run_ralph, run_task, bin_dir, base_env, tmp_path):
    install_stub(bin_dir, "codex", "agent_cli")
    ignore_ralph_dir(git_repo, base_env)
    assert run_task("create", "t1", "Task t1").returncode == 0
    assert run_task("claim", "--agent", "earlier").returncode == 0   # failed in an earlier run
    assert run_task("fail", "t1", "--reason", "tests fail").returncode == 0
    (git_repo / "ralph.yml").write_text("escalate: [gpt-5-mini, gpt-5]\n")
    log = tmp_path / "calls.jsonl"
    result = run_ralph("build", "--agent", "codex", "--assign",
                       env={"STUB_LOG": str(log), "STUB_ACTION": ESCALATED}, timeout=90)
    assert result.returncode == 0, result.stderr
    (call,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert call["argv"][call["argv"].index("-m") + 1] == "gpt-5"
    assert "Session 1: agent codex, model gpt-5 (escalated: its task failed 1 time)" in \
        result.stderr

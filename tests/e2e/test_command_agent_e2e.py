"""Black-box: a `command` agent (`--agent command --agent-cmd X`) has no result event to emit,
so its exit 0 is a success, judged like any session by what it did to the backlog, and a
non-zero exit stays an agent error; the report names the kind of agent each session was.
In the single loop and under `--parallel 2`, with the real task CLI and a real git repo."""
from __future__ import annotations

import json

import pytest

from conftest import ignore_ralph_dir, read_jsonl

# Takes the task ralph claimed for it (--parallel) or claims one itself (the single loop),
# commits its work, marks the task done and exits with $AGENT_EXIT (0 unless set); with a
# non-zero exit it leaves its task as it is.
AGENT = r"""#!/bin/sh
cat > /dev/null
tid=$(cat "$RALPH_FROZEN_IDS_FILE" 2>/dev/null)
[ -n "$tid" ] || tid=$("$RALPH_TASK_SCRIPT" claim | sed -n 's/^id: //p' | head -1)
echo "working on $tid"
[ "${AGENT_EXIT:-0}" = 0 ] || exit "$AGENT_EXIT"
echo "$tid" > "out-$tid.txt"
git add -A >/dev/null && git commit -qm "work on $tid" >/dev/null
"$RALPH_TASK_SCRIPT" done "$tid" >/dev/null
"""
LOOPS = pytest.mark.parametrize("loop", [[], ["--parallel", "2"]], ids=["single", "parallel"])


@pytest.fixture
def command_agent(git_repo, base_env, bin_dir, run_task):
    """Two open tasks of different components (they may run at once) and the agent's script."""
    ignore_ralph_dir(git_repo, base_env)
    for tid, component in (("c1", "a"), ("c2", "b")):
        assert run_task("create", tid, f"Task {tid}", "-c", f"component:{component}"
                        ).returncode == 0
    script = bin_dir / "mytool"
    script.write_text(AGENT)
    script.chmod(0o755)
    return ["--agent", "command", "--agent-cmd", "mytool --stdin"]


def session_ends(repo) -> list[dict]:
    [run] = (repo / ".ralph" / "runs").iterdir()
    return [e for e in read_jsonl(run / "events.jsonl") if e.get("event") == "session_end"]


@LOOPS
def test_a_command_agent_that_exits_0_having_done_its_task_is_a_completed_success(
        git_repo, run_ralph, run_task, command_agent, loop):
    proc = run_ralph("build", "-n", "2", *loop, *command_agent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ends = session_ends(git_repo)
    assert sorted(e["task"] for e in ends) == ["c1", "c2"]
    assert {(e["outcome"], e["class"], e["exit_code"]) for e in ends} == {
        ("completed", "success", 0)}, ends
    statuses = {t["id"]: t["status"] for t in map(json.loads,
                                                  run_task("_export-json").stdout.splitlines())}
    assert statuses == {"c1": "done", "c2": "done"}
    report = run_ralph("report")
    assert "Sessions:   2 (success 2)" in report.stdout, report.stdout
    assert "\nAgent CLI:  command (2 sessions)\n" in report.stdout
    assert "agent_error" not in report.stdout
    sessions = json.loads(run_ralph("report", "--json").stdout)["sessions"]
    assert sorted((s["tasks"], s["outcome"], s["klass"], s["agent"]) for s in sessions) == [
        (["c1"], "completed", "success", "command"), (["c2"], "completed", "success", "command")]
    md = run_ralph("report", "--md").stdout
    assert " | command | c1 | success | " in md, md


@LOOPS
def test_a_command_agent_that_exits_3_is_an_agent_error(git_repo, run_ralph, command_agent,
                                                        loop):
    proc = run_ralph("build", "-n", "1", *loop, *command_agent, env={"AGENT_EXIT": "3"})
    [end] = session_ends(git_repo)
    assert (end["class"], end["detail"], end["exit_code"]) == (
        "agent_error", "agent exited with status 3", 3), end
    assert end["outcome"] == "failed"
    assert "agent_error" in run_ralph("report").stdout
    assert proc.returncode in (0, 1, 6), proc.stderr

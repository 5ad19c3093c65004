"""Black-box, with the real `claude` (the pinned @anthropic-ai/claude-code) inside
`--sandbox bwrap`, driven through the stand-in Messages API on 127.0.0.1 (standin.py): one
build session as the skill runs it (claim, commit, done) with `--danger`, while the model also
tries to read a key the user's home holds. The CLI runs as root here: it accepts
--dangerously-skip-permissions only because the sandbox sets IS_SANDBOX=1 inside."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from realcli import claude_env, events, needs_clis, ralph_install, tasks_of
from standin import StandIn, Text, bash, tool_results

from sandboxhelp import needs_bwrap

pytestmark = [needs_clis, needs_bwrap, pytest.mark.timeout(240)]

WORK = """set -e
cat ~/.ssh/id_ed25519 2>&1 || echo "NO KEY HERE"
id=$("$RALPH_TASK_SCRIPT" claim | sed -n 's/^id: //p' | head -n 1)
echo "built $id" > "work-$id.txt"
git add "work-$id.txt"
git commit -q -m "Build $id"
"$RALPH_TASK_SCRIPT" done "$id" --result '{"commit":"x"}'
echo "FINISHED $id IS_SANDBOX=$IS_SANDBOX"
"""


def builder(body: dict, n: int):
    if tool_results(body):
        return Text("Task finished.")
    return bash(WORK, "Working on the next task.")


def test_a_build_session_of_the_real_claude_runs_inside_bwrap_with_danger(
        git_repo, run_ralph, run_task, base_env, home):
    rows = json.dumps({"id": "a", "t": "Task a"}) + "\n"
    assert run_task("plan-sync", input=rows).returncode == 0
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY----- SECRET\n")
    (home / ".claude.json").write_text("{}\n")          # the CLI's own settings file
    ralph_install(git_repo, base_env)
    with StandIn(builder) as api:
        env = claude_env(base_env, home, api.url, IS_SANDBOX="")    # not set on the host
        proc = run_ralph("build", "--danger", "--sandbox", "bwrap", env=env, timeout=200)
    assert proc.returncode == 0, proc.stderr
    assert "\nSandbox: bwrap\n" in proc.stdout
    assert "\nAll tasks complete. Exiting loop.\n" in proc.stdout
    assert {t["id"]: t["status"] for t in tasks_of(run_task).values()} == {"a": "done"}
    (result,) = [r for req in api.agent_turns() for r in tool_results(req["body"])]
    assert "FINISHED a IS_SANDBOX=1" in result
    assert "NO KEY HERE" in result                  # the model never saw the key
    assert all("SECRET" not in json.dumps(req["body"]) for req in api.requests)
    log = subprocess.run(["git", "log", "--format=%s", "-1"], cwd=git_repo, text=True,
                         capture_output=True, check=True).stdout
    assert log == "Build a\n"
    assert [(e["class"], e["sandbox"]) for e in events(git_repo, "session_end")] == [
        ("success", "bwrap")]
    # the CLI's own state went through to the user's ~/.claude, not lost with the tmpfs
    assert list((home / ".claude" / "projects").iterdir())     # the session's transcript

"""Black-box: each session's record names the release of the agent CLI that ran it, in the
single loop and under --parallel, and `ralph report` shows it: the release Claude Code's
`system/init` event names, or for a CLI whose stream names none (codex) the version of the npm
package that installed the binary on PATH, read without running the CLI once more."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT, ignore_ralph_dir, install_stub, read_jsonl

# The task handed to the session (--parallel), else one claimed; committed and done.
ACTION = r"""
if [ -s "${RALPH_FROZEN_IDS_FILE:-/nonexistent}" ]; then tid=$(cat "$RALPH_FROZEN_IDS_FILE")
else tid=$("$RALPH_TASK_SCRIPT" claim | sed -n 's/^id: //p' | head -n 1); fi
echo "$tid" > "out-$tid.txt"
git add -A >/dev/null && git commit -qm "work on $tid" >/dev/null
"$RALPH_TASK_SCRIPT" done "$tid" >/dev/null
"""
INIT = {"type": "system", "subtype": "init", "session_id": "s", "tools": [],
        "claude_code_version": "2.1.332"}
RESULT = {"type": "result", "subtype": "success", "is_error": False, "num_turns": 1,
          "total_cost_usd": 0.01, "result": "ok"}
CODEX = [{"type": "thread.started", "thread_id": "t"}, {"type": "turn.started"},
         {"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": 2}}]


def stream(tmp_path: Path, *events: dict) -> str:
    path = tmp_path / "stream.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return str(path)


def session_ends(repo: Path) -> list[dict]:
    [run] = (repo / ".ralph" / "runs").iterdir()
    return [e for e in read_jsonl(run / "events.jsonl") if e["event"] == "session_end"]


@pytest.fixture
def two_tasks(git_repo, base_env, run_task):
    ignore_ralph_dir(git_repo, base_env)
    for tid in ("a", "b"):
        assert run_task("create", tid, f"Task {tid}").returncode == 0
    return git_repo


@pytest.mark.parametrize("loop", [(), ("--parallel", "2")], ids=["single", "parallel"])
def test_each_session_names_the_claude_code_release_its_init_event_gave(
        two_tasks, run_ralph, bin_dir, tmp_path, loop):
    install_stub(bin_dir)
    env = {"STUB_STREAM": stream(tmp_path, INIT, RESULT), "STUB_ACTION": ACTION}
    proc = run_ralph("build", "-n", "2", *loop, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [e.get("agent_version") for e in session_ends(two_tasks)] == ["2.1.332"] * 2
    report = run_ralph("report")
    assert "\nAgent CLI:  claude 2.1.332 (2 sessions)\n" in report.stdout, report.stdout
    [run] = (two_tasks / ".ralph" / "runs").iterdir()
    assert "| claude 2.1.332 |" in (run / "report.md").read_text()


def test_a_cli_whose_stream_names_no_release_is_named_by_its_npm_package_without_a_call_more(
        two_tasks, run_ralph, base_env, tmp_path):
    package = tmp_path / "npm" / "node_modules" / "@openai" / "codex"
    (package / "bin").mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "stubs" / "agent_cli", package / "bin" / "codex.js")
    (package / "package.json").write_text(json.dumps({
        "name": "@openai/codex", "version": "0.171.0", "bin": {"codex": "bin/codex.js"}}))
    dot_bin = tmp_path / "npm" / "node_modules" / ".bin"
    dot_bin.mkdir()
    (dot_bin / "codex").symlink_to("../@openai/codex/bin/codex.js")
    calls = tmp_path / "calls.jsonl"
    env = {"STUB_STREAM": stream(tmp_path, *CODEX), "STUB_ACTION": ACTION,
           "STUB_LOG": str(calls), "PATH": f"{dot_bin}:{base_env['PATH']}"}
    proc = run_ralph("build", "--agent", "codex", "-n", "2", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [e.get("agent_version") for e in session_ends(two_tasks)] == ["0.171.0"] * 2
    assert [c["argv"][:2] for c in read_jsonl(calls)] == [["exec", "--json"]] * 2  # no --version
    assert "\nAgent CLI:  codex 0.171.0 (2 sessions)\n" in run_ralph("report").stdout


def test_a_stub_outside_any_npm_package_names_no_release_and_the_report_its_kind_alone(
        two_tasks, run_ralph, bin_dir, tmp_path):
    install_stub(bin_dir)
    proc = run_ralph("build", "-n", "1", env={"STUB_STREAM": stream(tmp_path, RESULT),
                                              "STUB_ACTION": ACTION})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [end] = session_ends(two_tasks)
    assert "agent_version" not in end
    assert "\nAgent CLI:  claude (1 session)\n" in run_ralph("report").stdout

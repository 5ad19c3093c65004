"""A feature is one module and one registration line (loop.features.REGISTRY): registered
once, its hooks run for every session of the single loop and of a --parallel run, because both
run sessions through the one lifecycle (loop.sessions). The probe feature (tests/
feature_probe.py) records each hook; the stub agent records what it was given."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import ignore_ralph_dir, install_stub, read_jsonl, run_process

PROBE = Path(__file__).resolve().parents[1] / "feature_probe.py"

# The agent: its task is the one in RALPH_FROZEN_IDS_FILE under --parallel, else the first it
# can claim; it says whether the probe's environment reached it, commits, marks the task done.
ACTION = r"""
if [ -n "$RALPH_FROZEN_IDS_FILE" ] && [ -f "$RALPH_FROZEN_IDS_FILE" ]; then
  tid=$(cat "$RALPH_FROZEN_IDS_FILE")
else
  tid=$("$RALPH_TASK_SCRIPT" claim --agent "$RALPH_AGENT_ID" | sed -n 's/^## Task //p' | head -1)
fi
echo "{\"task\": \"$tid\", \"probe\": \"$PROBE_SEEN\", \"cwd\": \"$PWD\"}" >> "$AGENT_LOG"
echo "$tid" > "out-$tid.txt"
git add -A >/dev/null && git commit -qm "work on $tid" >/dev/null
"$RALPH_TASK_SCRIPT" done "$tid" >/dev/null
"""


@pytest.mark.parametrize("flags", [[], ["--parallel", "2"]], ids=["single", "parallel"])
def test_a_feature_registered_once_runs_for_every_session_of_both_loops(
        git_repo, base_env, bin_dir, run_task, tmp_path, flags):
    install_stub(bin_dir)
    ignore_ralph_dir(git_repo, base_env)
    for tid in ("t1", "t2"):
        assert run_task("create", tid, f"Task {tid}", "-c", f"component:{tid}").returncode == 0
    env = {**base_env, "STUB_ACTION": ACTION, "PROBE_LOG": str(tmp_path / "probe.jsonl"),
           "AGENT_LOG": str(tmp_path / "agent.jsonl")}
    proc = run_process([sys.executable, str(PROBE), "build", "-n", "2", *flags], cwd=git_repo,
                       env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert all("Status:      done" in run_task("show", tid).stdout for tid in ("t1", "t2"))

    hooks = read_jsonl(tmp_path / "probe.jsonl")
    assert hooks[0]["hook"] == "start" and hooks[-1]["hook"] == "finish"
    per_session = [h for h in hooks if h["hook"] in ("prepare", "after_session", "record")]
    by_log: dict[str, list[str]] = {}
    for h in per_session:
        by_log.setdefault(h["log"], []).append(h["hook"])
    assert list(by_log.values()) == [["prepare", "after_session", "record"]] * 2
    ended = [h for h in per_session if h["hook"] == "after_session"]
    assert all(h["outcome"] is not None for h in ended)     # classified before the hook
    agents = read_jsonl(tmp_path / "agent.jsonl")
    assert sorted(a["task"] for a in agents) == ["t1", "t2"]
    assert all(a["probe"] == "yes" for a in agents)         # prepare reached the agent's env
    if flags:                                               # each in its own worktree
        assert all(h["worktree"] and h["task"] in ("t1", "t2") for h in per_session)
        assert {a["cwd"] for a in agents} == {h["cwd"] for h in per_session}
        assert all(a["cwd"] != str(git_repo) for a in agents)
    else:                                                   # in the checkout; the agent claims
        assert not any(h["worktree"] or h["cwd"] for h in per_session)
        assert all(a["cwd"] == str(git_repo) for a in agents)


# The agent asks the run to hold (the probe feature's run-level hook) once its task is done.
HOLD_ACTION = ACTION + 'touch "$PROBE_HOLD"\n'


@pytest.mark.parametrize("flags", [[], ["--parallel", "2"]], ids=["single", "parallel"])
def test_a_features_run_level_hold_stops_both_loops(
        git_repo, base_env, bin_dir, run_task, tmp_path, flags):
    install_stub(bin_dir)
    ignore_ralph_dir(git_repo, base_env)
    # One component: a --parallel run starts one session at a time, so the hold comes
    # before the second one starts.
    for tid in ("t1", "t2", "t3"):
        assert run_task("create", tid, f"Task {tid}", "-c", "component:one").returncode == 0
    env = {**base_env, "STUB_ACTION": HOLD_ACTION, "PROBE_LOG": str(tmp_path / "probe.jsonl"),
           "AGENT_LOG": str(tmp_path / "agent.jsonl"), "PROBE_HOLD": str(tmp_path / "hold")}
    proc = run_process([sys.executable, str(PROBE), "build", "-n", "3", *flags], cwd=git_repo,
                       env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Stopped: probe hold" in proc.stdout.splitlines()     # its line ends the run
    assert len(read_jsonl(tmp_path / "agent.jsonl")) == 1       # no session after the hold
    statuses = [run_task("show", tid).stdout for tid in ("t1", "t2", "t3")]
    assert sum("Status:      done" in text for text in statuses) == 1

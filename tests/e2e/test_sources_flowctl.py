"""Black-box: `ralph build --tasks flowctl` over the real flowctl (flow-next, vendored) with a
stub agent that claims and finishes through $RALPH_TASK_SCRIPT; flowctl itself reports the
outcome. flowctl takes a few tenths of a second per call even with its bytecode cached
(sourcehelp.flowctl_launcher), so each test keeps its backlog small."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

import treehash
from conftest import TASK, git
from sourcehelp import (FLOWCTL, agent_env, as_sessions,  # noqa: F401
                        assert_another_agents_calls_refused, claims, commit_all,
                        flowctl_launcher, tool)


@pytest.fixture
def flow(git_repo, base_env, flowctl_launcher):
    (git_repo / ".gitignore").write_text(".ralph/\n")

    def flowctl(*args: str) -> dict:
        proc = tool([flowctl_launcher, *args, "--json"], git_repo, base_env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return json.loads(proc.stdout)
    flowctl("init")
    flowctl.spec = flowctl("spec", "create", "--title", "Widgets")["id"]
    flowctl.env = {"FLOWCTL": str(flowctl_launcher)}
    return flowctl


def add(flow, title: str, *deps: str) -> str:
    extra = ["--deps", ",".join(deps)] if deps else []
    return flow("task", "create", "--spec", flow.spec, "--title", title, *extra)["id"]


def statuses(flow) -> dict[str, str]:
    return {t["id"]: t["status"] for t in flow("tasks")["tasks"]}


def test_a_build_loop_marks_every_task_done_with_its_commit_as_evidence(
        run_ralph, flow, git_repo, base_env, agent_env, tmp_path):
    first = add(flow, "First")
    second = add(flow, "Second", first)
    commit_all(git_repo, base_env, "flow")
    proc = run_ralph("build", "--tasks", "flowctl", env={**agent_env, **flow.env}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "All tasks complete. Exiting loop." in proc.stdout
    assert statuses(flow) == {first: "done", second: "done"}
    assert claims(tmp_path) == [first, second]
    shown = flow("show", first)
    head = git(git_repo, "log", "--format=%H", "--grep", f"work on {first}", env=base_env).strip()
    assert shown["evidence"]["commits"] == [head]


def test_a_failing_session_blocks_its_task_with_the_reason(
        run_ralph, flow, git_repo, base_env, agent_env):
    """Through the vendored `flowctl` wrapper itself, as users have it."""
    only = add(flow, "Only")
    commit_all(git_repo, base_env, "flow")
    proc = run_ralph("build", "--tasks", "flowctl", "-n", "1",
                     env={**agent_env, "FLOWCTL": str(FLOWCTL), "STUB_FAIL": "1"}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    shown = flow("show", only)
    assert shown["status"] == "blocked"
    assert shown["blocked_reason"].strip() == "session exited without completing task"
    # flowctl's own block: released with flowctl, so `task show` names no ralph command
    held = run_ralph("task", "show", only, env={**flow.env, "RALPH_TASKS": "flowctl"}).stdout
    assert "\nHeld:        session exited without completing task\n" in held


def test_eight_concurrent_claims_take_each_task_exactly_once(flow, git_repo, base_env):
    ids = [add(flow, f"T{n}") for n in range(3)]
    env = {**base_env, **flow.env, "RALPH_TASKS": "flowctl"}
    procs = [subprocess.Popen([sys.executable, str(TASK), "claim", "--agent", f"a{n}"],
                              cwd=git_repo, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for n in range(8)]
    try:
        outs = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:
            p.kill()
    won = [line[4:] for out, _ in outs for line in out.splitlines() if line.startswith("id: ")]
    assert sorted(won) == sorted(ids), [err for _, err in outs]
    assert sorted(p.returncode for p in procs) == [0] * 3 + [2] * 5
    assert set(statuses(flow).values()) == {"in_progress"}


def test_a_sessions_done_or_fail_of_a_task_another_agent_holds_is_refused(
        flow, git_repo, base_env, tmp_path):
    """As on the embedded store (docs/parallel.md): a call presenting a claims file, as each
    --parallel session's does, may not finish or fail a task another agent holds."""
    tid = add(flow, "First")
    task = as_sessions({**base_env, **flow.env, "RALPH_TASKS": "flowctl"}, git_repo, tmp_path,
                       timeout=300)
    assert task("claim", tid, agent="one").returncode == 0
    assert_another_agents_calls_refused(task, tid)
    assert statuses(flow) == {tid: "in_progress"}
    assert task("done", tid, "--result", '{"commit":"abc"}', agent="one").returncode == 0
    assert statuses(flow) == {tid: "done"}


def test_a_frozen_scope_names_a_task_added_mid_run_and_dry_run_writes_nothing(
        run_ralph, flow, git_repo, base_env, agent_env, tmp_path):
    first = add(flow, "First")
    commit_all(git_repo, base_env, "flow")
    before = treehash.snapshot(git_repo)
    dry = run_ralph("build", "--tasks", "flowctl", "--dry-run", env={**agent_env, **flow.env},
                    timeout=120)
    assert dry.returncode == 0, dry.stderr
    assert f"id: {first}" in dry.stdout
    assert treehash.diff(before, treehash.snapshot(git_repo)) == []
    late = (f'[ -f {tmp_path}/added ] || {{ touch {tmp_path}/added; '
            f'"$FLOWCTL" task create --spec {flow.spec} --title Late --json >/dev/null; }}\n')
    proc = run_ralph("build", "--tasks", "flowctl",
                     env={**agent_env, **flow.env, "FREEZE_SCOPE": "1",
                          "STUB_ACTION": late + agent_env["STUB_ACTION"]}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Scope changed:" in proc.stderr and "added" in proc.stderr
    assert "All frozen tasks complete. Exiting loop." in proc.stdout
    assert claims(tmp_path) == [first]


def test_a_missing_flowctl_is_one_line_before_any_session(run_ralph, git_repo, agent_env,
                                                           tmp_path):
    proc = run_ralph("build", "--tasks", "flowctl",
                     env={**agent_env, "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"})
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "Error: flowctl not found: install flow-next (github.com/gmickel/flow-next) so "
        "flowctl is on PATH, or set FLOWCTL to its path"]
    assert claims(tmp_path) == [] and not (git_repo / ".ralph").exists()


def test_a_backlog_flowctl_cannot_list_is_one_line_before_any_session(
        run_ralph, flow, git_repo, base_env, agent_env, tmp_path):
    """flowctl refuses its whole listing over one task file that is not JSON. Before, the loop
    ran sessions on an empty prompt and --assign ended `No tasks available` with exit 0; the
    refusal is the source's preflight, before either (flowctl takes a second a call: one run)."""
    mode = ["--assign"]
    add(flow, "Good")
    broken = add(flow, "Broken")
    (git_repo / ".flow" / "tasks" / f"{broken}.json").write_text("{not json\n")
    commit_all(git_repo, base_env, "flow")
    proc = run_ralph("build", "--tasks", "flowctl", *mode, env={**agent_env, **flow.env},
                     timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"Error: flowctl tasks --json failed: Task {broken} invalid JSON: ")
    assert proc.stdout == ""
    assert claims(tmp_path) == [] and not (git_repo / ".ralph").exists()


def test_a_question_on_a_flowctl_task_is_its_hold_and_ralph_answer_releases_it(
        run_ralph, flow, git_repo):
    tid = add(flow, "Pick a store")
    env = {**flow.env, "RALPH_TASKS": "flowctl"}
    proc = run_ralph("task", "ask", tid, "Which database?", env=env)
    assert proc.returncode == 0, proc.stderr
    assert (git_repo / ".ralph/sources/flowctl/holds" / tid).read_text() == \
        "question: Which database?\n"
    assert run_ralph("task", "claim", env=env).returncode == 2      # held: not claimable
    answered = run_ralph("answer", tid, "PostgreSQL", env=env)
    assert answered.returncode == 0, answered.stderr
    assert "Held" not in run_ralph("task", "show", tid, env=env).stdout
    assert statuses(flow)[tid] == "todo"

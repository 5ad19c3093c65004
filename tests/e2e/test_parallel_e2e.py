"""Black-box (part B): `ralph build --parallel N` with stub agents over real git
repositories and the real task CLI. Each stub session reads its task id from
RALPH_FROZEN_IDS_FILE, records its start and end times, commits a file in its worktree and
runs `task done`."""
from __future__ import annotations

import json
import re
import os
import signal
import subprocess
import sys

import pytest

from conftest import RALPH, git, ignore_ralph_dir, install_stub, read_jsonl, wait_for

# 12 tasks with overlapping components (api/db/ui/docs; t07 and t11 take two each)
COMPONENTS = {"t01": "api", "t02": "db", "t03": "ui", "t04": "api", "t05": "db", "t06": "ui",
              "t07": "api,db", "t08": "ui", "t09": "docs", "t10": "api", "t11": "docs,db",
              "t12": "ui"}

ACTION = r"""
tid=$(cat "$RALPH_FROZEN_IDS_FILE")
echo "{\"task\": \"$tid\", \"start\": $(date +%s.%N), \"cwd\": \"$PWD\", \"agent\": \"$RALPH_AGENT_ID\"}" >> "$STUB_TIMES"
sleep "${STUB_SLEEP:-0.2}"
file="${STUB_FILE:-out-$tid.txt}"
echo "$tid" >> "$file"
git add -A >/dev/null && git commit -qm "work on $tid" >/dev/null
"$RALPH_TASK_SCRIPT" done "$tid" >/dev/null
echo "{\"task\": \"$tid\", \"end\": $(date +%s.%N)}" >> "$STUB_TIMES"
"""


@pytest.fixture
def setup(git_repo, base_env, bin_dir, run_task, tmp_path):
    install_stub(bin_dir)
    ignore_ralph_dir(git_repo, base_env)
    env = {"STUB_ACTION": ACTION, "STUB_TIMES": str(tmp_path / "times.jsonl")}
    return env


def create(run_task, components: dict[str, str]) -> None:
    for tid, comps in components.items():
        assert run_task("create", tid, f"Task {tid}", "-c", f"component:{comps}").returncode == 0


def export(run_task) -> dict[str, dict]:
    out = run_task("_export-json").stdout
    return {t["id"]: t for t in map(json.loads, out.splitlines())}


def intervals(tmp_path) -> dict[str, list]:
    spans: dict[str, list] = {}
    for rec in read_jsonl(tmp_path / "times.jsonl"):
        if "start" in rec:
            spans.setdefault(rec["task"], []).append([rec["start"], None])
        else:
            spans[rec["task"]][-1][1] = rec["end"]
    return spans


def last_line(stdout: str) -> str:
    """The run's last message (the agents' `deregistered <id>` lines come at exit,
    docs/contract/ralph-cli.md s.17)."""
    return [line for line in stdout.splitlines() if not line.startswith("deregistered ")][-1]


def overlap(a: str, b: str) -> bool:
    return bool(set(a.split(",")) & set(b.split(",")))


def test_three_sessions_finish_twelve_tasks_once_each_without_overlapping_components(
        run_ralph, run_task, setup, git_repo, tmp_path, base_env):
    create(run_task, COMPONENTS)
    proc = run_ralph("build", "--parallel", "3", env=setup, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert last_line(proc.stdout) == "All tasks complete. Exiting loop."
    tasks = export(run_task)
    assert {t["status"] for t in tasks.values()} == {"done"}
    spans = intervals(tmp_path)
    assert sorted(spans) == sorted(COMPONENTS) and all(len(s) == 1 for s in spans.values())
    flat = [(tid, s[0][0], s[0][1]) for tid, s in spans.items()]
    concurrent = 0
    for i, (a, a0, a1) in enumerate(flat):
        for b, b0, b1 in flat[i + 1:]:
            if a0 < b1 and b0 < a1:                                 # ran at the same time
                concurrent += 1
                assert not overlap(COMPONENTS[a], COMPONENTS[b]), (a, b)
    assert concurrent > 0                                          # it did run in parallel
    # every branch merged into main: one commit per task, linear, no branch or worktree left
    log = git(git_repo, "log", "--format=%s", "main", env=base_env).splitlines()
    assert sorted(s for s in log if s.startswith("work on")) == sorted(
        f"work on {t}" for t in COMPONENTS)
    assert all((git_repo / f"out-{t}.txt").read_text() == f"{t}\n" for t in COMPONENTS)
    assert git(git_repo, "branch", "--list", "ralph/*", env=base_env) == ""
    assert git(git_repo, "worktree", "list", env=base_env).count("\n") == 1
    cwds = {rec["cwd"] for rec in read_jsonl(tmp_path / "times.jsonl") if "cwd" in rec}
    assert len(cwds) == 12 and all("/.ralph/worktrees/" in c for c in cwds)
    agents = {rec["agent"] for rec in read_jsonl(tmp_path / "times.jsonl") if "agent" in rec}
    assert len(agents) == 3                                        # one registered id per slot
    state = json.loads(next((git_repo / ".ralph" / "runs").glob("*/state.json")).read_text())
    assert (state["sessionsStarted"], len(state["completed"]), state["failed"],
            state["active"], state["exitCode"]) == (12, 12, [], None, 0)
    ends = [e for e in read_jsonl(next((git_repo / ".ralph" / "runs").glob("*/events.jsonl")))
            if e["event"] == "session_end"]                        # recorded as the single loop's
    assert len(ends) == 12 and all(e["duration_s"] > 0 for e in ends)
    md = (git_repo / ".ralph" / "progress.md").read_text()
    section = md.split("## How the latest sessions ended (newest first)\n", 1)[1]
    rows = [line for line in section.split("\n\n## ", 1)[0].splitlines() if line[2:3].isdigit()]
    # the last ten to end, newest first (three slots: they end in any order of their numbers)
    assert [r.split(" | ")[0] for r in rows] == [f"| {e['n']}" for e in reversed(ends)][:10]


def test_a_conflicting_pair_ends_with_one_merged_and_one_failed_with_its_branch_kept(
        run_ralph, run_task, setup, git_repo, base_env):
    create(run_task, {"left": "a", "right": "b"})
    env = {**setup, "STUB_FILE": "README.md", "STUB_SLEEP": "0.5"}
    proc = run_ralph("build", "--parallel", "2", env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    tasks = export(run_task)
    statuses = sorted(t["status"] for t in tasks.values())
    assert statuses == ["done", "open"]
    (failed,) = [t for t in tasks.values() if t["status"] == "open"]
    assert "conflicts in README.md; branch kept" in failed["fail_reason"]
    assert failed["retry_count"] == 1
    branches = git(git_repo, "branch", "--list", "ralph/*", "--format=%(refname:short)",
                   env=base_env).split()
    assert len(branches) == 1 and branches[0].endswith("/" + failed["id"])
    assert f"[{failed['id']}] failed: rebase of" in proc.stdout
    assert last_line(proc.stdout) == "No tasks available. Exiting loop."
    assert git(git_repo, "worktree", "list", env=base_env).count("\n") == 1


def test_max_iterations_counts_sessions_started_across_all_slots(run_ralph, run_task, setup,
                                                                 tmp_path, git_repo):
    create(run_task, {f"m{i}": f"c{i}" for i in range(5)})
    proc = run_ralph("build", "--parallel", "2", "-n", "3", env=setup, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert last_line(proc.stdout) == "Reached max iterations: 3"
    assert len(intervals(tmp_path)) == 3
    tasks = export(run_task)
    assert sorted(t["status"] for t in tasks.values()) == ["done"] * 3 + ["open"] * 2
    (events,) = (git_repo / ".ralph" / "runs").glob("*/events.jsonl")
    started = [e for e in read_jsonl(events) if e["event"] == "session_start"]
    assert [e["agent"] for e in started] == ["claude"] * 3          # the agent CLI
    assert all(e["agent_id"] == tasks[e["task"]]["assignee"] for e in started)


def session_prompts(log) -> dict[str, str]:
    """{agent id: the prompt it was started with} from the stub's STUB_LOG."""
    prompts = {}
    for rec in read_jsonl(log):
        prompt = rec["argv"][rec["argv"].index("-p") + 1]
        prompts[rec["env"]["RALPH_AGENT_ID"]] = prompt
    return prompts


def commit_files(git_repo, base_env, files: dict[str, str]) -> None:
    for name, text in files.items():
        (git_repo / name).write_text(text)
    git(git_repo, "add", *files, env=base_env)
    git(git_repo, "commit", "-qm", "settings", env=base_env)


@pytest.mark.parametrize("assign", [False, True])
def test_parallel_sessions_get_the_prompt_template_of_the_run(run_ralph, run_task, setup,
                                                               tmp_path, assign):
    # --prompt '/tf {id} --auto' (pi-ticketflow's dispatch) is the whole prompt of each
    # session, as in the single loop, where --assign takes precedence too
    create(run_task, {"p1": "a", "p2": "b"})
    log = tmp_path / "agent.jsonl"
    proc = run_ralph("build", "--parallel", "2", "--prompt", "/tf {id} --auto",
                     *(["--assign"] if assign else []),
                     env={**setup, "STUB_LOG": str(log)}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    prompts = sorted(session_prompts(log).values())
    ignored = [line for line in proc.stderr.splitlines() if " ignored: " in line]
    if assign:
        assert [p.splitlines()[3] for p in prompts] == ["Task: p1 (priority 2, medium)",
                                                        "Task: p2 (priority 2, medium)"]
        assert ignored == ["--prompt ignored: --assign sends each session its task's "
                           "anti-drift block"]              # said once, not dropped silently
    else:
        assert (prompts, ignored) == (["/tf p1 --auto", "/tf p2 --auto"], [])
    assert [t["status"] for t in export(run_task).values()] == ["done", "done"]


def test_parallel_sessions_render_the_configured_anti_drift_template(
        run_ralph, run_task, setup, git_repo, base_env, tmp_path):
    create(run_task, {"p1": "a", "p2": "b"})
    commit_files(git_repo, base_env, {"drift.md": "Only {id}: {title}.\n",
                                      "ralph.yml": "assign_prompt: drift.md\n"})
    log = tmp_path / "agent.jsonl"
    proc = run_ralph("build", "--parallel", "2", env={**setup, "STUB_LOG": str(log)},
                     timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert sorted(session_prompts(log).values()) == ["/ralph-build Only p1: Task p1.",
                                                     "/ralph-build Only p2: Task p2."]


def test_an_unreadable_anti_drift_template_stops_a_parallel_run_before_anything_is_written(
        run_ralph, run_task, setup, git_repo, base_env):
    create(run_task, {"p1": "a"})
    commit_files(git_repo, base_env, {"ralph.yml": "assign_prompt: missing.md\n"})
    proc = run_ralph("build", "--parallel", "2", env=setup, timeout=60)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.count("\n") == 1
    assert "missing.md cannot be read" in proc.stderr and "assign_prompt" in proc.stderr
    assert not (git_repo / ".ralph" / "runs").exists()
    assert [t["status"] for t in export(run_task).values()] == ["open"]


def test_with_assign_the_inbox_is_imported_before_each_claim_of_a_parallel_run(
        run_ralph, run_task, setup, git_repo, tmp_path):
    # one file there at start; one that p1's agent drops mid-run becomes a task of this run
    create(run_task, {"p1": "a"})
    inbox = git_repo / ".ralph" / "inbox"
    inbox.mkdir(parents=True)
    (inbox / "early.json").write_text(json.dumps({"id": "early", "title": "Early",
                                                  "category": "component:b"}))
    late = json.dumps({"id": "late", "title": "Late", "category": "component:c"})
    action = f"""[ "$(cat "$RALPH_FROZEN_IDS_FILE")" = p1 ] && echo '{late}' > {inbox}/late.json
{ACTION}"""
    proc = run_ralph("build", "--parallel", "2", "--assign", env={**setup, "STUB_ACTION": action},
                     timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "inbox: imported 1 task(s): early" in proc.stderr
    assert "inbox: imported 1 task(s): late" in proc.stderr
    assert {tid: t["status"] for tid, t in export(run_task).items()} == {
        "p1": "done", "early": "done", "late": "done"}
    assert last_line(proc.stdout) == "All tasks complete. Exiting loop."


# Commits its work, then takes the anti-drift block's other way of finishing: it marks
# .ralph/current-task.json completed instead of calling `task done`.
FINISH_BY_FILE = r"""
tid=$(cat "$RALPH_FROZEN_IDS_FILE")
echo "$tid" > "out-$tid.txt" && git add -A >/dev/null && git commit -qm "work on $tid" >/dev/null
python3 -c '
import json, sys
path = ".ralph/current-task.json"
record = json.load(open(path))
assert record["id"] == sys.argv[1] and record["status"] == "in_progress", record
record.update(status="completed", verification_notes="checked by hand")
json.dump(record, open(path, "w"))
' "$tid"
"""


def test_a_parallel_session_may_finish_its_task_through_current_task_json(
        run_ralph, run_task, setup, git_repo, base_env):
    # the anti-drift block offers both ways to every session, so a --parallel run honours both
    create(run_task, {"p1": "a", "p2": "b"})
    proc = run_ralph("build", "--parallel", "2", env={**setup, "STUB_ACTION": FINISH_BY_FILE},
                     timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert last_line(proc.stdout) == "All tasks complete. Exiting loop."
    tasks = export(run_task)
    assert [t["status"] for t in tasks.values()] == ["done", "done"]
    for tid, task in tasks.items():
        result = json.loads(task["result"])      # the session's HEAD (a rebase may copy it)
        assert git(git_repo, "log", "-1", "--format=%s", result["commit"],
                   env=base_env).strip() == f"work on {tid}"
        assert (result["verification_notes"], result["recorded_by"]) == (
            "checked by hand", "current-task.json")
        assert (git_repo / f"out-{tid}.txt").exists()
    assert git(git_repo, "ls-files", ".ralph", env=base_env) == ""   # never committed


# p1's session tries to finish and to fail p2 while p2's session works on it, then does its own
REACH_ACROSS = r"""
tid=$(cat "$RALPH_FROZEN_IDS_FILE")
wait_for() { i=0; while [ ! -e "$1" ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done; }
if [ "$tid" = p1 ]; then
  wait_for "$SYNC/p2-started"
  "$RALPH_TASK_SCRIPT" done p2 --result '{"commit":"none"}' 2> "$SYNC/done.err"
  echo $? > "$SYNC/done.rc"
  "$RALPH_TASK_SCRIPT" fail p2 --reason "looks stuck" 2> "$SYNC/fail.err"
  echo $? > "$SYNC/fail.rc"
  echo "$RALPH_AGENT_ID" > "$SYNC/p1.agent"
  touch "$SYNC/tried"
else
  echo "$RALPH_AGENT_ID" > "$SYNC/p2.agent"
  touch "$SYNC/p2-started"
  wait_for "$SYNC/tried"
fi
echo "$tid" >> "out-$tid.txt"
git add -A >/dev/null && git commit -qm "work on $tid" >/dev/null
"$RALPH_TASK_SCRIPT" done "$tid" >/dev/null
"""


def test_a_parallel_session_cannot_finish_or_fail_another_sessions_task(
        run_ralph, run_task, setup, tmp_path):
    """The sessions share the SQLite backlog, which has no fencing tokens: each presents its
    agent's claims file, and a `done` or `fail` of a task another session's agent holds is
    refused, writing nothing; that session goes on and finishes it."""
    sync = tmp_path / "sync"
    sync.mkdir()
    create(run_task, {"p1": "a", "p2": "b"})
    proc = run_ralph("build", "--parallel", "2",
                     env={**setup, "STUB_ACTION": REACH_ACROSS, "SYNC": str(sync)}, timeout=90)
    assert proc.returncode == 0, proc.stderr
    assert last_line(proc.stdout) == "All tasks complete. Exiting loop."
    one, two = ((sync / f"p{n}.agent").read_text().strip() for n in (1, 2))
    refusal = (f"Error: task 'p2' is held by agent '{two}', not by this session's agent "
               f"'{one}': nothing written\n")
    for step in ("done", "fail"):
        assert (sync / f"{step}.rc").read_text() == "1\n"
        assert (sync / f"{step}.err").read_text() == refusal
    tasks = export(run_task)
    assert [t["status"] for t in tasks.values()] == ["done", "done"]
    assert (tasks["p2"]["retry_count"], tasks["p2"]["fail_reason"]) == (0, None)
    assert tasks["p2"]["result"] is None          # its own `done`, not the refused one


def test_a_task_its_session_deleted_instead_of_finishing_is_named_not_counted_done(
        run_ralph, run_task, setup, git_repo):
    delete_p2 = ('tid=$(cat "$RALPH_FROZEN_IDS_FILE")\n'
                 '[ "$tid" = p2 ] && "$RALPH_TASK_SCRIPT" delete p2 >/dev/null && exit 0\n'
                 + ACTION)
    create(run_task, {"p1": "a", "p2": "b"})
    proc = run_ralph("build", "--parallel", "2", env={**setup, "STUB_ACTION": delete_p2},
                     timeout=60)
    assert proc.returncode == 0, proc.stderr
    line = "task p2: deleted by the session's agent, not finished (nothing verified it)"
    assert f"[p2] {line}\n" in proc.stderr
    assert "[p2] deleted: the session left the task deleted\n" in proc.stdout
    [run] = (git_repo / ".ralph" / "runs").iterdir()
    logged = [e for e in read_jsonl(run / "events.jsonl") if e.get("kind") == "deleted"]
    assert [(e["task"], e["message"]) for e in logged] == [("p2", line)]
    tasks = {t["id"]: t for t in json.loads(run_ralph("report", "--json").stdout)["tasks"]}
    assert (tasks["p1"]["outcome"], tasks["p2"]["outcome"]) == ("done", "deleted")
    assert json.loads(run_ralph("status", "--json").stdout)["completed"] == 1
    assert "- Completed: 1\n" in (git_repo / ".ralph" / "progress.md").read_text()


# p1's agent deletes `dup`, which no session claimed (it waits for p1, its dependency); p2's
# agent finishes only after the deletion, so both sessions' ends read the backlog after it.
DELETES_A_DUPLICATE = r"""
tid=$(cat "$RALPH_FROZEN_IDS_FILE")
if [ "$tid" = p1 ]; then "$RALPH_TASK_SCRIPT" delete dup >/dev/null; touch "$SYNC/deleted"; fi
i=0; while [ ! -e "$SYNC/deleted" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
""" + ACTION


def test_a_task_no_session_held_deleted_during_a_parallel_run_is_named_once_and_reported(
        run_ralph, run_task, setup, git_repo, tmp_path):
    """The run ends "All tasks complete" with `dup` never done: the first session's end that
    reads the backlog after the deletion says so, once, as the single loop's session end."""
    create(run_task, {"p1": "a", "p2": "b"})
    assert run_task("create", "dup", "Task dup", "-c", "component:c", "--deps", "p1"
                    ).returncode == 0
    proc = run_ralph("build", "--parallel", "2",
                     env={**setup, "STUB_ACTION": DELETES_A_DUPLICATE, "SYNC": str(tmp_path)},
                     timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert last_line(proc.stdout) == "All tasks complete. Exiting loop."
    line = "task dup: deleted during the session, not done (it was not the session's task)"
    assert proc.stderr.count(line) == 1 and f"\n{line}\n" in f"\n{proc.stderr}"
    assert line not in proc.stdout
    assert "deleted by the session's agent" not in proc.stderr
    [run] = (git_repo / ".ralph" / "runs").iterdir()
    logged = [e for e in read_jsonl(run / "events.jsonl") if e.get("kind") == "deleted"]
    assert [(e["task"], e["message"]) for e in logged] == [("dup", line)]
    tasks = {t["id"]: t for t in json.loads(run_ralph("report", "--json").stdout)["tasks"]}
    assert {tid: t["outcome"] for tid, t in tasks.items()} == {
        "p1": "done", "p2": "done", "dup": "deleted"}
    assert json.loads(run_ralph("status", "--json").stdout)["completed"] == 2


# p2's agent deletes its own task, then waits until p1's session has ended: that end reads
# the backlog while the deleted task is still a running session's.
DELETES_ITS_OWN_LATE = r"""
tid=$(cat "$RALPH_FROZEN_IDS_FILE")
if [ "$tid" = p2 ]; then
  "$RALPH_TASK_SCRIPT" delete p2 >/dev/null; touch "$SYNC/deleted"
  i=0; until grep -qs '"session_end"' "$RUNS"/*/events.jsonl || [ $i -ge 600 ]; do
    sleep 0.05; i=$((i + 1)); done
  exit 0
fi
i=0; while [ ! -e "$SYNC/deleted" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
""" + ACTION


def test_a_task_its_session_deleted_is_named_once_by_its_own_end_not_by_another_sessions(
        run_ralph, run_task, setup, git_repo, tmp_path):
    create(run_task, {"p1": "a", "p2": "b"})
    proc = run_ralph("build", "--parallel", "2",
                     env={**setup, "STUB_ACTION": DELETES_ITS_OWN_LATE, "SYNC": str(tmp_path),
                          "RUNS": str(git_repo / ".ralph" / "runs")}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.index("[p1] done: ") < proc.stdout.index("[p2] deleted: ")
    line = "task p2: deleted by the session's agent, not finished (nothing verified it)"
    assert proc.stderr.count("task p2: ") == 1 and f"[p2] {line}\n" in proc.stderr
    [run] = (git_repo / ".ralph" / "runs").iterdir()
    logged = [e for e in read_jsonl(run / "events.jsonl") if e.get("kind") == "deleted"]
    assert [(e["task"], e["message"]) for e in logged] == [("p2", line)]


@pytest.mark.parametrize("assign", [False, True])
def test_with_assign_a_parallel_runs_done_tasks_are_archived_with_their_sessions_commits(
        run_ralph, run_task, setup, git_repo, assign):
    create(run_task, {"p1": "a", "p2": "b"})
    action = ACTION + 'echo extra >> "extra-$tid.txt"; git add -A; git commit -qm "more on $tid"\n'
    proc = run_ralph("build", "--parallel", "2", *(["--assign"] if assign else []),
                     env={**setup, "STUB_ACTION": action}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    archive = git_repo / ".ralph" / "completed"
    backlog = git_repo / ".ralph" / "backlog.json"
    if not assign:                                 # as the single loop: --assign's records
        assert not archive.exists() and not backlog.exists()
        return
    assert json.loads(backlog.read_text())["tasks"] == []      # as the last look left it
    for tid in ("p1", "p2"):
        record = json.loads((archive / f"{tid}.json").read_text())
        assert (record["task"]["id"], record["status"]) == (tid, "completed")
        assert [c["subject"] for c in record["artifacts"]["commits"]] == [
            f"work on {tid}", f"more on {tid}"]              # this session's, not the other's
        assert f"[{tid}] done, archived to .ralph/completed/{tid}.json" in proc.stderr


def test_flags_a_parallel_run_has_no_use_for_are_named_once_not_silently_dropped(
        run_ralph, run_task, setup, tmp_path):
    create(run_task, {"p1": "a", "p2": "b"})
    log = tmp_path / "agent.jsonl"
    proc = run_ralph("build", "--parallel", "2", "--continue-session", "--max-idle-sessions", "1",
                     env={**setup, "STUB_LOG": str(log)}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    notes = [line for line in proc.stderr.splitlines() if " ignored: " in line]
    assert notes == [
        "--continue-session ignored: each --parallel session starts fresh in its own worktree",
        "--max-idle-sessions 1 ignored: a --parallel run starts each task at most once"]
    assert not [rec for rec in read_jsonl(log) if "--continue" in rec["argv"]]


def test_killing_ralph_mid_run_and_resuming_cleans_worktrees_and_loses_no_task(
        run_task, setup, git_repo, base_env, tmp_path):
    comps = {f"k{i}": f"c{i}" for i in range(6)}
    create(run_task, comps)
    env = {**base_env, **setup, "STUB_SLEEP": "0.6"}
    proc = subprocess.Popen([sys.executable, str(RALPH), "build", "--parallel", "3"],
                            cwd=git_repo, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(lambda: len(intervals(tmp_path)) >= 3)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert list((git_repo / ".ralph" / "worktrees").glob("*/*"))       # left behind
    again = subprocess.run([sys.executable, str(RALPH), "build", "--parallel", "3"], cwd=git_repo,
                           env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert "Resuming run " in again.stderr
    assert last_line(again.stdout) == "All tasks complete. Exiting loop."
    assert {t["status"] for t in export(run_task).values()} == {"done"}
    assert all((git_repo / f"out-{t}.txt").read_text() == f"{t}\n" for t in comps)
    assert not list((git_repo / ".ralph" / "worktrees").glob("*/*"))
    assert not _stub_pids(git_repo)                      # nothing of the dead run's sessions
    assert git(git_repo, "worktree", "list", env=base_env).count("\n") == 1


@pytest.mark.parametrize("assign", [False, True])
def test_a_task_marked_completed_in_current_task_json_before_a_kill_9_is_merged_on_resume(
        run_task, setup, git_repo, base_env, tmp_path, assign):
    create(run_task, {"k1": "a"})
    flags = ["--parallel", "2", *(["--assign"] if assign else [])]
    marks = tmp_path / "marks"
    marks.mkdir()
    # the agent finishes by the file, then hangs until ralph.py's death takes it down
    action = FINISH_BY_FILE + f'touch {marks}/marked-$tid; while :; do sleep 0.05; done\n'
    env = {**base_env, **setup, "STUB_ACTION": action}
    proc = subprocess.Popen([sys.executable, str(RALPH), "build", *flags],
                            cwd=git_repo, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(lambda: (marks / "marked-k1").exists())
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    again = subprocess.run([sys.executable, str(RALPH), "build", *flags],
                           cwd=git_repo, env={**env, "STUB_ACTION": ACTION},
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert "[k1] recovered from the interrupted run: merged" in again.stderr
    logged = [e["message"] for path in (git_repo / ".ralph" / "runs").glob("*/events.jsonl")
              for e in read_jsonl(path) if e["event"] == "log" and e.get("kind") == "resume"]
    assert any(m.startswith("[k1] recovered from the interrupted run: merged") for m in logged)
    task = export(run_task)["k1"]
    assert task["status"] == "done"
    assert json.loads(task["result"])["recorded_by"] == "current-task.json"   # not run again
    assert (git_repo / "out-k1.txt").read_text() == "k1\n"
    assert not _stub_pids(git_repo)                  # its hung agent ended by the recovery
    archive = git_repo / ".ralph" / "completed" / "k1.json"
    assert archive.exists() == assign                # --assign: archived as a session's end
    if assign:
        record = json.loads(archive.read_text())
        assert [c["subject"] for c in record["artifacts"]["commits"]] == ["work on k1"]
        assert record["verification_notes"] == "checked by hand"


def _start_hanging_run(run_task, setup, git_repo, base_env, tmp_path, n=2, args=()):
    create(run_task, {f"h{i}": f"c{i}" for i in range(n)})
    env = {**base_env, **setup, "STUB_SLEEP": "60"}
    proc = subprocess.Popen([sys.executable, str(RALPH), "build", "--parallel", str(n), *args],
                            cwd=git_repo, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    wait_for(lambda: len(intervals(tmp_path)) >= n)
    return proc, env


def test_a_rebased_tasks_result_names_its_commit_on_the_run_branch(
        run_ralph, run_task, setup, git_repo, base_env):
    """Three sessions fork from one commit: the second and third are rebased onto the first's
    merge, which gives their commits new ids. Each task's result (the report's commits, the
    next tasks' blocker_results) names the commit on main, never one left on no branch."""
    create(run_task, {"r1": "a", "r2": "b", "r3": "c"})
    with_result = ACTION.replace('done "$tid"', 'done "$tid" --result '
                                 '"{\\"commit\\": \\"$(git rev-parse HEAD)\\"}"')
    proc = run_ralph("build", "--parallel", "3", env={**setup, "STUB_ACTION": with_result},
                     timeout=120)
    assert proc.returncode == 0, proc.stderr
    main = git(git_repo, "log", "--format=%H %s", "main", env=base_env).splitlines()
    on_main = {subject.removeprefix("work on "): sha for sha, _, subject in
               (line.partition(" ") for line in main) if subject.startswith("work on ")}
    assert sorted(on_main) == ["r1", "r2", "r3"]
    results = {tid: json.loads(t["result"])["commit"] for tid, t in export(run_task).items()}
    assert results == on_main


@pytest.mark.parametrize("leave", ["git checkout -q --detach",
                                   "git switch -q -c elsewhere",
                                   'git rebase -q -x "exit 1" HEAD~1 2>/dev/null || true'],
                         ids=["detached", "other-branch", "rebase-left-under-way"])
def test_commits_made_off_the_task_branch_are_kept_and_the_task_reopened(
        run_ralph, run_task, setup, git_repo, base_env, leave):
    """The agent commits, leaves its task branch, commits again and marks the task done. A
    merge of the task branch would leave the second commit on no branch, lost with the
    worktree; the task result would name it. It is kept on a branch and the task reopened."""
    create(run_task, {"s1": "a"})
    action = ('tid=$(cat "$RALPH_FROZEN_IDS_FILE"); echo one > one.txt; git add -A; '
              'git commit -qm "first on branch"; ' + leave + '; echo two > two.txt; '
              'git add -A; git commit -qm "second off branch"; '
              '"$RALPH_TASK_SCRIPT" done "$tid" >/dev/null')
    proc = run_ralph("build", "--parallel", "2", "-n", "1",
                     env={**setup, "STUB_ACTION": action}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    task = export(run_task)["s1"]
    assert task["status"] == "open", proc.stdout
    assert "the session left its worktree off branch ralph/" in task["fail_reason"]
    kept = task["fail_reason"].split("kept on branch ")[1].split(";")[0]
    assert kept.endswith("/s1@stray")
    kept_log = git(git_repo, "log", "-1", "--format=%s", kept, env=base_env)
    assert kept_log.strip() == "second off branch"
    assert "second off branch" not in git(git_repo, "log", "--format=%s", "main", env=base_env)


def test_a_task_whose_session_cannot_start_is_named_on_stderr_and_in_the_events(
        run_ralph, run_task, setup, git_repo, base_env):
    """b's worktree cannot be created (a's agent made `ralph/<run>/b/x`, so git cannot make
    the branch `ralph/<run>/b`): b goes back to open with the reason, and the run says so."""
    create(run_task, {"a": "x"})
    assert run_task("create", "b", "Task b", "-c", "component:y", "--deps", "a").returncode == 0
    block = ('tid=$(cat "$RALPH_FROZEN_IDS_FILE"); cur=$(git branch --show-current); '
             '[ "$tid" = a ] && git branch "${cur%/a}/b/x"; ')
    proc = run_ralph("build", "--parallel", "2", env={**setup, "STUB_ACTION": block + ACTION},
                     timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "[b] not started: cannot create its worktree: " in proc.stderr
    b = export(run_task)["b"]
    assert b["status"] == "open" and b["fail_reason"].startswith("cannot create its worktree: ")
    logged = [e for path in (git_repo / ".ralph" / "runs").glob("*/events.jsonl")
              for e in read_jsonl(path) if e.get("kind") == "not_started"]
    assert [(e["task"], e["message"]) for e in logged] == [("b", b["fail_reason"])]


def test_a_run_started_inside_a_parallel_session_is_refused_with_exit_3(
        run_ralph, run_task, setup, git_repo, base_env, tmp_path):
    """The session's worktree has a .ralph/ of its own, but RALPH_TASKS_DB names the main
    checkout's backlog: a `ralph build` there would be a second run on that backlog, its
    lock and record in a directory deleted with the worktree."""
    create(run_task, {"n1": "a", "n2": "b"})
    out = tmp_path / "nested"
    nested = (f'if mkdir "{out}" 2>/dev/null; then "{sys.executable}" "{RALPH}" build -n 1 '
              f'> "{out}/stdout" 2> "{out}/stderr"; echo $? > "{out}/rc"; fi; ')
    proc = run_ralph("build", "--parallel", "2", env={**setup, "STUB_ACTION": nested + ACTION},
                     timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (out / "rc").read_text().strip() == "3", (out / "stderr").read_text()
    err = (out / "stderr").read_text()
    assert err.startswith(f"Error: run lock {git_repo}/.ralph/run.lock of this run's backlog ")
    assert (out / "stdout").read_text() == ""
    assert {t["status"] for t in export(run_task).values()} == {"done"}


def test_a_session_that_deletes_the_run_lock_stops_the_run_with_exit_8(
        run_ralph, run_task, setup, git_repo, tmp_path):
    """As the single loop: with its lock gone, another run could start on this backlog (and
    take the live run for a crashed one); the run starts no new session and ends with exit 8."""
    create(run_task, {f"l{n}": f"c{n}" for n in range(1, 6)})
    drop = f'rm -f "{git_repo}/.ralph/run.lock"; '
    proc = run_ralph("build", "--parallel", "2", env={**setup, "STUB_ACTION": drop + ACTION},
                     timeout=120)
    assert proc.returncode == 8, proc.stdout + proc.stderr
    assert re.fullmatch(f"Error: the run lock {re.escape(str(git_repo))}/.ralph/run.lock was "
                        r"deleted during session \d: another run could start on this backlog "
                        "now, stopping", proc.stderr.splitlines()[-1])
    assert len(intervals(tmp_path)) == 2                  # no session after the first two


def test_untracked_files_a_session_leaves_are_named_when_its_worktree_goes(
        run_ralph, run_task, setup, git_repo):
    create(run_task, {"u1": "a"})
    scratch = 'mkdir -p notes; echo draft > notes/plan.md; echo x > scratch.txt\n'
    proc = run_ralph("build", "--parallel", "2", env={**setup, "STUB_ACTION": ACTION + scratch},
                     timeout=120)                            # made after its commit
    assert proc.returncode == 0, proc.stderr
    assert ("; untracked files in the worktree were not merged and are gone with it: "
            "notes/plan.md, scratch.txt") in proc.stdout
    assert export(run_task)["u1"]["status"] == "done"


def _stub_pids(git_repo) -> list[int]:
    import psutil
    return [p.pid for p in psutil.process_iter(["cwd"])
            if (p.info.get("cwd") or "").startswith(str(git_repo / ".ralph" / "worktrees"))]


@pytest.mark.parametrize("signals_sent", [[signal.SIGTERM], [signal.SIGINT],
                                          [signal.SIGINT, signal.SIGINT]],
                         ids=["sigterm", "sigint", "sigint-twice"])
def test_ctrl_c_and_sigterm_stop_every_session_and_put_their_tasks_back(
        run_task, setup, git_repo, base_env, tmp_path, signals_sent):
    """The user stopped the run, not the agents: no attempt counts (--max-attempts 1 holds
    nothing) and each session ends interrupted, as the single loop records it."""
    proc, env = _start_hanging_run(run_task, setup, git_repo, base_env, tmp_path,
                                   args=("--max-attempts", "1"))
    try:
        assert len(_stub_pids(git_repo)) >= 2
        for signum in signals_sent:
            os.kill(proc.pid, signum)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    if signals_sent[0] == signal.SIGINT:
        assert "Waiting for claude to finish cleanup... Press Ctrl+C again to force quit." in out
    wait_for(lambda: not _stub_pids(git_repo))      # no orphan agent
    tasks = export(run_task)
    assert [(t["status"], t["assignee"], t["held"]) for t in tasks.values()] == [
        ("open", None, None)] * 2
    assert [(t["retry_count"], t["fail_reason"]) for t in tasks.values()] == [
        (0, "ralph.py was interrupted during the session")] * 2      # released, not failed
    assert "Held task" not in out
    ends = [e for path in (git_repo / ".ralph" / "runs").glob("*/events.jsonl")
            for e in read_jsonl(path) if e["event"] == "session_end"]
    assert [(e["outcome"], e["counts_as_failure"]) for e in ends] == [("interrupted", False)] * 2
    assert not list((git_repo / ".ralph" / "worktrees").glob("*/*"))
    assert git(git_repo, "worktree", "list", env=base_env).count("\n") == 1


def test_ralph_status_shows_every_active_session(run_task, setup, git_repo, base_env, tmp_path):
    proc, env = _start_hanging_run(run_task, setup, git_repo, base_env, tmp_path)
    try:
        def with_both_pids() -> dict | None:
            # both agents run; the state names the second one's pid once ralph.py saved it
            data = json.loads(subprocess.run(
                [sys.executable, str(RALPH), "status", "--json"], cwd=git_repo, env=env,
                capture_output=True, text=True, timeout=30).stdout)
            sessions = (data.get("active") or {}).get("sessions") or []
            return data if sum(1 for x in sessions if x["pid"]) == 2 else None
        data = wait_for(with_both_pids)
        assert data["alive"] is True
        sessions = data["active"]["sessions"]
        assert sorted(s["task"] for s in sessions) == ["h0", "h1"]
        assert all(s["branch"].endswith("/" + s["task"]) and s["pid"] for s in sessions)
        text = subprocess.run([sys.executable, str(RALPH), "status"], cwd=git_repo, env=env,
                              capture_output=True, text=True, timeout=30).stdout
        assert "h0, h1" in text
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=20)


@pytest.mark.parametrize("merge,statuses,branches,reason", [
    ("ff", ["done", "open"], 1, "is not a fast-forward of main (main moved on); branch kept"),
    ("none", ["done", "done"], 2, None),
], ids=["ff", "none"])
def test_merge_strategy_ff_merges_only_fast_forwards_and_none_leaves_branches_for_review(
        run_ralph, run_task, setup, git_repo, base_env, merge, statuses, branches, reason):
    create(run_task, {"one": "a", "two": "b"})
    proc = run_ralph("build", "--parallel", "2", "--merge", merge,
                     env={**setup, "STUB_SLEEP": "0.5"}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    tasks = export(run_task)
    assert sorted(t["status"] for t in tasks.values()) == statuses
    kept = git(git_repo, "branch", "--list", "ralph/*", env=base_env).split()
    assert len(kept) == branches
    if reason:
        (failed,) = [t for t in tasks.values() if t["status"] == "open"]
        assert failed["fail_reason"].endswith(reason)
    else:
        assert "left for review" in proc.stdout
        assert not (git_repo / "out-one.txt").exists()           # main untouched


def test_parallel_on_a_detached_head_is_refused_with_one_error_line(run_ralph, run_task, setup,
                                                                     git_repo, base_env):
    create(run_task, {"d1": "a"})
    git(git_repo, "checkout", "-q", "--detach", env=base_env)
    before = sorted(p.relative_to(git_repo) for p in (git_repo / ".ralph").rglob("*"))
    proc = run_ralph("build", "--parallel", "2", env=setup)
    assert (proc.returncode, proc.stdout) == (1, "")             # before the banner
    assert proc.stderr == ("Error: --parallel needs a checked-out branch to merge into "
                           "(HEAD is detached or this is not a git repository)\n")
    assert sorted(p.relative_to(git_repo) for p in (git_repo / ".ralph").rglob("*")) == before
    git(git_repo, "checkout", "-q", "main", env=base_env)        # the backlog's scope again
    assert [t["status"] for t in export(run_task).values()] == ["open"]


def test_with_a_frozen_scope_a_task_added_mid_run_never_reaches_a_parallel_session(
        run_ralph, run_task, setup, tmp_path):
    create(run_task, {"t01": "api", "t02": "db"})
    adds = 'if [ "$(cat "$RALPH_FROZEN_IDS_FILE")" = t01 ]; then "$RALPH_TASK_SCRIPT" create t-new "Added mid-run" -c component:ui >/dev/null; fi\n'
    proc = run_ralph("build", "--parallel", "2", "--freeze-scope",
                     env={**setup, "STUB_ACTION": adds + ACTION}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    tasks = export(run_task)
    assert (tasks["t01"]["status"], tasks["t02"]["status"], tasks["t-new"]["status"]) == (
        "done", "done", "open")
    assert set(intervals(tmp_path)) == {"t01", "t02"}
    # Checked before the sessions that follow t01's: named once, as the single loop does.
    assert [line for line in proc.stderr.splitlines() if line.startswith("Scope changed: ")] \
        == ["Scope changed: added task t-new: not in the frozen scope, it will not run"]
    assert last_line(proc.stdout) == "All frozen tasks complete. Exiting loop."


def test_stop_on_scope_change_ends_a_parallel_run_with_exit_4_after_its_running_sessions(
        run_ralph, run_task, setup, tmp_path):
    create(run_task, {"t01": "api", "t02": "db", "t03": "ui", "t04": "docs"})
    adds = 'if [ "$(cat "$RALPH_FROZEN_IDS_FILE")" = t01 ]; then "$RALPH_TASK_SCRIPT" create t-new "Added mid-run" -c component:ui >/dev/null; fi\n'
    proc = run_ralph("build", "--parallel", "2", "--stop-on-scope-change",
                     env={**setup, "STUB_ACTION": adds + ACTION}, timeout=120)
    assert proc.returncode == 4, proc.stderr
    assert "Error: scope changed since the run started (1 change): added task t-new" \
        in proc.stderr
    tasks = export(run_task)
    started = set(intervals(tmp_path))
    assert "t-new" not in started and len(started) < 4            # no session after the stop
    assert all(tasks[t]["status"] == "done" for t in started)       # the running ones finished
    assert tasks["t-new"]["status"] == "open"


# The session of task `slow` hangs without output (its shell ignoring SIGTERM when asked, so
# only the SIGKILL after the grace ends it) and records its pid; the others work as ACTION.
HANG = r"""
if [ "$(cat "$RALPH_FROZEN_IDS_FILE")" = slow ]; then
  [ -n "$STUB_IGNORE_TERM" ] && trap '' TERM
  echo $$ > "$STUB_HANG_PID"
  sleep 60
  exit 0
fi
"""


def _alive(pid: int) -> bool:
    import psutil
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize("flags,ignore_term,kind,reason", [
    (["--session-timeout", "3s", "--kill-grace", "1s"], "1", "timeout",
     "session timeout of 3s reached; agent terminated"),
    (["--idle-timeout", "3s"], "", "idle", "no agent output for 3s; agent terminated"),
], ids=["session-timeout-term-ignored", "idle-timeout"])
def test_a_hung_parallel_session_is_ended_by_its_timeout_while_the_others_finish_and_merge(
        run_ralph, run_task, setup, git_repo, base_env, tmp_path, flags, ignore_term, kind,
        reason):
    create(run_task, {"slow": "a", "fast1": "b", "fast2": "c"})
    pidfile = tmp_path / "hang.pid"
    env = {**setup, "STUB_ACTION": HANG + ACTION, "STUB_HANG_PID": str(pidfile),
           "STUB_IGNORE_TERM": ignore_term}
    proc = run_ralph("build", "--parallel", "3", *flags, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert last_line(proc.stdout) == "No tasks available. Exiting loop."
    assert f"[slow] failed: {reason}" in proc.stdout
    hung = int(pidfile.read_text())
    wait_for(lambda: not _alive(hung))              # no orphan of the hung session
    assert not _stub_pids(git_repo)
    tasks = export(run_task)
    assert (tasks["fast1"]["status"], tasks["fast2"]["status"]) == ("done", "done")
    slow = tasks["slow"]
    assert (slow["status"], slow["assignee"], slow["fail_reason"], slow["retry_count"]) == (
        "open", None, reason, 1)
    log = git(git_repo, "log", "--format=%s", "main", env=base_env).splitlines()
    assert sorted(s for s in log if s.startswith("work on")) == ["work on fast1", "work on fast2"]
    assert not list((git_repo / ".ralph" / "worktrees").glob("*/*"))
    assert git(git_repo, "worktree", "list", env=base_env).count("\n") == 1
    events = read_jsonl(next((git_repo / ".ralph" / "runs").glob("*/events.jsonl")))
    ends = {e["task"]: e for e in events if e.get("event") == "session_end"}
    assert (ends["slow"]["class"], ends["slow"]["detail"], ends["slow"]["outcome"],
            ends["slow"]["counts_as_failure"]) == (kind, reason, "failed", True)
    assert ends["fast1"]["outcome"] == ends["fast2"]["outcome"] == "completed"


def test_consecutive_failed_parallel_sessions_trip_the_breaker_with_exit_6(
        run_ralph, run_task, setup, git_repo, tmp_path):
    create(run_task, {f"f{i}": f"c{i}" for i in range(5)})
    fails = 'tid=$(cat "$RALPH_FROZEN_IDS_FILE")\necho "{\\"task\\": \\"$tid\\", \\"start\\": 0}" >> "$STUB_TIMES"\nexit 1\n'
    proc = run_ralph("build", "--parallel", "2", "--max-consecutive-failures", "2",
                     env={**setup, "STUB_ACTION": fails}, timeout=60)
    assert proc.returncode == 6, proc.stderr
    tasks = export(run_task)
    started = set(intervals(tmp_path))
    assert 2 <= len(started) < 5                            # the breaker stopped new sessions
    assert proc.stderr.endswith(                            # every session that ended counted
        f"Error: no progress: {len(started)} sessions in a row failed "
        "(--max-consecutive-failures 2); last: session exited without completing task\n")
    assert all((t["status"], t["retry_count"]) == ("open", 1 if tid in started else 0)
               for tid, t in tasks.items())
    assert not list((git_repo / ".ralph" / "worktrees").glob("*/*"))


def test_a_closed_stdout_ends_a_parallel_run_as_ctrl_c_does_and_releases_its_lock(
        run_ralph, run_task, setup, tmp_path, git_repo, base_env):
    """`ralph build --parallel 2 | head -1`: the reader takes the banner's first line and
    exits; the run's next write finds the pipe closed and it ends as on Ctrl+C: one stderr
    line, exit 130, its state ended and its lock released; a plain re-run is a new run."""
    create(run_task, {"p1": "a", "p2": "b", "p3": "c"})
    release = tmp_path / "release"
    wait = f'while [ ! -f "{release}" ]; do sleep 0.02; done\n'
    err = tmp_path / "stderr"
    with err.open("wb") as err_file:
        proc = subprocess.Popen([sys.executable, str(RALPH), "build", "--parallel", "2"],
                                cwd=git_repo, env={**base_env, **setup,
                                                   "STUB_ACTION": wait + ACTION},
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=err_file)
    try:
        assert proc.stdout.readline().decode() == "\u2501" * 40 + "\n"
        proc.stdout.close()
        release.write_text("")
        assert proc.wait(60) == 130
    finally:
        release.write_text("")
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert ("Stopped: ralph's stdout was closed (its reader exited); ending the run as Ctrl+C "
            "does (exit 130)") in err.read_text().splitlines()
    assert not (git_repo / ".ralph" / "run.lock").exists()
    (state,) = (git_repo / ".ralph" / "runs").glob("*/state.json")
    assert json.loads(state.read_text())["exitCode"] == 130
    again = run_ralph("build", "--parallel", "2", env=setup, timeout=60)
    assert again.returncode == 0, again.stderr
    assert "Resuming" not in again.stderr
    assert len(list((git_repo / ".ralph" / "runs").iterdir())) == 2

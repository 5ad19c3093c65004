"""Black-box: which tasks `ralph build --parallel N` runs at once (docs/parallel.md,
docs/decisions/0036): tasks of different specs together, tasks of one spec one after the
other, a task with neither spec nor component tags alone, component tags before specs; the
start line that says how many can run at once. Stub agents record their start and end times
(test_parallel_e2e's ACTION); a session that must overlap another waits, with a deadline,
until a second session has started, so an overlap never depends on timing."""
from __future__ import annotations

import json

import pytest

from conftest import git
from test_parallel_e2e import ACTION, export, intervals, last_line, setup  # noqa: F401

# Waits (at most 20 s) until two sessions have started: those that may overlap do.
BARRIER = ('i=0; while [ "$(grep -c start "$STUB_TIMES" 2>/dev/null)" -lt 2 ] && '
           '[ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; ')


def plan(run_task, tasks: list[dict]) -> None:
    """Load tasks as /ralph-plan writes them (plan-sync's JSONL: a spec, no components)."""
    lines = "".join(json.dumps(t) + "\n" for t in tasks)
    assert run_task("plan-sync", input=lines).returncode == 0


def ran_together(spans: dict, a: str, b: str) -> bool:
    (a0, a1), (b0, b1) = spans[a][0], spans[b][0]
    return a0 < b1 and b0 < a1


def waiting_action(*tasks: str) -> str:
    """ACTION, where the given tasks first wait for a second session to start."""
    cond = " || ".join(f'[ "$tid" = {t} ]' for t in tasks)
    return ACTION.replace('sleep "${STUB_SLEEP:-0.2}"',
                          f'if {cond}; then {BARRIER}fi; sleep "${{STUB_SLEEP:-0.2}}"')


def test_tasks_of_different_specs_run_at_once_and_the_start_line_says_how_many(
        run_ralph, run_task, setup, tmp_path):
    plan(run_task, [{"id": "a", "t": "Auth", "spec": "auth.md"},
                    {"id": "b", "t": "Billing", "spec": "specs/billing.md"}])
    proc = run_ralph("build", "--parallel", "2", timeout=90,
                     env={**setup, "STUB_ACTION": waiting_action("a", "b")})
    assert proc.returncode == 0, proc.stderr
    assert "parallel: up to 2 sessions at once\n" in proc.stderr
    assert "parallel:" not in proc.stdout                       # the banner stays ralph.sh's
    assert ran_together(intervals(tmp_path), "a", "b")
    assert {t["status"] for t in export(run_task).values()} == {"done"}


def test_tasks_of_one_spec_never_run_at_once(run_ralph, run_task, setup, tmp_path):
    plan(run_task, [{"id": "a", "t": "One", "spec": "auth.md"},
                    {"id": "b", "t": "Two", "spec": "specs/auth.md"},
                    {"id": "c", "t": "Three", "spec": "./auth.md"}])
    proc = run_ralph("build", "--parallel", "3", timeout=90,
                     env={**setup, "STUB_SLEEP": "0.5"})
    assert proc.returncode == 0, proc.stderr
    assert ("parallel: 1 session at a time: every open task shares its spec or components "
            "with the others\n") in proc.stderr
    spans = intervals(tmp_path)
    assert sorted(spans) == ["a", "b", "c"]
    assert not any(ran_together(spans, x, y) for x, y in [("a", "b"), ("a", "c"), ("b", "c")])


def test_a_task_with_neither_spec_nor_components_runs_alone(run_ralph, run_task, setup,
                                                            tmp_path):
    plan(run_task, [{"id": "a", "t": "Auth", "spec": "auth.md", "p": 1},
                    {"id": "u", "t": "Loose end", "p": 2},
                    {"id": "b", "t": "Billing", "spec": "billing.md", "p": 3}])
    proc = run_ralph("build", "--parallel", "3", timeout=90,
                     env={**setup, "STUB_SLEEP": "0.5", "STUB_ACTION": waiting_action("a")})
    assert proc.returncode == 0, proc.stderr
    spans = intervals(tmp_path)
    assert ran_together(spans, "a", "b")
    assert not ran_together(spans, "u", "a") and not ran_together(spans, "u", "b")


def test_a_backlog_without_specs_or_components_says_why_it_runs_one_at_a_time(
        run_ralph, run_task, setup):
    plan(run_task, [{"id": "u", "t": "One"}, {"id": "v", "t": "Two"}])
    proc = run_ralph("build", "--parallel", "2", timeout=90, env=setup)
    assert proc.returncode == 0, proc.stderr
    assert ("parallel: 1 session at a time: every open task is untagged and has no spec\n"
            in proc.stderr)


def test_component_tags_place_a_task_before_its_spec(run_ralph, run_task, setup, tmp_path):
    """x and y share a component though their specs differ: never together. s has only a
    spec, x's: it is placed by that spec, which no component overlaps, so it runs beside x."""
    plan(run_task, [{"id": "x", "t": "API one", "spec": "auth.md", "cat": "component:api",
                     "p": 1},
                    {"id": "s", "t": "Auth docs", "spec": "auth.md", "p": 2},
                    {"id": "y", "t": "API two", "spec": "billing.md", "cat": "component:api",
                     "p": 3}])
    proc = run_ralph("build", "--parallel", "3", timeout=90,
                     env={**setup, "STUB_SLEEP": "0.5", "STUB_ACTION": waiting_action("s")})
    assert proc.returncode == 0, proc.stderr
    spans = intervals(tmp_path)
    assert not ran_together(spans, "x", "y")
    assert ran_together(spans, "s", "x") or ran_together(spans, "s", "y")


def test_a_merge_conflict_between_tasks_of_different_specs_reopens_one_with_the_reason(
        run_ralph, run_task, setup, git_repo, base_env):
    plan(run_task, [{"id": "left", "t": "Left", "spec": "left.md"},
                    {"id": "right", "t": "Right", "spec": "right.md"}])
    env = {**setup, "STUB_FILE": "README.md", "STUB_ACTION": waiting_action("left", "right")}
    proc = run_ralph("build", "--parallel", "2", env=env, timeout=90)
    assert proc.returncode == 0, proc.stderr
    tasks = export(run_task)
    assert sorted(t["status"] for t in tasks.values()) == ["done", "open"]
    (failed,) = [t for t in tasks.values() if t["status"] == "open"]
    assert "conflicts in README.md; branch kept" in failed["fail_reason"]
    assert f"[{failed['id']}] failed: rebase of" in proc.stdout
    branches = git(git_repo, "branch", "--list", "ralph/*", "--format=%(refname:short)",
                   env=base_env).split()
    assert len(branches) == 1 and branches[0].endswith("/" + failed["id"])
    assert last_line(proc.stdout) == "No tasks available. Exiting loop."

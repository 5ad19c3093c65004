"""Black-box: what a session's agent calls as $RALPH_TASK_SCRIPT when the task command is the
project's own CLI. A launcher under .ralph/bin whose first line names the interpreter ralph runs
under, no `env` and no PATH lookup (docs/decisions/0035), so an agent's calls work with no
python on PATH at all: in the single loop and in a --parallel session's worktree, on the SQLite
file and on a PostgreSQL store (whose driver -S leaves off sys.path). scripts/task from a
checkout likewise starts the checkout's .venv interpreter without asking PATH."""
from __future__ import annotations

import os
import shutil
import sys

import pytest

from conftest import ROOT, TASK, ignore_ralph_dir, install_stub, read_jsonl, run_process

# The agent's task calls under a PATH that holds git alone: the task it was given (--parallel)
# or the one it claims, a commit, done. Shell built-ins only, since PATH has no sed or cat.
ACTION = r"""
PATH="$GIT_ONLY"
if [ -n "${RALPH_FROZEN_IDS_FILE:-}" ]; then
    read -r tid < "$RALPH_FROZEN_IDS_FILE"
else
    "$RALPH_TASK_SCRIPT" claim > "$OUT_DIR/claim" || exit 3
    while read -r key value; do
        if [ "$key" = "id:" ]; then tid=$value; break; fi
    done < "$OUT_DIR/claim"
fi
echo "$tid" > "out-$tid.txt"
git add -A >/dev/null && git commit -qm "work on $tid" >/dev/null
"$RALPH_TASK_SCRIPT" done "$tid" --result '{"commit":"abc"}' >/dev/null || exit 4
"""


@pytest.fixture
def git_only(tmp_path):
    """A PATH entry holding git alone: no python, no version manager's shim."""
    folder = tmp_path / "git-only"
    folder.mkdir()
    (folder / "git").symlink_to(shutil.which("git"))
    return folder


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
@pytest.mark.parametrize("parallel", [[], ["--parallel", "2"]], ids=["single loop", "parallel"])
def test_an_agent_calls_the_task_cli_through_a_launcher_that_needs_no_python_on_path(
        request, run_ralph, run_task, git_repo, base_env, bin_dir, tmp_path, git_only, store,
        parallel):
    if store == "postgresql":
        base_env["RALPH_TASKS_DB"] = request.getfixturevalue("pg_url")
    install_stub(bin_dir)
    ignore_ralph_dir(git_repo, base_env)
    for tid in ("t1", "t2"):
        assert run_task("create", tid, f"Task {tid}", "-c", f"component:{tid}").returncode == 0
    log = tmp_path / "agent.jsonl"
    proc = run_ralph("build", "-n", "2", *parallel, timeout=120, env={
        "STUB_ACTION": ACTION, "STUB_LOG": str(log), "GIT_ONLY": str(git_only),
        "OUT_DIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    scripts = {call["env"]["RALPH_TASK_SCRIPT"] for call in read_jsonl(log)}
    launcher = git_repo / ".ralph" / "bin" / "task"
    assert scripts == {str(launcher)}             # the worktrees' sessions get the same path
    first = launcher.read_text().splitlines()[0]
    assert first == f"#!{sys.executable} -S"      # absolute: no `env`, no PATH lookup
    assert os.access(launcher, os.X_OK)
    status = run_task("plan-status")
    assert status.stdout == "0 open, 0 active, 2 done, 0 blocked, 0 deleted\n", status.stderr


def test_an_external_task_command_is_exported_as_it_is_given(run_ralph, run_task, git_repo,
                                                             bin_dir, tmp_path):
    install_stub(bin_dir)
    assert run_task("create", "t1", "Task t1").returncode == 0
    log = tmp_path / "agent.jsonl"
    proc = run_ralph("build", "-n", "1", env={"RALPH_TASK_CMD": str(TASK), "STUB_LOG": str(log),
                                              "STUB_ACTION": "true"})
    assert proc.returncode == 0, proc.stderr
    assert read_jsonl(log)[0]["env"]["RALPH_TASK_SCRIPT"] == str(TASK)
    assert not (git_repo / ".ralph" / "bin").exists()


def test_the_launcher_is_written_again_only_when_it_differs(run_ralph, run_task, git_repo,
                                                           bin_dir):
    install_stub(bin_dir)
    assert run_task("create", "t1", "Task t1").returncode == 0
    launcher = git_repo / ".ralph" / "bin" / "task"
    assert run_ralph("build", "-n", "1", env={"STUB_ACTION": "true"}).returncode == 0
    first = launcher.stat()
    assert run_ralph("build", "-n", "1", env={"STUB_ACTION": "true"}).returncode == 0
    assert launcher.stat().st_ino == first.st_ino    # an atomic write is a new file
    launcher.write_text("#!/bin/sh\nexit 9\n")       # another ralph's, or damaged
    assert run_ralph("build", "-n", "1", env={"STUB_ACTION": "true"}).returncode == 0
    assert launcher.read_text().startswith(f"#!{sys.executable} -S\n")


def test_ralph_task_still_runs_the_task_cli(run_ralph, run_task):
    assert run_task("create", "t1", "Task t1").returncode == 0
    proc = run_ralph("task", "plan-status")
    assert (proc.returncode, proc.stdout) == (0, "1 open, 0 active, 0 done, 0 blocked, 0 deleted\n")


@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "python").exists(),
                    reason="no .venv in this checkout (make setup): scripts/task asks PATH")
def test_scripts_task_from_a_checkout_starts_its_venv_without_python_on_path(
        run_task, git_repo, base_env, git_only, tmp_path):
    assert run_task("create", "t1", "Task t1").returncode == 0
    link = tmp_path / "task"
    link.symlink_to(TASK)                         # as installed in a bin folder by a link
    (git_only / "readlink").symlink_to(shutil.which("readlink"))   # follows that link
    env = {**base_env, "PATH": str(git_only)}
    for script in (TASK, link):
        proc = run_process([str(script), "plan-status"], cwd=git_repo, env=env)
        assert (proc.returncode, proc.stdout, proc.stderr) == (
            0, "1 open, 0 active, 0 done, 0 blocked, 0 deleted\n", "")

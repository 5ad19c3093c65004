"""Installed, not from a checkout: `pip install .` into a fresh prefix, then the `ralph` and
`ralph-task` console scripts run a real build loop with the packaged task CLI, models.json,
skills and hooks (it "runs from a checkout and installed")."""
from __future__ import annotations

import fcntl
import json
import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import ROOT, install_stub, run_process
from sourcehelp import TK, agent_env, claims, commit_all, need, tool  # noqa: F401 (fixture)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A venv without pip, with ralph.py installed into it by the test venv's pip (no network:
    no deps, no build isolation). The dependencies (and setuptools for the build) come from
    the test venv through a .pth path line, which adds the directory without running its
    .pth files, so the checkout's editable install is not seen: ralphpy comes from the wheel."""
    prefix = tmp_path_factory.mktemp("installed") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(prefix)}))
    (purelib / "test-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    # pip builds in the checkout (its build/ and egg-info): one build at a time across the
    # xdist workers, or two of them overwrite each other's files mid-build.
    with open(tmp_path_factory.getbasetemp().parent / "packaging.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run([sys.executable, "-m", "pip", "--python", str(prefix / "bin" / "python"),
                        # --ignore-installed: the test venv's editable ralphpy is visible
                        # through the .pth line; without it pip would uninstall it from the
                        # test venv.
                        "install", "-q", "--no-deps", "--no-build-isolation",
                        "--ignore-installed", str(ROOT)],
                       check=True, capture_output=True)
    return prefix


def test_installed_console_scripts_run_a_build_loop_with_the_packaged_task_cli(
        installed, git_repo, base_env, bin_dir):
    install_stub(bin_dir)
    log = git_repo.parent / "stub.jsonl"
    env = {**base_env, "PATH": f"{installed / 'bin'}{os.pathsep}{base_env['PATH']}", "STUB_LOG": str(log)}
    synced = run_process([str(installed / "bin" / "ralph-task"), "plan-sync"], cwd=git_repo, env=env,
                         input='{"id":"t-1","t":"First"}\n')
    assert synced.returncode == 0, synced.stderr
    proc = run_process([str(installed / "bin" / "ralph"), "build", "-n", "1"], cwd=git_repo, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Mode:   build" in proc.stdout
    assert "Reached max iterations: 1" in proc.stdout
    # The agent is told about the installed task CLI (through the launcher that names the
    # installed interpreter) and the installed module's directory.
    seen = json.loads(log.read_text().splitlines()[0])["env"]
    launcher = git_repo / ".ralph" / "bin" / "task"
    assert seen["RALPH_TASK_SCRIPT"] == str(launcher)
    assert launcher.read_text().startswith(f"#!{installed / 'bin' / 'python'} -S\n")
    assert Path(seen["SCRIPT_DIR"]) == Path(sysconfig.get_path("purelib", vars={"base": str(installed)}))
    assert proc.stdout.count("deregistered ") == 1
    listed = run_process([str(installed / "bin" / "ralph"), "task", "list"], cwd=git_repo, env=env)
    assert listed.returncode == 0 and "t-1" in listed.stdout


def test_installed_ralph_resolves_bedrock_models_from_the_packaged_models_json(
        installed, git_repo, base_env, bin_dir):
    install_stub(bin_dir)
    log = git_repo.parent / "stub.jsonl"
    env = {**base_env, "PATH": f"{installed / 'bin'}{os.pathsep}{base_env['PATH']}",
           "CLAUDE_CODE_USE_BEDROCK": "1", "STUB_LOG": str(log)}
    proc = run_process([str(installed / "bin" / "ralph"), "plan", "-m", "sonnet"], cwd=git_repo, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Model:  sonnet (global.anthropic.claude-sonnet-4-5-20250929-v1:0)" in proc.stdout
    argv = json.loads(log.read_text().splitlines()[0])["argv"]
    assert argv[-2:] == ["--model", "global.anthropic.claude-sonnet-4-5-20250929-v1:0"]


def test_installed_ralph_install_copies_the_packaged_skills_and_hooks(installed, git_repo, base_env):
    env = {**base_env, "PATH": f"{installed / 'bin'}{os.pathsep}{base_env['PATH']}"}
    proc = run_process([str(installed / "bin" / "ralph"), "install", "--project", str(git_repo)],
                       cwd=git_repo, env=env)
    assert proc.returncode == 0, proc.stderr
    for name in ("ralph-plan", "ralph-build", "ralph-spec"):
        assert (git_repo / ".claude" / "skills" / name / "SKILL.md").is_file()
    hook = git_repo / ".claude" / "hooks" / "ralph" / "precompact"
    assert os.access(hook, os.X_OK)


def test_the_installed_task_cli_answers_from_the_backlog_the_tasks_setting_names(
        installed, git_repo, base_env, bin_dir, tmp_path, pg_url, agent_env):
    """An installed run's agents call `ralph-task` ($RALPH_TASK_SCRIPT): with `--tasks tk` it
    answers from the tickets (it answered from an empty SQLite file, so no ticket was ever
    claimed), and a store URL in RALPH_TASKS names the store, as for scripts/task."""
    need(TK)
    (bin_dir / "tk").symlink_to(TK)
    bin_path = f"{installed / 'bin'}{os.pathsep}{base_env['PATH']}"
    env = {**base_env, "PATH": bin_path, "TICKETS_DIR": "", **agent_env}
    (git_repo / ".gitignore").write_text(".ralph/\n")
    ticket = tool(["tk", "create", "The only ticket"], git_repo, env).stdout.strip()
    commit_all(git_repo, env, "a ticket")
    proc = run_process([str(installed / "bin" / "ralph"), "build", "-n", "2", "--tasks", "tk"],
                       cwd=git_repo, env=env)
    assert proc.returncode == 0, proc.stderr
    assert claims(tmp_path) == [ticket]
    assert "status: closed" in tool(["tk", "show", ticket], git_repo, env).stdout

    other = tmp_path / "other.db"
    env = {**base_env, "PATH": bin_path, "RALPH_TASKS": pg_url, "RALPH_TASKS_DB": str(other)}
    synced = run_process([str(installed / "bin" / "ralph-task"), "plan-sync"], cwd=git_repo,
                         env=env, input='{"id":"p-1","t":"On the server"}\n')
    assert synced.returncode == 0, synced.stderr
    listed = run_process([str(installed / "bin" / "ralph"), "task", "list"], cwd=git_repo, env=env)
    assert listed.returncode == 0 and "p-1" in listed.stdout, listed.stderr
    assert not other.exists()

"""Black-box: backend detection (docs/contract/ralph-cli.md s.6), model resolution (s.7), preflight
(s.8), session setup and its exports (s.9), the banner (s.10), agent register/deregister (s.9.4,
s.17)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import RALPH, ROOT, git
from loophelp import RULE, agent, tasks  # noqa: F401  (fixtures)

OPUS_BEDROCK = "global.anthropic.claude-opus-4-5-20251101-v1:0"


def settings(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = isinstance(value, str) and value[:1] in "{["     # a whole file's text, maybe invalid
    path.write_text(value if raw else json.dumps({"env": {"CLAUDE_CODE_USE_BEDROCK": value}}))


BACKENDS = [
    ({"CLAUDE_CODE_USE_BEDROCK": "1"}, {}, "bedrock"),
    ({"CLAUDE_CODE_USE_BEDROCK": "0"}, {"local": 1}, "anthropic"),
    ({"CLAUDE_CODE_USE_BEDROCK": "true"}, {"project": "1"}, "anthropic"),
    ({"CLAUDE_CODE_USE_BEDROCK": ""}, {"home": "1"}, "bedrock"),
    ({}, {}, "anthropic"),
    ({}, {"local": "1"}, "bedrock"),
    ({}, {"project": 1}, "bedrock"),
    ({}, {"home": "1"}, "bedrock"),
    ({}, {"local": "0", "project": "1"}, "bedrock"),
    ({}, {"local": "{not json", "home": 1}, "bedrock"),
    ({}, {"project": True}, "anthropic"),
    ({}, {"project": "true"}, "anthropic"),
    ({}, {"project": 2}, "anthropic"),
    ({}, {"project": '{"env": {}}'}, "anthropic"),
    ({}, {"project": '["env"]'}, "anthropic"),
    ({}, {"project": '{"env": "CLAUDE_CODE_USE_BEDROCK"}'}, "anthropic"),
]


@pytest.mark.parametrize("environ,files,expected", BACKENDS, ids=[
    "env-1", "env-0-beats-file", "env-true-is-anthropic", "env-empty-falls-to-files", "nothing",
    "local-string-1", "project-number-1", "home-1", "first-file-not-1-next-is", "invalid-json-skipped",
    "json-true-is-not-1", "string-true", "number-2", "no-key", "not-an-object", "env-not-an-object"])
def test_backend_is_detected_from_the_variable_then_the_settings_files(
        run_ralph, tasks, agent, git_repo, home, environ, files, expected):
    places = {"local": git_repo / ".claude" / "settings.local.json",
              "project": git_repo / ".claude" / "settings.json",
              "home": home / ".claude" / "settings.json"}
    for where, value in files.items():
        settings(places[where], value)
    proc = run_ralph("plan", "-m", "opus-4.5", env={**tasks.env, **agent.env, **environ})
    assert proc.returncode == 0, proc.stderr
    assert f"Backend: {expected}\n" in proc.stdout
    model = OPUS_BEDROCK if expected == "bedrock" else "opus-4.5"
    assert f"Model:  opus-4.5 ({model})\n" in proc.stdout
    assert agent.calls()[0]["argv"][-2:] == ["--model", model]


@pytest.mark.parametrize("alias,backend,model", [
    ("opus-4.5", "anthropic", "opus-4.5"), ("my-custom-model", "anthropic", "my-custom-model"),
    ("opus-4.6", "bedrock", "global.anthropic.claude-opus-4-6-v1"),
    ("opus-4.5", "bedrock", OPUS_BEDROCK),
    ("sonnet", "bedrock", "global.anthropic.claude-sonnet-4-5-20250929-v1:0"),
    ("haiku", "bedrock", "global.anthropic.claude-haiku-4-5-20251001-v1:0"),
    ("my-custom-model", "bedrock", "my-custom-model"),
], ids=lambda v: str(v))
def test_model_alias_resolves_per_backend_and_unknown_ones_pass_through(
        run_ralph, tasks, agent, alias, backend, model):
    env = {**tasks.env, **agent.env, "CLAUDE_CODE_USE_BEDROCK": "1" if backend == "bedrock" else "0"}
    proc = run_ralph("build", "--model", alias, "-n", "1", env=env)
    assert f"Model:  {alias} ({model})\n" in proc.stdout
    assert agent.calls() == [] or agent.calls()[0]["argv"][-2:] == ["--model", model]


def checkout_copy(tmp_path: Path, models: str | None) -> Path:
    """A checkout of ralph.py whose models.json is missing or replaced (lib/ shared)."""
    copy = tmp_path / "checkout"
    copy.mkdir()
    shutil.copy(RALPH, copy / "ralph.py")
    (copy / "lib").symlink_to(ROOT / "lib")
    (copy / "scripts").symlink_to(ROOT / "scripts") if (ROOT / "scripts").exists() else None
    if models is not None:
        (copy / "models.json").write_text(models)
    return copy / "ralph.py"


@pytest.mark.parametrize("models", [None, "{broken", '{"opus-4.5": {"bedrock": ""}}',
                                    '{"opus-4.5": {"bedrock": 7}}', '{"opus-4.5": "x"}'],
                         ids=["missing", "invalid", "empty-id", "non-string-id", "not-an-object"])
def test_model_is_the_alias_itself_when_models_json_has_no_usable_id(
        tmp_path, base_env, git_repo, tasks, agent, models):
    script = checkout_copy(tmp_path, models)
    env = {**base_env, **tasks.env, **agent.env, "CLAUDE_CODE_USE_BEDROCK": "1"}
    proc = subprocess.run([sys.executable, str(script), "plan", "-m", "opus-4.5"], cwd=git_repo,
                          env=env, capture_output=True, text=True, timeout=60)
    assert "Model:  opus-4.5 (opus-4.5)\n" in proc.stdout, proc.stderr


def test_models_json_is_read_from_the_script_dir(tmp_path, base_env, git_repo, tasks, agent):
    script = checkout_copy(tmp_path, '{"fast": {"anthropic": "claude-fast-1"}}')
    proc = subprocess.run([sys.executable, str(script), "plan", "-m", "fast"], cwd=git_repo,
                          env={**base_env, **tasks.env, **agent.env}, capture_output=True,
                          text=True, timeout=60)
    assert "Model:  fast (claude-fast-1)\n" in proc.stdout
    assert agent.calls()[0]["argv"][-2:] == ["--model", "claude-fast-1"]


NO_SPECS = "Error: No specs found. Run /ralph-spec first to generate specs in ./specs/\n"


@pytest.mark.parametrize("layout", ["missing", "empty", "file"])
@pytest.mark.parametrize("mode", ["plan", "build"])
def test_preflight_without_specs_prints_on_stdout_and_exits_1_before_anything(
        run_ralph, tasks, agent, git_repo, layout, mode):
    shutil.rmtree(git_repo / "specs")
    if layout == "empty":
        (git_repo / "specs").mkdir()
    elif layout == "file":
        (git_repo / "specs").write_text("not a dir")
    proc = run_ralph(mode, "-m", "sonnet", env={**tasks.env, **agent.env})
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, NO_SPECS, "")
    assert tasks.calls() == [] and agent.calls() == []
    assert not (git_repo / ".ralph").exists()


def test_preflight_counts_a_hidden_entry_as_a_spec(run_ralph, tasks, agent, git_repo):
    shutil.rmtree(git_repo / "specs")
    (git_repo / "specs").mkdir()
    (git_repo / "specs" / ".keep").write_text("")
    proc = run_ralph("plan", env={**tasks.env, **agent.env})
    assert proc.returncode == 0 and proc.stdout.startswith(RULE)


def test_preflight_needs_no_env_file_and_no_sqlite3_program(run_ralph, tasks, agent, base_env, tmp_path):
    tools = tmp_path / "tools"            # PATH: stubs, this python, and git alone
    tools.mkdir()
    (tools / "git").symlink_to(shutil.which("git"))
    path = os.pathsep.join([base_env["PATH"].split(os.pathsep)[0], str(Path(sys.executable).parent),
                            str(tools)])
    assert shutil.which("sqlite3", path=path) is None
    proc = run_ralph("plan", env={**tasks.env, **agent.env, "PATH": path})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sqlite3" not in proc.stdout + proc.stderr and len(agent.calls()) == 1


def banner(*lines: str) -> str:
    return "\n".join([RULE, *lines, RULE]) + "\n"


def test_build_banner_shows_every_line_in_order_with_its_spacing(run_ralph, tasks, agent):
    proc = run_ralph("build", "--danger", "-m", "sonnet", "-n", "3", env={**tasks.env, **agent.env})
    assert proc.stdout.startswith(banner(
        "Mode:   build", "Prompt: /ralph-build", "Branch: main",
        "Safe:   NO (--dangerously-skip-permissions)", "Backend: anthropic", "Agent:  ab12",
        "Model:  sonnet (sonnet)", "Max:    3 iterations"))


def test_plan_banner_has_no_agent_line_and_one_iteration(run_ralph, tasks, agent):
    proc = run_ralph("plan", env={**tasks.env, **agent.env})
    assert proc.stdout.startswith(banner(
        "Mode:   plan", "Prompt: /ralph-plan", "Branch: main", "Safe:   yes",
        "Backend: anthropic", "Max:    1 iteration"))


def test_build_banner_without_a_limit_or_model_has_no_max_and_no_model_line(run_ralph, tasks, agent):
    proc = run_ralph("build", env={**tasks.env, **agent.env})
    assert proc.stdout.startswith(banner(
        "Mode:   build", "Prompt: /ralph-build", "Branch: main", "Safe:   yes",
        "Backend: anthropic", "Agent:  ab12"))


def test_branch_line_shows_a_branch_name_with_a_slash(run_ralph, tasks, agent, git_repo):
    git(git_repo, "checkout", "-q", "-b", "feature/x")
    assert "\nBranch: feature/x\n" in run_ralph("plan", env={**tasks.env, **agent.env}).stdout


def test_branch_line_keeps_its_space_when_head_is_detached(run_ralph, tasks, agent, git_repo):
    git(git_repo, "checkout", "-q", "--detach")
    assert "\nBranch: \nSafe:" in run_ralph("plan", env={**tasks.env, **agent.env}).stdout


def test_branch_line_is_empty_outside_a_git_repository(run_ralph, tasks, agent, tmp_path):
    outside = tmp_path / "plain"
    (outside / "specs").mkdir(parents=True)
    (outside / "specs" / "a.md").write_text("x")
    proc = run_ralph("plan", env={**tasks.env, **agent.env, "GIT_CEILING_DIRECTORIES": str(tmp_path)},
                     cwd=outside)
    assert proc.returncode == 0
    assert "\nBranch: \nSafe:" in proc.stdout


def test_exports_reach_the_agent_and_every_task_call_after_setup(run_ralph, tasks, agent):
    tasks.script(peek=[{"out": "## Task t\nid: t\n"}, {"out": ""}],
                 _get_scope={"out": "noise\nrepo:acme/x y\nbranch:feat/b\nrepo:other\n"})
    proc = run_ralph("build", env={**tasks.env, **agent.env})
    assert proc.returncode == 0, proc.stderr
    expected = {"RALPH_TASK_SCRIPT": tasks.env["RALPH_TASK_CMD"], "SCRIPT_DIR": str(ROOT),
                "RALPH_SCOPE_REPO": "acme/x y", "RALPH_SCOPE_BRANCH": "feat/b",
                "RALPH_AGENT_ID": "ab12"}
    seen = agent.calls()[0]["env"]
    assert {k: seen.get(k) for k in expected} == expected
    records = tasks.records()
    assert records[0]["argv"] == ["_get-scope"] and records[1]["argv"] == ["agent", "register"]
    assert records[1]["env"]["RALPH_SCOPE_REPO"] == "acme/x y"
    for rec in records[2:]:
        assert {k: rec["env"].get(k) for k in expected} == expected


def test_scope_lines_that_are_missing_export_empty_strings(run_ralph, tasks, agent):
    tasks.script(_get_scope={"out": "something else\n"})
    run_ralph("plan", env={**tasks.env, **agent.env, "RALPH_SCOPE_REPO": "inherited/r"})
    seen = agent.calls()[0]["env"]
    assert (seen["RALPH_SCOPE_REPO"], seen["RALPH_SCOPE_BRANCH"]) == ("", "")


def test_a_failing_get_scope_leaves_the_scope_variables_as_inherited(run_ralph, tasks, agent):
    tasks.script(_get_scope={"out": "repo:ignored\nbranch:ignored\n", "rc": 1})
    run_ralph("plan", env={**tasks.env, **agent.env, "RALPH_SCOPE_REPO": "inherited/r"})
    seen = agent.calls()[0]["env"]
    assert seen["RALPH_SCOPE_REPO"] == "inherited/r" and "RALPH_SCOPE_BRANCH" not in seen


def test_agent_id_is_taken_from_register_output_even_when_it_fails(run_ralph, tasks, agent):
    tasks.script(agent_register={"out": "cd34\n\n", "rc": 1})
    proc = run_ralph("build", env={**tasks.env, **agent.env})
    assert "Agent:  cd34\n" in proc.stdout
    assert tasks.calls()[-1] == ["agent", "deregister", "cd34"]
    assert proc.stdout.endswith("No tasks available. Exiting loop.\nderegistered cd34\n")


def test_empty_register_output_means_no_agent_line_no_crash_safety_no_deregister(
        run_ralph, tasks, agent):
    tasks.script(agent_register={"out": "", "rc": 0},
                 peek=[{"out": "## Task t\nid: t\n"}, {"out": ""}],
                 list={"out": "## Task t\nid: t\n"})
    proc = run_ralph("build", env={**tasks.env, **agent.env, "RALPH_AGENT_ID": "inherited"})
    assert "Agent:" not in proc.stdout
    assert agent.calls()[0]["env"]["RALPH_AGENT_ID"] == "inherited"
    calls = tasks.calls()
    assert not any(c[0] in ("list", "fail") or c[:2] == ["agent", "deregister"] for c in calls)


def test_plan_mode_never_registers_an_agent_nor_sets_its_variable(run_ralph, tasks, agent):
    run_ralph("plan", "-n", "2", env={**tasks.env, **agent.env})
    assert ["agent", "register"] not in tasks.calls()
    assert all("RALPH_AGENT_ID" not in call["env"] for call in agent.calls())


def test_deregister_runs_once_and_its_output_is_visible(run_ralph, tasks, agent):
    tasks.script(peek={"out": "## Task t\nid: t\n"},
                 plan_status={"out": "3 open, 0 active, 0 done, 0 blocked, 0 deleted\n"})
    proc = run_ralph("build", "-n", "2", env={**tasks.env, **agent.env})
    assert proc.stdout.endswith("Reached max iterations: 2\nderegistered ab12\n")
    assert tasks.calls().count(["agent", "deregister", "ab12"]) == 1


def test_a_deregister_failure_is_ignored(run_ralph, tasks, agent):
    tasks.script(agent_deregister={"out": "", "rc": 2, "err": "Error: agent 'ab12' not found\n"})
    proc = run_ralph("build", env={**tasks.env, **agent.env})
    assert (proc.returncode, proc.stderr) == (0, "")


def test_an_unusable_task_command_skips_every_task_call_and_the_loop_goes_on(run_ralph, agent):
    proc = run_ralph("build", "-n", "2", env={**agent.env, "RALPH_TASK_CMD": "/nonexistent/task"})
    assert proc.returncode == 0
    assert "Agent:" not in proc.stdout
    assert agent.prompts() == ["/ralph-build", "/ralph-build"]
    assert proc.stdout.endswith("LOOP 2 ========================\nReached max iterations: 2\n")
    assert agent.calls()[0]["env"]["RALPH_TASK_SCRIPT"] == "/nonexistent/task"


def test_installed_layout_reads_the_packaged_models_json_and_exports_the_launcher(
        tmp_path, base_env, git_repo, agent):
    # As a console script: ralph.py sits in site-packages (no lib/, no models.json next to it)
    # and ralphpy is importable.
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(RALPH, site / "ralph.py")
    env = {**base_env, **agent.env, "PYTHONPATH": str(ROOT / "lib"), "CLAUDE_CODE_USE_BEDROCK": "1"}
    proc = subprocess.run([sys.executable, str(site / "ralph.py"), "plan", "-m", "opus-4.5"],
                          cwd=git_repo, env=env, capture_output=True, text=True, timeout=60)
    assert f"Model:  opus-4.5 ({OPUS_BEDROCK})\n" in proc.stdout, proc.stderr
    seen = agent.calls()[0]["env"]
    assert seen["SCRIPT_DIR"] == str(site)
    assert seen["RALPH_TASK_SCRIPT"] == str(git_repo / ".ralph" / "bin" / "task")   # its launcher
    assert seen["RALPH_SCOPE_REPO"] == "acme/widgets"


def test_run_by_a_python_without_pyyaml_it_re_execs_with_the_checkouts_venv(
        base_env, git_repo, tasks, agent):
    # -S: the base interpreter without its site-packages, as a bare system python3 is.
    bare_python = [str(Path(sys.base_prefix) / "bin" / "python3"), "-S"]
    probe = subprocess.run([*bare_python, "-c", "import yaml"], capture_output=True)
    if probe.returncode == 0 or not (ROOT / ".venv" / "bin" / "python").exists():
        pytest.skip("needs a base python whose standard library lacks PyYAML and a checkout .venv")
    proc = subprocess.run([*bare_python, str(RALPH), "plan"], cwd=git_repo,
                          env={**base_env, **tasks.env, **agent.env}, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert tasks.calls() == [["_get-scope"], ["list", "--all", "--markdown"]]

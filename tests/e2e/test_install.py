"""Black-box tests of `ralph install` (lib/ralphpy/install.py), run as `python -m
ralphpy.commands.install` in a real process with a private HOME: fresh install, idempotent re-install,
merging into an existing settings.json, refusals that write nothing, --user, --dry-run."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import RALPH, ROOT, run_process

DATA = ROOT / "lib" / "ralphpy" / "claude"
SKILLS = ["ralph-build", "ralph-plan", "ralph-spec"]
PROJECT_CMD = {"PreCompact": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/ralph/precompact',
               "SessionEnd": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/ralph/session_end'}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "proj"
    path.mkdir()
    return path


@pytest.fixture
def ralph_install(base_env: dict[str, str], project: Path):
    def run(*args: str, cwd: Path | None = None):
        env = {**base_env, "PYTHONPATH": str(ROOT / "lib")}
        return run_process([sys.executable, "-m", "ralphpy.commands.install", *args],
                           cwd=cwd or project, env=env, timeout=30)
    return run


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mode & 0o777)
            for p in sorted(root.rglob("*")) if p.is_file()}


def expected_paths(claude: Path) -> list[Path]:
    return ([claude / "skills" / name / "SKILL.md" for name in SKILLS]
            + [claude / "hooks" / "ralph" / "precompact", claude / "hooks" / "ralph" / "session_end",
               claude / "settings.json"])


def test_fresh_project_install_copies_skills_and_hooks_and_registers_both_hooks(
        ralph_install, project):
    result = ralph_install("--project", str(project))
    claude = project / ".claude"
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == [f"wrote {p}" for p in expected_paths(claude)]
    for name in SKILLS:
        assert ((claude / "skills" / name / "SKILL.md").read_bytes()
                == (DATA / "skills" / name / "SKILL.md").read_bytes())
    for name in ("precompact", "session_end"):
        hook = claude / "hooks" / "ralph" / name
        assert hook.read_bytes() == (ROOT / "scripts" / "hooks" / name).read_bytes()
        assert hook.stat().st_mode & 0o777 == 0o755
    settings = json.loads((claude / "settings.json").read_text())
    assert settings == {"hooks": {
        event: [{"matcher": "", "hooks": [{"type": "command", "command": command}]}]
        for event, command in PROJECT_CMD.items()}}


def test_project_defaults_to_the_current_directory(ralph_install, project):
    result = ralph_install()
    assert result.returncode == 0
    assert (project / ".claude" / "settings.json").exists()


def test_reinstall_changes_nothing_and_says_unchanged(ralph_install, project):
    assert ralph_install("--project", str(project)).returncode == 0
    before = snapshot(project)
    result = ralph_install("--project", str(project))
    assert result.returncode == 0
    assert result.stdout.splitlines() == [f"unchanged {p}"
                                          for p in expected_paths(project / ".claude")]
    assert snapshot(project) == before


def test_reinstall_repairs_a_changed_skill_and_a_hook_that_lost_its_exec_bit(ralph_install,
                                                                             project):
    ralph_install("--project", str(project))
    claude = project / ".claude"
    (claude / "skills" / "ralph-build" / "SKILL.md").write_text("edited\n")
    (claude / "hooks" / "ralph" / "precompact").chmod(0o644)
    result = ralph_install("--project", str(project))
    assert [line.split(" ", 1)[0] for line in result.stdout.splitlines()] == [
        "wrote", "unchanged", "unchanged", "wrote", "unchanged", "unchanged"]
    assert (claude / "hooks" / "ralph" / "precompact").stat().st_mode & 0o777 == 0o755


def test_install_keeps_every_other_key_and_hook_of_settings_json(ralph_install, project):
    claude = project / ".claude"
    claude.mkdir()
    theirs = {"type": "command", "command": "echo mine"}
    original = {
        "env": {"CLAUDE_CODE_USE_BEDROCK": "1"},
        "permissions": {"allow": ["Bash(git *)"]},
        "hooks": {
            "PreCompact": [{"matcher": "manual", "hooks": [theirs]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [theirs]}],
        },
        "model": "opus ünïcode",
    }
    (claude / "settings.json").write_text(json.dumps(original))
    assert ralph_install("--project", str(project)).returncode == 0
    settings = json.loads((claude / "settings.json").read_text(encoding="utf-8"))
    assert list(settings) == ["env", "permissions", "hooks", "model"]
    assert {k: settings[k] for k in ("env", "permissions", "model")} == {
        k: original[k] for k in ("env", "permissions", "model")}
    assert settings["hooks"]["PreToolUse"] == original["hooks"]["PreToolUse"]
    assert settings["hooks"]["PreCompact"] == [
        {"matcher": "manual", "hooks": [theirs]},
        {"matcher": "", "hooks": [{"type": "command", "command": PROJECT_CMD["PreCompact"]}]}]
    assert settings["hooks"]["SessionEnd"] == [
        {"matcher": "", "hooks": [{"type": "command", "command": PROJECT_CMD["SessionEnd"]}]}]


def test_a_hook_already_registered_by_hand_is_not_added_twice(ralph_install, project):
    claude = project / ".claude"
    claude.mkdir()
    mine = {"hooks": {"SessionEnd": [{"matcher": "other", "hooks": [
        {"type": "command", "command": "echo x"},
        {"type": "command", "command": PROJECT_CMD["SessionEnd"], "timeout": 30}]}]}}
    (claude / "settings.json").write_text(json.dumps(mine))
    ralph_install("--project", str(project))
    settings = json.loads((claude / "settings.json").read_text())
    assert settings["hooks"]["SessionEnd"] == mine["hooks"]["SessionEnd"]
    assert len(settings["hooks"]["PreCompact"]) == 1


@pytest.mark.parametrize("content,fragment", [
    ("{not json", "is not valid JSON"),
    ("", "is not valid JSON"),
    ("[1, 2]", "must hold a JSON object"),
    ('"text"', "must hold a JSON object"),
    ('{"hooks": []}', '"hooks" must be an object'),
    ('{"hooks": {"SessionEnd": {"matcher": ""}}}', '"hooks" must be an object'),
    (b'{"model": "\xff"}', "is not valid JSON"),
    (None, "cannot be read"),
], ids=["invalid", "empty", "array", "string", "hooks-list", "event-not-list", "not-utf8",
        "directory"])
def test_a_bad_settings_json_is_refused_and_nothing_is_written(ralph_install, project, content,
                                                              fragment):
    claude = project / ".claude"
    claude.mkdir()
    if content is None:
        (claude / "settings.json").mkdir()
    elif isinstance(content, bytes):
        (claude / "settings.json").write_bytes(content)
    else:
        (claude / "settings.json").write_text(content)
    before = snapshot(project)
    result = ralph_install("--project", str(project))
    assert (result.returncode, result.stdout) == (1, "")
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(f"Error: {claude / 'settings.json'}")
    assert fragment in result.stderr
    assert snapshot(project) == before


def test_user_install_goes_to_home_with_absolute_hook_commands(ralph_install, home, project):
    result = ralph_install("--user")
    claude = home / ".claude"
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == [f"wrote {p}" for p in expected_paths(claude)]
    settings = json.loads((claude / "settings.json").read_text())
    assert settings["hooks"]["PreCompact"][0]["hooks"][0]["command"] == str(
        claude / "hooks" / "ralph" / "precompact")
    assert not (project / ".claude").exists()


def test_dry_run_reports_what_it_would_write_and_writes_nothing(ralph_install, project):
    result = ralph_install("--project", str(project), "--dry-run")
    assert result.returncode == 0
    assert result.stdout.splitlines() == [f"would write {p}"
                                          for p in expected_paths(project / ".claude")]
    assert list(project.iterdir()) == []


@pytest.mark.parametrize("args,message", [
    (["--bogus"], "Error: Unknown option '--bogus'\nRun 'ralph install --help' for usage\n"),
    (["--project"], "Error: --project requires a directory\n"),
    (["--project", "/nonexistent/dir"], "Error: project directory '/nonexistent/dir' does not exist\n"),
    (["--user", "--project", "."], "Error: --project and --user are mutually exclusive\n"),
], ids=["unknown", "no-dir", "missing-dir", "both"])
def test_bad_arguments_give_one_error_and_exit_1(ralph_install, project, args, message):
    result = ralph_install(*args)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", message)
    assert list(project.iterdir()) == []


def test_help_lists_the_options(ralph_install):
    result = ralph_install("--help")
    assert result.returncode == 0
    assert result.stdout.startswith("Usage: ralph install [options]\n")
    for option in ("--project DIR", "--user", "--dry-run"):
        assert option in result.stdout


def test_a_claude_path_that_is_not_a_directory_is_an_environment_error(ralph_install, project):
    (project / ".claude").write_text("a file, not a directory\n")
    result = ralph_install("--project", str(project))
    assert (result.returncode, result.stdout) == (8, "")
    assert result.stderr.startswith("Error: cannot write ")
    assert len(result.stderr.splitlines()) == 1


def test_ralph_install_subcommand_runs_the_installer(base_env, project):
    result = run_process([sys.executable, str(RALPH), "install", "--project", str(project)],
                         cwd=project, env=base_env, timeout=30)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == [f"wrote {p}" for p in expected_paths(project / ".claude")]


@pytest.mark.parametrize("scope", ["--project", "--user"])
def test_registered_commands_run_through_a_shell_as_claude_code_runs_them(
        ralph_install, base_env, project, tmp_path, scope):
    ralph_install(*([scope, str(project)] if scope == "--project" else [scope]))
    claude = project / ".claude" if scope == "--project" else Path(base_env["HOME"]) / ".claude"
    settings = json.loads((claude / "settings.json").read_text())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**base_env, "CLAUDE_PROJECT_DIR": str(project)}
    outputs = {}
    for event in ("PreCompact", "SessionEnd"):
        command = settings["hooks"][event][0]["hooks"][0]["command"]
        result = run_process(["sh", "-c", command], cwd=elsewhere, env=env, input="{}")
        outputs[event] = (result.returncode, result.stdout, result.stderr)
    assert outputs == {"PreCompact": (0, '{"continue":true}\n', ""), "SessionEnd": (0, "", "")}

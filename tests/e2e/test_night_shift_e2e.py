"""Black-box tests of the night shift's settings (docs/night-shift.md): a malformed pace:, an
unknown agent in agents: (or --fallback-agent), an unknown model in escalate: are refused with
one `Error:` line, exit 1, before anything is written; and the session line names the agent
and model when the shift is on, never when it is off (the banner stays byte-exact)."""
from __future__ import annotations

import json

import pytest

import treehash
from conftest import git, ignore_ralph_dir, install_stub

KNOWN = "amp, claude, codex, gemini, opencode, pi"
MODELS = "haiku, opus, opus-4.5, opus-4.6, sonnet"


@pytest.mark.parametrize("args,yml,message", [
    (("--pace", "80"), "", "--pace must be a percentage from 1% to 100% (e.g. 80%), got '80'"),
    (("--pace", "120%"), "",
     "--pace must be a percentage from 1% to 100% (e.g. 80%), got '120%'"),
    ((), "pace: lots\n",
     "ralph.yml: pace must be a percentage from 1% to 100% (e.g. 80%), got 'lots'"),
    ((), "agents: [claude, codx]\n",
     f"ralph.yml: agents must be agents ralph knows ({KNOWN}); not 'codx', "
     "got ['claude', 'codx']"),
    (("--fallback-agent", "codex,cursor"), "",
     f"--fallback-agent must be agents ralph knows ({KNOWN}); not 'cursor', "
     "got ('codex', 'cursor')"),
    ((), "escalate: [haiku, sonet]\n",
     f"ralph.yml: escalate must be models of models.json or claude's own ({MODELS}, or a "
     "full claude-... id); not 'sonet', got ['haiku', 'sonet']"),
], ids=["pace-no-percent", "pace-over-100", "pace-yml", "agents-yml", "fallback-flag",
        "escalate-yml"])
def test_a_bad_night_shift_setting_is_one_error_line_exit_1_and_nothing_written(
        git_repo, run_ralph, bin_dir, args, yml, message):
    install_stub(bin_dir)
    if yml:
        (git_repo / "ralph.yml").write_text(yml)
    before = treehash.snapshot(git_repo)
    result = run_ralph("build", *args)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", f"Error: {message}\n")
    assert treehash.diff(before, treehash.snapshot(git_repo)) == []


DONE = r"""
tid=$(cat "$RALPH_FROZEN_IDS_FILE")
echo "$tid" > "out-$tid.txt"
git add -A >/dev/null && git commit -qm "work on $tid" >/dev/null
"$RALPH_TASK_SCRIPT" done "$tid" >/dev/null
"""


def test_parallel_sessions_hand_a_usage_limit_to_the_fallback_agent_without_waiting(
        git_repo, run_ralph, run_task, bin_dir, base_env, tmp_path):
    install_stub(bin_dir, "claude", "claude-limit")          # claude: always limited
    install_stub(bin_dir, "codex", "agent_cli")
    ignore_ralph_dir(git_repo, base_env)
    for tid in ("t1", "t2"):
        assert run_task("create", tid, f"Task {tid}", "-c", f"component:{tid}").returncode == 0
    log = tmp_path / "calls.jsonl"
    proc = run_ralph("build", "--parallel", "2", "--fallback-agent", "codex",
                     env={"STUB_LIMIT_KIND": "event", "STUB_ACTION": DONE, "STUB_LOG": str(log)},
                     timeout=90)
    assert proc.returncode == 0, proc.stderr
    tasks = {t["id"]: t["status"] for t in map(json.loads, run_task("_export-json").stdout
                                               .splitlines())}
    assert tasks == {"t1": "done", "t2": "done"}, proc.stdout + proc.stderr
    assert "Fallback: claude is limited until " in proc.stderr
    assert "Usage limit: waiting" not in proc.stdout
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert {c.get("prog", "claude") for c in calls} == {"claude", "codex"}
    assert sorted(c["env"]["RALPH_FROZEN_IDS_FILE"].rsplit("-", 1)[1]
                  for c in calls if c.get("prog") == "codex") == ["t1", "t2"]

"""Black-box tests of the night shift's settings (docs/night-shift.md): a malformed pace:, an
unknown agent in agents: (or --fallback-agent), an unknown model in escalate: are refused with
one `Error:` line, exit 1, before anything is written; and the session line names the agent
and model when the shift is on, never when it is off (the banner stays byte-exact)."""
from __future__ import annotations

import json

import pytest

import treehash
from conftest import install_stub

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

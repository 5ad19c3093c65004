"""ralphpy.agents.version: the release of the agent CLI a session ran, from its stream, else
from the npm package that installed the binary on the session's PATH (real files laid out as
npm lays them out), read once per run and never by running the CLI."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from ralphpy.agents import adapters, version


def npm_install(prefix: Path, package: str, release: str, bins: dict | str,
                main: str = "bin/cli.js") -> Path:
    """`package` at `release` under prefix/node_modules, its `main` file linked from .bin as
    npm links each command of `bins`; returns the PATH entry (node_modules/.bin)."""
    root = prefix / "node_modules" / package
    (root / main).parent.mkdir(parents=True)
    (root / main).write_text("#!/bin/sh\necho should never run >&2\nexit 99\n")
    (root / main).chmod(0o755)
    (root / "package.json").write_text(json.dumps({"name": package, "version": release,
                                                   "bin": bins}))
    dot_bin = prefix / "node_modules" / ".bin"
    dot_bin.mkdir(exist_ok=True)
    names = bins if isinstance(bins, dict) else {package.rsplit("/", 1)[-1]: bins}
    for name in names:
        (dot_bin / name).symlink_to(Path("..") / package / main)
    return dot_bin


def summary(cli_version: str | None = None):
    return SimpleNamespace(cli_version=cli_version)


@pytest.mark.parametrize("agent,package,main", [
    ("codex", "@openai/codex", "bin/codex.js"), ("gemini", "@google/gemini-cli",
                                                 "bundle/gemini.js"),
    ("pi", "@mariozechner/pi-coding-agent", "dist/cli.js"), ("opencode", "opencode-ai",
                                                            "bin/opencode.exe")],
    ids=["codex", "gemini", "pi", "opencode"])
def test_the_release_is_the_npm_package_s_that_installed_the_binary(tmp_path, agent, package,
                                                                      main):
    path = npm_install(tmp_path, package, "9.8.7", {agent: main}, main)
    assert version.session_fields(adapters.get_adapter(agent), summary(),
                                  {"PATH": f"{path}:/usr/bin"}) == {"agent_version": "9.8.7"}


def test_the_release_the_stream_names_wins_over_the_installed_package(tmp_path):
    path = npm_install(tmp_path, "@anthropic-ai/claude-code", "2.1.328", {"claude": "cli.js"},
                       "cli.js")
    fields = version.session_fields(adapters.get_adapter("claude"), summary("2.1.332"),
                                    {"PATH": str(path)})
    assert fields == {"agent_version": "2.1.332"}


def test_a_bin_given_as_one_path_counts_for_the_package_s_own_name(tmp_path):
    path = npm_install(tmp_path, "opencode-ai", "1.2.3", "bin/opencode", "bin/opencode")
    (path / "opencode-ai").rename(path / "opencode")
    assert version.of_session(adapters.get_adapter("opencode"), summary(),
                              {"PATH": str(path)}) is None          # opencode-ai is not opencode
    path = npm_install(tmp_path / "b", "@x/codex", "4.5.6", "bin/cli.js")
    assert version.of_session(adapters.get_adapter("codex"), summary(),
                              {"PATH": str(path)}) == "4.5.6"


def test_a_binary_of_another_package_or_of_none_names_no_release(tmp_path):
    # --agent-cmd 'npx -y @openai/codex': npm's npx is no codex
    path = npm_install(tmp_path, "npm", "10.0.0", {"npx": "bin/npx-cli.js"}, "bin/npx-cli.js")
    codex = adapters.get_adapter("codex", "npx -y @openai/codex")
    assert version.session_fields(codex, summary(), {"PATH": str(path)}) == {}
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "pi").write_text("#!/bin/sh\n")
    (bare / "pi").chmod(0o755)
    assert version.session_fields(adapters.get_adapter("pi"), summary(),
                                  {"PATH": str(bare)}) == {}
    assert version.session_fields(adapters.get_adapter("gemini"), summary(),
                                  {"PATH": str(tmp_path / "nowhere")}) == {}


def test_the_command_backend_names_no_release(tmp_path):
    path = npm_install(tmp_path, "aider", "0.1.0", {"aider": "bin/aider"}, "bin/aider")
    adapter = adapters.get_adapter("command", "aider --yes {prompt}")
    assert version.session_fields(adapter, summary(), {"PATH": str(path)}) == {}


def test_the_installed_release_is_read_once_per_run(tmp_path):
    path = npm_install(tmp_path, "@google/gemini-cli", "0.61.0", {"gemini": "bundle/gemini.js"},
                       "bundle/gemini.js")
    env = {"PATH": str(path)}
    gemini = adapters.get_adapter("gemini")
    assert version.of_session(gemini, summary(), env) == "0.61.0"
    manifest = path.parent / "@google" / "gemini-cli" / "package.json"
    manifest.write_text(manifest.read_text().replace("0.61.0", "0.62.0"))   # updated mid-run
    assert version.of_session(gemini, summary(), env) == "0.61.0"

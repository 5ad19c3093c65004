"""Where the real agent CLIs are (`make agents` installs them into .agents/), the skip that
names what is missing, and the environment that keeps them on loopback: no telemetry, no
update checks, no error reports, a private HOME, and the API pointed at a stand-in.

`RALPH_AGENTS_DIR` names other npm prefixes instead, searched in order as PATH is
(`.agents-latest/codex:.agents`): the canary (canary/run.py) runs one CLI's tests against its
newest release that way, the other CLIs staying the pinned ones."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AGENTS_DIRS = [Path(d) for d in os.environ.get("RALPH_AGENTS_DIR", str(ROOT / ".agents"))
               .split(os.pathsep) if d]
AGENTS_BINS = [d / "node_modules" / ".bin" for d in AGENTS_DIRS]
AGENTS_BIN = AGENTS_BINS[0]
CLIS = ("claude", "codex", "gemini", "opencode", "pi", "amp")

# What makes the CLIs stay quiet on the network (each CLI's documented switches).
QUIET = {
    "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1",
    "DISABLE_BUG_COMMAND": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_ENABLE_TELEMETRY": "0", "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
    "GEMINI_TELEMETRY_ENABLED": "false", "GEMINI_CLI_DISABLE_AUTO_UPDATE": "true",
    "OPENCODE_DISABLE_AUTOUPDATE": "true", "OPENCODE_DISABLE_SHARE": "true",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "true", "OPENCODE_DISABLE_MODELS_FETCH": "true",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "true", "PI_OFFLINE": "1", "AMP_SKIP_UPDATE_CHECK": "1",
    "NO_UPDATE_NOTIFIER": "1", "NO_COLOR": "1", "CI": "1",
}


def missing_reason() -> str | None:
    """Why the real CLIs cannot run here, or None when they can."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return ("npm/node are not installed: the real agent CLIs cannot be installed "
                "(apt-get install nodejs npm, then make agents)")
    absent = [c for c in CLIS if not any((b / c).exists() for b in AGENTS_BINS)]
    if absent:
        where = os.pathsep.join(map(str, AGENTS_BINS))
        return (f"real agent CLIs not installed in {where} ({', '.join(absent)} missing): "
                "run make agents")
    return None


needs_clis = pytest.mark.skipif(missing_reason() is not None, reason=missing_reason() or "")


def real_env(base_env: dict[str, str], home: Path, **extra: str) -> dict[str, str]:
    """base_env with the pinned CLIs (or RALPH_AGENTS_DIR's) first on PATH, the quiet switches
    and a private HOME and temp directory."""
    env = {k: v for k, v in base_env.items()
           if not k.upper().endswith("_PROXY") and not k.startswith(("ANTHROPIC_", "OPENAI_",
                                                                     "GEMINI_", "GOOGLE_",
                                                                     "AMP_"))}
    env.update(QUIET)
    env["PATH"] = os.pathsep.join([*map(str, AGENTS_BINS), env["PATH"]])
    env["HOME"] = str(home)
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    env["XDG_DATA_HOME"] = str(home / ".local" / "share")
    env["XDG_CACHE_HOME"] = str(home / ".cache")
    # gemini writes an error report to the temp directory at each failed API call: kept in
    # the test's own tree, never in the machine's /tmp
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    env["TMPDIR"] = str(home / "tmp")
    env.update(extra)
    return env


def claude_env(base_env: dict[str, str], home: Path, url: str, *, oauth: bool = False,
               **extra: str) -> dict[str, str]:
    """The real `claude` on the stand-in at `url`, allowed to skip permission prompts as root
    (IS_SANDBOX=1: the test machine is a container). API-key auth (ANTHROPIC_API_KEY), or
    with `oauth` subscription auth (CLAUDE_CODE_OAUTH_TOKEN, any value)."""
    auth = {"CLAUDE_CODE_OAUTH_TOKEN": "oauth-test"} if oauth else {
        "ANTHROPIC_API_KEY": "sk-ant-test"}
    return real_env(base_env, home, **{"ANTHROPIC_BASE_URL": url, "IS_SANDBOX": "1", **auth,
                                       **extra})


def installed_version(cli: str) -> str:
    """The version of the npm package whose command `cli` the tests run (the first prefix of
    AGENTS_BINS that has it): what a session's `agent_version` should name."""
    target = next(b / cli for b in AGENTS_BINS if (b / cli).exists()).resolve()
    root = next(d for d in target.parents if (d / "package.json").is_file())
    return json.loads((root / "package.json").read_text())["version"]


def events(repo: Path, name: str | None = None) -> list[dict]:
    runs = sorted((repo / ".ralph" / "runs").iterdir(), key=lambda p: p.stat().st_mtime)
    found = [json.loads(line) for line in (runs[-1] / "events.jsonl").read_text().splitlines()]
    return [e for e in found if name is None or e["event"] == name]


def tasks_of(run_task) -> dict[str, dict]:
    out = run_task("_export-json").stdout
    return {row["id"]: row for row in map(json.loads, filter(str.strip, out.splitlines()))}


def ralph_install(repo: Path, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, str(ROOT / "ralph.py"), "install", "--project", str(repo)],
                   cwd=repo, env=env, check=True, capture_output=True, stdin=subprocess.DEVNULL)


__all__ = ["needs_clis", "missing_reason", "real_env", "claude_env", "events", "tasks_of",
           "installed_version",
           "ralph_install", "AGENTS_BIN", "AGENTS_BINS", "CLIS", "ROOT"]

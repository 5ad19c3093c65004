"""Fixtures shared by the task-source tests: the vendored real tools (tk, flowctl), a git repo
holding a small backlog in each, and a stub agent that claims and finishes through
$RALPH_TASK_SCRIPT. The tools are found in $RALPH_VENDOR_DIR, else ../shared/vendor beside the
checkout, and used from there (never copied); flowctl through `flowctl_launcher`."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from conftest import ROOT, TASK, git, install_stub, run_process

VENDOR = Path(os.environ.get("RALPH_VENDOR_DIR") or ROOT.parent / "shared" / "vendor")
TK = VENDOR / "ticket" / "tk"
FLOWCTL = VENDOR / "flow-next" / "flowctl"
FLOWCTL_PY = FLOWCTL.parent / "flowctl.py"

# The agent: claim through the contract, commit, finish (STUB_FAIL: exit without finishing).
AGENT = r"""
out=$("$RALPH_TASK_SCRIPT" claim) || exit 0
tid=$(printf '%s\n' "$out" | sed -n 's/^id: //p' | head -n 1)
echo "$tid" >> "$STUB_CLAIMS"
echo "$tid" > "work-$tid.txt"
git add "work-$tid.txt" && git commit -qm "work on $tid"
[ -n "$STUB_FAIL" ] && exit 1
"$RALPH_TASK_SCRIPT" done "$tid" --result "{\"commit\": \"$(git rev-parse HEAD)\"}" >/dev/null
"""


def need(tool: Path) -> None:
    if not os.access(tool, os.X_OK):
        pytest.skip(f"vendored {tool.name} not found at {tool} (set RALPH_VENDOR_DIR)")


@pytest.fixture(scope="session")
def flowctl_launcher(tmp_path_factory) -> Path:
    """The vendored flowctl.py, imported with its bytecode cached: a launcher to use where
    the tests would run the vendored `flowctl`. That wrapper picks a Python and runs flowctl.py
    (51,000 lines) as a script, which Python compiles again at every call: 0.4 of its 0.7 s of
    CPU, most of these tests' time. The launcher runs the same code the same way (`main()`,
    argv[0] the file itself, so its messages are the same); the wrapper's own path stays
    covered by the flowctl test whose run goes through it."""
    need(FLOWCTL)
    cache = tmp_path_factory.mktemp("flowctl-bytecode")
    launcher = cache / "flowctl"
    launcher.write_text(
        "#!/usr/bin/env python3\n"
        "import sys\n"
        "sys.dont_write_bytecode = False\n"
        f"sys.pycache_prefix = {str(cache)!r}\n"
        f"sys.path.insert(0, {str(FLOWCTL_PY.parent)!r})\n"
        f"sys.argv[0] = {str(FLOWCTL_PY)!r}\n"
        "import flowctl\n"
        "flowctl.main()\n")
    launcher.chmod(0o755)
    return launcher


def tool(argv: list[str], repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=120)


def commit_all(repo: Path, env: dict[str, str], message: str) -> None:
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-qm", message, env=env)


@pytest.fixture
def agent_env(bin_dir: Path, tmp_path: Path) -> dict[str, str]:
    install_stub(bin_dir)
    return {"STUB_ACTION": AGENT, "STUB_CLAIMS": str(tmp_path / "claims.txt")}


def claims(tmp_path: Path) -> list[str]:
    path = tmp_path / "claims.txt"
    return path.read_text().split() if path.exists() else []


def as_sessions(env: dict[str, str], repo: Path, claims_dir: Path,
                timeout: float = 60) -> Callable[..., subprocess.CompletedProcess]:
    """The task CLI run as a ralph session's agent runs it: task(*args, agent=...) with that
    agent's id and claims file (claims_dir/claims-<agent>) over env."""
    def task(*args: str, agent: str) -> subprocess.CompletedProcess:
        session = {"RALPH_AGENT_ID": agent,
                   "RALPH_CLAIMS_FILE": str(claims_dir / f"claims-{agent}")}
        return run_process([sys.executable, str(TASK), *args], cwd=repo, env={**env, **session},
                           timeout=timeout)
    return task


def assert_another_agents_calls_refused(task: Callable[..., subprocess.CompletedProcess],
                                        tid: str) -> None:
    """Held by agent one, the task is neither finished nor failed by agent two's session."""
    for args in (["done", tid, "--result", '{"commit":"abc"}'], ["fail", tid]):
        proc = task(*args, agent="two")
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
            f"Error: task '{tid}' is held by agent 'one', not by this session's agent "
            "'two': nothing written\n"))

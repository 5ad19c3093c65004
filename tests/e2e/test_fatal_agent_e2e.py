"""Black-box: failures a real agent CLI reports that waiting cannot fix end the run at the first
session, each with its own exit code and a line that quotes the CLI and says what to do; the
CLI's API retries are shown one line each. The stub agent replays exactly what the real
`claude` 2.1.328, or the real amp, printed in each case (tests/e2e_real drives the real CLIs
through the same)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import STUBS, ignore_ralph_dir

ROOT_LINE = ("--dangerously-skip-permissions cannot be used with root/sudo privileges for "
             "security reasons")
INIT = {"type": "system", "subtype": "init", "session_id": "s1", "tools": ["Bash"],
        "apiKeySource": "ANTHROPIC_API_KEY", "claude_code_version": "2.1.328"}


def retry(attempt: int, status: int, error: str, delay_ms: int) -> dict:
    return {"type": "system", "subtype": "api_retry", "attempt": attempt, "max_retries": 10,
            "retry_delay_ms": delay_ms, "error_status": status, "error": error,
            "session_id": "s1", "uuid": f"u{attempt}"}


def result(text: str, is_error: bool) -> dict:
    return {"type": "result", "subtype": "success", "is_error": is_error, "num_turns": 1,
            "result": text, "total_cost_usd": 0, "session_id": "s1"}


@pytest.fixture
def stub(bin_dir: Path, tmp_path: Path, run_task):
    """stub(events, action) -> env: `claude` replays `events` (one JSON a line), then runs the
    shell `action`; every call is logged. One open task in the backlog."""
    lines = "".join(json.dumps({"id": s, "t": f"Task {s}"}) + "\n" for s in ("t1", "t2"))
    assert run_task("plan-sync", input=lines).returncode == 0
    (bin_dir / "claude").symlink_to(STUBS / "claude")

    def make(events: list[dict], action: str = "") -> dict[str, str]:
        stream = tmp_path / "stream.jsonl"
        stream.write_text("".join(json.dumps(e) + "\n" for e in events))
        env = {"STUB_LOG": str(tmp_path / "calls.jsonl"), "STUB_STREAM": str(stream)}
        if action:
            env["STUB_ACTION"] = action
        return env
    return make


def calls(tmp_path: Path) -> int:
    path = tmp_path / "calls.jsonl"
    return len(path.read_text().splitlines()) if path.exists() else 0


def session_ends(repo: Path) -> list[dict]:
    runs = sorted((repo / ".ralph" / "runs").iterdir(), key=lambda p: p.stat().st_mtime)
    lines = (runs[-1] / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == "session_end"]


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the refusal happens only as root "
                                "(euid 0); this test process is not root")


@needs_root
def test_danger_as_root_without_is_sandbox_1_stops_at_the_first_session_with_exit_10(
        git_repo, run_ralph, stub, tmp_path):
    env = stub([], f"echo '{ROOT_LINE}' >&2; exit 1")
    proc = run_ralph("build", "--danger", "-n", "4", env={**env, "IS_SANDBOX": "yes"})
    assert proc.returncode == 10, proc.stderr
    assert calls(tmp_path) == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f'Error: claude refused to start as root: "{ROOT_LINE}"')
    assert "set IS_SANDBOX=1" in last
    assert [e["class"] for e in session_ends(git_repo)] == ["root_refused"]


@needs_root
def test_danger_as_root_with_is_sandbox_is_not_a_refusal(git_repo, run_ralph, stub, tmp_path):
    env = stub([], "exit 1")
    proc = run_ralph("build", "--danger", "-n", "2", env={**env, "IS_SANDBOX": "1"})
    assert proc.returncode == 0, proc.stderr
    assert calls(tmp_path) == 2
    assert [e["class"] for e in session_ends(git_repo)] == ["agent_error", "agent_error"]


def test_an_invalid_api_key_stops_the_run_with_exit_9(git_repo, run_ralph, stub, tmp_path):
    env = stub([INIT, {"type": "assistant", "message": {"content": [
        {"type": "text", "text": "Invalid API key · Fix external API key"}]}},
        result("Invalid API key · Fix external API key", True)], "exit 1")
    proc = run_ralph("build", "-n", "4", env=env)
    assert proc.returncode == 9, proc.stderr
    assert calls(tmp_path) == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "Error: authentication failed: Invalid API key · Fix external API key; log in again "
        "(`claude /login`) or fix the API key (ANTHROPIC_API_KEY), then start the run again")
    assert [e["class"] for e in session_ends(git_repo)] == ["auth_failure"]


def test_an_invalid_api_key_stops_a_parallel_run_with_exit_9_and_starts_no_session_more(
        git_repo, base_env, run_ralph, stub, tmp_path):
    ignore_ralph_dir(git_repo, base_env)
    env = stub([INIT, {"type": "assistant", "message": {"content": [
        {"type": "text", "text": "Invalid API key · Fix external API key"}]}},
        result("Invalid API key · Fix external API key", True)], "exit 1")
    proc = run_ralph("build", "--parallel", "2", "-n", "6", env=env)
    assert proc.returncode == 9, proc.stderr
    assert calls(tmp_path) <= 2                         # the sessions already running end
    assert proc.stderr.strip().splitlines()[-1] == (
        "Error: authentication failed: Invalid API key · Fix external API key; log in again "
        "(`claude /login`) or fix the API key (ANTHROPIC_API_KEY), then start the run again")
    assert {e["class"] for e in session_ends(git_repo)} == {"auth_failure"}


def test_a_cli_retrying_a_rejected_key_is_stopped_at_once(git_repo, run_ralph, stub, tmp_path):
    # The real CLI retries a 401 ten times with growing delays (minutes): the first retry is
    # enough to know, so the session is ended there and the run stops.
    env = stub([INIT, retry(1, 401, "authentication_failed", 551)],
               f"sleep 30; touch {tmp_path / 'waited'}")
    proc = run_ralph("build", "-n", "4", env=env)
    assert proc.returncode == 9, proc.stderr
    assert not (tmp_path / "waited").exists()
    assert "\nAPI retry 1/10: 401 authentication_failed; next attempt in 0.6s\n" in proc.stdout
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: authentication failed: API retry 1/10: 401 "
                           "authentication_failed; next attempt in 0.6s; log in again")
    ends = session_ends(git_repo)
    assert [e["class"] for e in ends] == ["auth_failure"] and ends[0]["api_retries"] == 1


def test_overloaded_and_rate_limited_retries_show_one_line_each_and_are_counted(
        git_repo, run_ralph, stub, tmp_path):
    env = stub([INIT, retry(1, 529, "overloaded", 520), retry(2, 429, "rate_limit", 1117),
                retry(3, 500, "server_error", 2290),
                {"type": "assistant", "message": {"content": [{"type": "text", "text": "ok"}]}},
                result("ok", False)])
    proc = run_ralph("build", "-n", "1", env=env)
    assert proc.returncode == 0, proc.stderr
    assert ("\nAPI retry 1/10: 529 overloaded; next attempt in 0.5s\n"
            "\nAPI retry 2/10: 429 rate_limit; next attempt in 1.1s\n"
            "\nAPI retry 3/10: 500 server_error; next attempt in 2.3s\n"
            "ok\n━━ Done (success)") in proc.stdout
    ends = session_ends(git_repo)
    assert ends[0]["api_retries"] == 3 and ends[0]["class"] == "success"


# amp says a refused key or a thread refused for lack of credit on stderr only (nothing on
# stdout, exit 1), and waits for a login it started when it has no key at all: the stub plays
# the real amp's exact lines (tests/e2e_real/test_amp_real.py runs the real one).
AMP_KEY = "Error: Invalid or missing API key. Run 'amp login' to authenticate."
AMP_LOGIN = ("; log in again (`amp login`) or fix the API key (AMP_API_KEY), then start the "
             "run again")


@pytest.fixture
def amp(bin_dir: Path, tmp_path: Path, stub):
    """amp(action) -> env: the stub is `amp`, running the shell `action`; two open tasks."""
    stub([])                                            # the backlog of the `stub` fixture
    (bin_dir / "amp").symlink_to(STUBS / "agent_cli")
    return lambda action: {"STUB_LOG": str(tmp_path / "calls.jsonl"), "STUB_ACTION": action}


@pytest.mark.parametrize("line,code,last,kind", [
    (AMP_KEY, 9, "Error: authentication failed: Invalid or missing API key. Run 'amp login' to "
     "authenticate" + AMP_LOGIN, "auth_failure"),
    ("Error: Insufficient credit balance", 7, "Error: amp refused the session for lack of "
     "credit: Insufficient credit balance; add credits to the Amp account (waiting cannot "
     "help), then start the run again", "usage_disabled"),
], ids=["key", "no-credit"])
def test_an_amp_refusal_said_on_stderr_stops_the_run_and_is_passed_on(
        git_repo, run_ralph, run_task, amp, tmp_path, line, code, last, kind):
    proc = run_ralph("build", "--agent", "amp", "-n", "4", env=amp(f'echo "{line}" >&2; exit 1'))
    assert proc.returncode == code, proc.stderr
    assert calls(tmp_path) == 1
    assert proc.stderr == f"{line}\n{last}\n"                # amp's line, then ralph's one
    assert [e["class"] for e in session_ends(git_repo)] == [kind]
    assert {t["status"] for t in map(json.loads, run_task("_export-json").stdout.splitlines())
            } == {"open"}


def test_amps_other_errors_on_stderr_are_agent_errors(git_repo, run_ralph, amp, tmp_path):
    proc = run_ralph("build", "--agent", "amp", "-n", "2",
                     env=amp('echo "Error: Cannot reach Amp servers. Are you offline?" >&2; '
                             'exit 1'))
    assert proc.returncode == 0, proc.stderr
    assert calls(tmp_path) == 2
    assert proc.stderr.count("Error: Cannot reach Amp servers. Are you offline?\n") == 2
    assert [e["class"] for e in session_ends(git_repo)] == ["agent_error", "agent_error"]


def test_amp_waiting_for_a_login_without_a_key_is_stopped_at_once(git_repo, run_ralph, amp,
                                                                  tmp_path):
    proc = run_ralph("build", "--agent", "amp", "-n", "4", env=amp(
        "echo 'No API key found. Starting login flow...'; printf 'paste your code here: '; "
        f"sleep 30; touch {tmp_path / 'waited'}"))
    assert proc.returncode == 9, proc.stderr
    assert not (tmp_path / "waited").exists() and calls(tmp_path) == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "Error: authentication failed: No API key found (amp would wait for an interactive "
        "login)" + AMP_LOGIN)
    assert [e["class"] for e in session_ends(git_repo)] == ["auth_failure"]

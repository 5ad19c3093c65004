"""Black-box, with the real amp CLI (pinned in package.json) against a stand-in for Amp's own
server (standin_amp.py). amp's agent loop and model calls run on Amp's server, which no
stand-in plays, so every session here ends at the latest when amp asks for a thread: these
tests prove the argv, and that each refusal amp can meet there stops the run at once, with its
exit code and one line naming amp's words, the task left open: a refused or missing key (exit
9), a thread refused for lack of credit (exit 7). amp says the first and the last only on its
stderr, which ralph reads for amp and passes on as it comes."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ignore_ralph_dir
from realcli import events, needs_clis, real_env, tasks_of
from standin_amp import AmpStandIn

pytestmark = [needs_clis, pytest.mark.timeout(240)]

USAGE_ERRORS = ("Unknown option", "unknown option", "unexpected argument", "Usage:",
                "unrecognized", "Unknown argument")
CREDIT = "Insufficient credit balance (stand-in)"
NO_CREDIT_LINE = (f"Error: amp refused the session for lack of credit: {CREDIT}; add credits "
                  "to the Amp account (waiting cannot help), then start the run again")
LOGIN = "; log in again (`amp login`) or fix the API key (AMP_API_KEY), then start the run again"
KEY_LINE = "Error: Invalid or missing API key. Run 'amp login' to authenticate."


@pytest.fixture
def tasks(run_task, git_repo: Path) -> Path:
    lines = "".join(f'{{"id": "{t}", "t": "Task {t}"}}\n' for t in ("a", "b"))
    assert run_task("plan-sync", input=lines).returncode == 0
    return git_repo


def amp_env(base_env: dict[str, str], home: Path, url: str, key: str | None = "sgamp-test"):
    """The real amp on the stand-in at `url`, with AMP_API_KEY `key` (None: no key at all)."""
    return real_env(base_env, home, AMP_URL=url, **({"AMP_API_KEY": key} if key else {}))


def last_line(stderr: str) -> str:
    return stderr.strip().splitlines()[-1]


def classes(repo: Path) -> list[str]:
    return [e["class"] for e in events(repo, "session_end")]


def test_amp_takes_the_argv_ralph_builds_and_asks_its_server_for_a_thread(
        tasks, run_ralph, base_env, home):
    """The argv is taken (no usage error), --dangerously-allow-all as amp's own flag in execute
    mode, the key and server come from AMP_API_KEY and AMP_URL, and the thread asked for runs
    its tools on this machine."""
    with AmpStandIn(CREDIT) as api:
        proc = run_ralph("build", "--agent", "amp", "--danger", "-n", "1",
                         env=amp_env(base_env, home, api.url), timeout=200)
    assert not any(word in proc.stderr for word in USAGE_ERRORS), proc.stderr
    assert api.requests[0]["path"] == "/api/internal?getUserInfo"
    assert {r["headers"]["Authorization"] for r in api.requests} == {"Bearer sgamp-test"}
    [flag] = [e for e in api.telemetry() if e["feature"] == "cli.dangerouslyAllowAll"]
    assert flag["parameters"]["metadata"] == {"cliFlag": 1, "settingsTrue": 1, "executeMode": 1}
    [thread] = [r for r in api.requests if r["path"] == "/api/thread-actors"]
    assert thread["headers"]["X-Amp-Client-Application"] == "CLI Execute Mode"
    assert thread["body"]["executorType"] == "local-client"


def test_a_thread_amp_is_refused_for_lack_of_credit_stops_the_run_with_exit_7(
        tasks, run_ralph, run_task, base_env, home):
    """Amp's server answers 402 with the message amp prints on stderr (`Error: <message>`,
    exit 1, nothing on stdout): the first session ends the run, not the breaker after three."""
    with AmpStandIn(CREDIT) as api:
        proc = run_ralph("build", "--agent", "amp", "--danger", "-n", "3",
                         env=amp_env(base_env, home, api.url), timeout=200)
    assert proc.returncode == 7, proc.stdout + proc.stderr
    assert last_line(proc.stderr) == NO_CREDIT_LINE
    assert proc.stderr.count(NO_CREDIT_LINE) == 1 and "Traceback" not in proc.stderr
    assert f"Error: {CREDIT}\n" in proc.stderr                  # amp's own line, passed on
    assert classes(tasks) == ["usage_disabled"]
    assert [r["path"] for r in api.requests].count("/api/thread-actors") == 1
    assert {t["id"]: t["status"] for t in tasks_of(run_task).values()} == {
        "a": "open", "b": "open"}
    assert events(tasks, "run_end")[-1]["exit_code"] == 7


def test_a_key_amp_is_refused_stops_the_run_with_exit_9(tasks, run_ralph, run_task, base_env,
                                                         home):
    """Amp's server answers a key it does not know 401 `auth-required`: amp says so on stderr
    and exits 1 before it asks for a thread."""
    with AmpStandIn(key_refused=True) as api:
        proc = run_ralph("build", "--agent", "amp", "--danger", "-n", "3",
                         env=amp_env(base_env, home, api.url), timeout=200)
    assert proc.returncode == 9, proc.stdout + proc.stderr
    assert last_line(proc.stderr) == ("Error: authentication failed: Invalid or missing API "
                                      "key. Run 'amp login' to authenticate" + LOGIN)
    assert f"{KEY_LINE}\n" in proc.stderr                       # amp's own line, passed on
    assert classes(tasks) == ["auth_failure"]
    assert not api.asked_for_a_thread()
    assert [r["path"] for r in api.requests].count("/api/internal?getUserInfo") == 1
    assert {t["id"]: t["status"] for t in tasks_of(run_task).values()} == {
        "a": "open", "b": "open"}


def test_amp_without_a_key_is_stopped_at_its_login_flow_with_exit_9(tasks, run_ralph,
                                                                     run_task, base_env, home):
    """Without AMP_API_KEY and never logged in, amp prints `No API key found. Starting login
    flow...` on stdout and waits for a code pasted on its stdin, for ever: the session is ended
    there (no --idle-timeout needed) and the run stops."""
    with AmpStandIn(CREDIT) as api:
        proc = run_ralph("build", "--agent", "amp", "--danger", "-n", "3",
                         env=amp_env(base_env, home, api.url, key=None), timeout=200)
    assert proc.returncode == 9, proc.stdout + proc.stderr
    assert "\n\u26a0 No API key found. Starting login flow...\n" in proc.stdout
    assert last_line(proc.stderr) == ("Error: authentication failed: No API key found (amp "
                                      "would wait for an interactive login)" + LOGIN)
    assert classes(tasks) == ["auth_failure"]
    assert not api.asked_for_a_thread()
    assert {t["id"]: t["status"] for t in tasks_of(run_task).values()} == {
        "a": "open", "b": "open"}


@pytest.mark.parametrize("refusal,code,line,kind", [
    (dict(refusal=CREDIT), 7, NO_CREDIT_LINE, "usage_disabled"),
    (dict(key_refused=True), 9, "Error: authentication failed: Invalid or missing API key. "
     "Run 'amp login' to authenticate" + LOGIN, "auth_failure")], ids=["no-credit", "key"])
def test_a_refusal_stops_a_parallel_run_and_starts_no_session_more(
        tasks, run_ralph, run_task, base_env, home, refusal, code, line, kind):
    ignore_ralph_dir(tasks, base_env)
    with AmpStandIn(**refusal) as api:
        proc = run_ralph("build", "--agent", "amp", "--danger", "--parallel", "2", "-n", "6",
                         env=amp_env(base_env, home, api.url), timeout=200)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert last_line(proc.stderr) == line
    assert set(classes(tasks)) == {kind} and len(classes(tasks)) <= 2   # those running end
    assert {t["id"]: t["status"] for t in tasks_of(run_task).values()} == {
        "a": "open", "b": "open"}

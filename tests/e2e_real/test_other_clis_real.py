"""Black-box, with the real pi, opencode, codex and gemini CLIs (pinned in package.json): the
argv ralph.py builds for each is accepted (no usage error: the CLI gets as far as calling its
model API, which is a stand-in on 127.0.0.1), and each runs a whole build session through a
scripted stand-in: pi and opencode through the Anthropic Messages one of the claude tests,
codex through one of the OpenAI Responses API (standin_responses.py), gemini through one of
the Gemini API (standin_gemini.py). amp's tests are in test_amp_real.py."""
from __future__ import annotations

import json
import subprocess
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from realcli import events, installed_version, needs_clis, real_env, tasks_of
from standin import MODEL, Fail, StandIn, Text, Tool, tool_results
from standin_gemini import (QUOTA_METRIC, QUOTA_MODEL, GeminiStandIn, function_responses,
                            quota_exceeded, shell)
from standin_responses import MODEL as CODEX_MODEL, ResponsesStandIn, function_outputs

pytestmark = [needs_clis, pytest.mark.timeout(240)]

# The id comes through a pipe, not $(...): gemini blocks any shell command that holds a
# command substitution, even with --yolo.
WORK = """set -e
"$RALPH_TASK_SCRIPT" claim | sed -n 's/^id: //p' | head -n 1 | {
read -r id
test -n "$id"
echo "built $id" > "work-$id.txt"
git add "work-$id.txt"
git commit -q -m "Build $id"
"$RALPH_TASK_SCRIPT" done "$id" --result '{"commit":"ok"}'
}
"""
USAGE_ERRORS = ("Unknown option", "unknown option", "unexpected argument", "Usage:",
                "unrecognized", "Unknown argument")


def worker(body: dict, n: int):
    """pi and opencode name their shell tool `bash`."""
    if tool_results(body):
        return Text("Task finished.")
    return Tool("bash", {"command": WORK, "description": "build"}, "Working on the task.")


def gemini_worker(body: dict, n: int):
    """gemini names its shell tool `run_shell_command`."""
    if function_responses(body):
        return Text("Task finished.")
    return shell(WORK, "Working on the task.")


@pytest.fixture
def one_task(run_task, git_repo: Path) -> Path:
    assert run_task("plan-sync", input='{"id": "a", "t": "Task a"}\n').returncode == 0
    return git_repo


def configure_pi(home: Path, url: str) -> dict[str, str]:
    """A provider of pi's own kind `anthropic-messages` at the stand-in, as the default."""
    agent = home / ".pi" / "agent"
    agent.mkdir(parents=True)
    (agent / "models.json").write_text(json.dumps({"providers": {"standin": {
        "baseUrl": url, "api": "anthropic-messages", "apiKey": "sk-test",
        "models": [{"id": MODEL}]}}}))
    (agent / "settings.json").write_text(json.dumps({"defaultProvider": "standin",
                                                     "defaultModel": MODEL}))
    return {}


def configure_opencode(home: Path, url: str) -> dict[str, str]:
    """An Anthropic provider (opencode's @ai-sdk/anthropic) at the stand-in, as the model."""
    conf = home / ".config" / "opencode"
    conf.mkdir(parents=True)
    (conf / "opencode.json").write_text(json.dumps({
        "model": f"standin/{MODEL}", "autoupdate": False, "share": "disabled",
        "provider": {"standin": {"npm": "@ai-sdk/anthropic", "name": "standin",
                                 "options": {"baseURL": f"{url}/v1", "apiKey": "sk-test"},
                                 "models": {MODEL: {"name": MODEL}}}}}))
    return {}


def configure_codex(home: Path, url: str) -> dict[str, str]:
    """A Responses API provider at the stand-in, as the default, with a model codex knows
    (for any other name codex says first that it has no metadata for the model)."""
    codex = home / ".codex"
    codex.mkdir(parents=True)
    (codex / "config.toml").write_text(
        f'model = "{CODEX_MODEL}"\nmodel_provider = "standin"\n'
        f'[model_providers.standin]\nname = "standin"\nbase_url = "{url}/v1"\n'
        f'env_key = "STANDIN_KEY"\nwire_api = "responses"\nrequest_max_retries = 0\n'
        f'stream_max_retries = 0\nsupports_websockets = false\n')
    return {"CODEX_HOME": str(codex), "STANDIN_KEY": "sk-test"}


def configure_gemini(home: Path, url: str, **general: object) -> dict[str, str]:
    """API-key auth (no Google login), the Gemini API at the stand-in; `general`: more of
    gemini's `general` settings (`maxAttempts`)."""
    gemini = home / ".gemini"
    gemini.mkdir(parents=True)
    (gemini / "settings.json").write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "telemetry": {"enabled": False}, "general": {"disableAutoUpdate": True, **general}}))
    return {"GEMINI_API_KEY": "test-key", "GOOGLE_GEMINI_BASE_URL": url}


@pytest.mark.parametrize("agent,configure,standin,brain", [
    ("pi", configure_pi, StandIn, worker), ("opencode", configure_opencode, StandIn, worker),
    ("gemini", configure_gemini, GeminiStandIn, gemini_worker)],
    ids=["pi", "opencode", "gemini"])
def test_a_whole_build_session_through_the_stand_in(one_task, run_ralph, run_task, base_env,
                                                    home, agent, configure, standin, brain):
    with standin(brain) as api:
        extra = configure(home, api.url)
        # PWD as a shell would set it: opencode takes its project directory from $PWD.
        proc = run_ralph("build", "--agent", agent, "--danger", "-n", "2",
                         env=real_env(base_env, home, PWD=str(one_task), **extra), timeout=200)
    assert proc.returncode == 0, proc.stderr
    assert not any(word in proc.stderr for word in USAGE_ERRORS), proc.stderr
    assert "\nAll tasks complete. Exiting loop.\n" in proc.stdout, proc.stdout
    assert tasks_of(run_task)["a"]["status"] == "done"
    assert (one_task / "work-a.txt").read_text() == "built a\n"
    assert "Task finished." in proc.stdout                     # its renderer read the stream
    [end] = events(one_task, "session_end")
    assert (end["class"], end["agent_version"]) == ("success", installed_version(agent))


def codex_worker(body: dict, n: int):
    """codex 0.169's shell tool is `exec_command`, the command its argument `cmd`."""
    if function_outputs(body):
        return Text("Task finished.")
    return Tool("exec_command", {"cmd": WORK}, "Working on the task.")


def test_codex_runs_a_whole_build_session_through_a_responses_stand_in(
        one_task, run_ralph, run_task, base_env, home):
    with ResponsesStandIn(codex_worker) as api:
        extra = configure_codex(home, api.url)
        proc = run_ralph("build", "--agent", "codex", "--danger", "-n", "2",
                         env=real_env(base_env, home, PWD=str(one_task), **extra), timeout=200)
    assert proc.returncode == 0, proc.stderr
    assert not any(word in proc.stderr for word in USAGE_ERRORS), proc.stderr
    assert "\nAll tasks complete. Exiting loop.\n" in proc.stdout, proc.stdout
    assert tasks_of(run_task)["a"]["status"] == "done"
    assert (one_task / "work-a.txt").read_text() == "built a\n"
    log = subprocess.run(["git", "log", "--format=%s", "-1", "--", "work-a.txt"], cwd=one_task,
                         text=True, capture_output=True, check=True).stdout
    assert log == "Build a\n"
    assert "Working on the task." in proc.stdout and "Task finished." in proc.stdout
    assert "\u26a0" not in proc.stdout                       # no warning from codex
    first, second = api.agent_turns()
    assert first["headers"]["authorization"] == "Bearer sk-test"
    shell = next(t for t in first["body"]["tools"] if t.get("name") == "exec_command")
    assert shell["parameters"]["required"] == ["cmd"]
    assert "Process exited with code 0" in function_outputs(second["body"])[0]
    # codex sums the usage of the turn's two responses; ralph records that sum.
    [end] = events(one_task, "session_end")
    assert (end["class"], end["tokens_in"], end["tokens_out"]) == ("success", 40, 24)
    assert end["agent_version"] == installed_version("codex")     # from its npm package
    assert "tokens: in 40, out 24" in proc.stdout


def test_a_codex_usage_limit_is_waited_out_until_the_time_it_names(one_task, run_ralph,
                                                                   run_task, base_env, home):
    """With the API's `resets_at`, codex says `... or try again at 6:40 PM.` (local time):
    the session is a usage limit, shown once, and ralph waits until that time, not its
    default wait (an hour here, longer than the cap: exit 5 if the time were not read), then
    runs the task."""
    resets_at = int(time.time()) + 2

    def limited(body: dict, n: int):
        if n == 0:
            return Fail(429, "usage_limit_reached", "The usage limit has been reached",
                        error={"resets_at": resets_at, "plan_type": "plus"})
        return codex_worker(body, n)

    with ResponsesStandIn(limited) as api:
        extra = configure_codex(home, api.url)
        proc = run_ralph("build", "--agent", "codex", "--danger", "-n", "2",
                         "--limit-default-wait", "1h", "--max-limit-wait", "10m",
                         "--limit-wait-margin", "0",
                         env=real_env(base_env, home, PWD=str(one_task), TZ="UTC", **extra),
                         timeout=200)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    reset = datetime.fromtimestamp(resets_at, timezone.utc).replace(second=0)
    said = f"try again at {reset.strftime('%I:%M %p').lstrip('0')}."
    assert proc.stdout.count(said) == 1, proc.stdout                # codex prints it twice
    [wait] = [e for e in events(one_task, "log") if e.get("kind") == "usage_limit_wait"]
    assert datetime.fromisoformat(wait["resume_at"]) == reset
    assert [e["class"] for e in events(one_task, "session_end")] == ["usage_limit", "success"]
    assert tasks_of(run_task)["a"]["status"] == "done"


def test_a_key_codex_is_refused_stops_the_run_with_exit_9(one_task, run_ralph, run_task,
                                                           base_env, home):
    """codex ends the turn on a 401 (no retry): the first session is an authentication
    failure, and the run stops instead of starting the next one into the same refusal."""
    with ResponsesStandIn(lambda body, n: Fail(401, "invalid_api_key",
                                               "Incorrect API key provided")) as api:
        extra = configure_codex(home, api.url)
        proc = run_ralph("build", "--agent", "codex", "--danger", "-n", "3",
                         env=real_env(base_env, home, PWD=str(one_task), **extra), timeout=200)
    assert proc.returncode == 9, proc.stdout
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: authentication failed: unexpected status 401 ") and (
        "log in again (`codex login`) or fix the API key" in last), last
    assert [e["class"] for e in events(one_task, "session_end")] == ["auth_failure"]
    assert tasks_of(run_task)["a"]["status"] == "open"
    assert len(api.agent_turns()) == 1


def test_a_key_gemini_is_refused_stops_the_run_with_exit_9(one_task, run_ralph, run_task,
                                                            base_env, home):
    """The Gemini API answers a bad key 400 INVALID_ARGUMENT `API key not valid`."""
    with GeminiStandIn(lambda body, n: Fail(400, "INVALID_ARGUMENT", "API key not valid. "
                                            "Please pass a valid API key.")) as api:
        extra = configure_gemini(home, api.url)
        proc = run_ralph("build", "--agent", "gemini", "--danger", "-n", "3",
                         env=real_env(base_env, home, PWD=str(one_task), **extra), timeout=200)
    assert proc.returncode == 9, proc.stdout + proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: authentication failed: ") and (
        "log in again (`gemini`, then /auth) or fix the API key" in last), last
    assert [e["class"] for e in events(one_task, "session_end")] == ["auth_failure"]
    assert tasks_of(run_task)["a"]["status"] == "open"


def limit_wait(repo: Path) -> timedelta:
    """How long after it was logged the run's one usage-limit wait was to end."""
    [wait] = [e for e in events(repo, "log") if e.get("kind") == "usage_limit_wait"]
    logged = datetime.fromisoformat(wait["ts"].replace("Z", "+00:00"))
    return datetime.fromisoformat(wait["resume_at"]) - logged


def test_a_gemini_quota_per_minute_is_waited_out_for_the_time_the_api_names(
        one_task, run_ralph, run_task, base_env, home):
    """The API's 429 RESOURCE_EXHAUSTED names a wait (`Please retry in 2.5s.`, RetryInfo 2s).
    gemini retries it itself, up to its `general.maxAttempts` (2 here; 10 by default, about
    four minutes of backoff), then ends the session with `[API Error: ...]` and exit 173: the
    session is a usage limit, its message shown once, and ralph waits the time the API named,
    not its default wait (an hour here, beyond the cap: exit 5 if the time were not read)."""
    def limited(body: dict, n: int):
        return quota_exceeded("minute", retry_s=2.5) if n < 2 else gemini_worker(body, n)

    with GeminiStandIn(limited) as api:
        extra = configure_gemini(home, api.url, maxAttempts=2)
        proc = run_ralph("build", "--agent", "gemini", "--danger", "-n", "2",
                         "--limit-default-wait", "1h", "--max-limit-wait", "10m",
                         "--limit-wait-margin", "0",
                         env=real_env(base_env, home, PWD=str(one_task), **extra), timeout=200)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("[API Error: You exceeded your current quota") == 1, proc.stdout
    assert "Please retry in 2.5s.\nSuggested retry after 2s.]" in proc.stdout
    assert timedelta(seconds=1) < limit_wait(one_task) <= timedelta(seconds=2.5)
    assert [e["class"] for e in events(one_task, "session_end")] == ["usage_limit", "success"]
    assert tasks_of(run_task)["a"]["status"] == "done"
    assert len(api.agent_turns()) == 4                  # 2 refused, then the session's 2 turns


def test_a_spent_gemini_daily_quota_is_waited_out_for_the_default_wait(
        one_task, run_ralph, run_task, base_env, home):
    """A daily quota (its QuotaFailure's quotaId says PerDay): gemini does not retry it and
    names no time (`You have exhausted your daily quota on this model.`, exit 173), so ralph
    waits --limit-default-wait, then runs the task."""
    def limited(body: dict, n: int):
        return quota_exceeded("day") if n == 0 else gemini_worker(body, n)

    with GeminiStandIn(limited) as api:
        extra = configure_gemini(home, api.url)
        proc = run_ralph("build", "--agent", "gemini", "--danger", "-n", "2",
                         "--limit-default-wait", "2s", "--max-limit-wait", "10m",
                         "--limit-wait-margin", "0",
                         env=real_env(base_env, home, PWD=str(one_task), **extra), timeout=200)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = "[API Error: You have exhausted your daily quota on this model.]"
    assert proc.stdout.count(said) == 1, proc.stdout
    assert timedelta(seconds=0.5) < limit_wait(one_task) <= timedelta(seconds=2)
    assert [e["class"] for e in events(one_task, "session_end")] == ["usage_limit", "success"]
    assert tasks_of(run_task)["a"]["status"] == "done"
    assert len(api.agent_turns()) == 3                  # 1 refused, not retried, then 2 turns


def test_a_gemini_quota_of_zero_stops_the_run_with_exit_7_instead_of_waiting(
        one_task, run_ralph, run_task, base_env, home):
    """A quota whose limit is 0 (`..., limit: 0, model: ...`: a project without that free
    tier): gemini gives up at once (exit 173) and no wait can help. The API names a wait all
    the same (`Please retry in 37.5s.`, as Google does), which ralph waited before, and then
    ran into the same refusal, hour after hour: now the run stops at once with exit 7 and one
    line quoting the quota, and the task stays open for when the key has that quota."""
    with GeminiStandIn(lambda body, n: quota_exceeded("day", retry_s=37.5, limit=0)) as api:
        extra = configure_gemini(home, api.url, maxAttempts=2)
        proc = run_ralph("build", "--agent", "gemini", "--danger", "-n", "3",
                         "--limit-wait-margin", "0", "--max-limit-wait", "10s",
                         env=real_env(base_env, home, PWD=str(one_task), **extra), timeout=200)
    assert proc.returncode == 7, proc.stdout + proc.stderr      # a wait of 37.5 s: exit 5
    assert proc.stderr.strip().splitlines()[-1] == (
        f'Error: usage disabled: the API\'s quota is 0 ("Quota exceeded for metric: {QUOTA_METRIC}'
        f', limit: 0, model: {QUOTA_MODEL}"), so waiting cannot help; use an API key whose '
        "project has that quota, or another model (--model), then start the run again")
    assert proc.stdout.count(f"limit: 0, model: {QUOTA_MODEL}\nPlease retry in 37.5s.]") == 1
    assert "Usage limit" not in proc.stdout + proc.stderr
    assert [e["kind"] for e in events(one_task, "log") if "usage_limit" in e.get("kind", "")] == []
    assert [e["class"] for e in events(one_task, "session_end")] == ["usage_disabled"]
    assert events(one_task, "run_end")[-1]["exit_code"] == 7
    assert tasks_of(run_task)["a"]["status"] == "open"
    assert len(api.agent_turns()) == 1                  # not retried, no second session


def test_a_per_minute_quota_gemini_outwaits_itself_is_no_usage_limit(
        one_task, run_ralph, run_task, base_env, home):
    """gemini waits a per-minute quota out itself (the longer of the API's wait and its own
    5 s backoff) and asks again: one session, a success, nothing for ralph to wait."""
    def limited(body: dict, n: int):
        return quota_exceeded("minute", retry_s=1) if n == 0 else gemini_worker(body, n)

    with GeminiStandIn(limited) as api:
        extra = configure_gemini(home, api.url)
        proc = run_ralph("build", "--agent", "gemini", "--danger", "-n", "2",
                         env=real_env(base_env, home, PWD=str(one_task), **extra), timeout=200)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "\u26a0" not in proc.stdout and "Usage limit" not in proc.stderr
    assert [e["class"] for e in events(one_task, "session_end")] == ["success"]
    assert tasks_of(run_task)["a"]["status"] == "done"
    assert len(api.agent_turns()) == 3

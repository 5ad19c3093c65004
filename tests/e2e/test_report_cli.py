"""Black-box: `ralph report`, the report files a real `ralph build` writes at its end, `ralph
status` pointing to them, `ralph status --watch` from another shell while a run works (on a
terminal and not), and notifications of a real run to a webhook on 127.0.0.1 and to a hanging
command. A stub agent, the real task CLI and a real git repo."""
from __future__ import annotations

import json
import os
import pty
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import RALPH, ROOT, wait_for

sys.path.insert(0, str(ROOT / "tests" / "unit" / "report"))
from loopback import Receiver  # noqa: E402 (the report tests' webhook receiver)
from synthetic import make_run  # noqa: E402 (the report tests' run records)

from ralphpy.runs import state as run_state  # noqa: E402

RUN = "20261122T220000Z-aaaaaa"

AGENT = """\
#!/bin/sh
id=$("$RALPH_TASK_SCRIPT" claim | sed -n 's/^id: //p' | head -1)
echo "working on $id"
if [ -n "$HOLD_UNTIL" ]; then
    touch "$HOLD_UNTIL.started"
    while [ ! -e "$HOLD_UNTIL" ]; do sleep 0.05; done
fi
[ "$id" = "t2" ] && exit 1
"$RALPH_TASK_SCRIPT" done "$id" --result '{"commit":"abc1234def0"}' > /dev/null
echo '{"type":"result","subtype":"success","is_error":false,"num_turns":2,"total_cost_usd":0.42,"result":"ok"}'
"""
NO_BREAKERS = ("--max-idle-sessions", "0", "--max-attempts", "2")


@pytest.fixture
def backlog(run_task, bin_dir):
    lines = [{"id": "t1", "t": "<b>bold</b> first"}, {"id": "t2", "t": "Second, failing"}]
    assert run_task("plan-sync", input="".join(json.dumps(x) + "\n" for x in lines)
                    ).returncode == 0
    agent = bin_dir / "claude"
    agent.write_text(AGENT)
    agent.chmod(0o755)


def run_dir(repo: Path) -> Path:
    [found] = (repo / ".ralph" / "runs").iterdir()
    return found


def events(repo: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir(repo) / "events.jsonl").read_text().splitlines()]


def test_a_run_writes_its_report_notifies_its_end_and_status_points_to_it(
        git_repo, run_ralph, backlog):
    hook = Receiver()
    try:
        proc = run_ralph("build", "-n", "5", *NO_BREAKERS, "--notify", hook.url)
    finally:
        hook.close()
    assert proc.returncode == 0, proc.stderr
    md = (run_dir(git_repo) / "report.md").read_text()
    assert "| t1 | &lt;b&gt;bold&lt;/b&gt; first | done | 1 | abc1234def |" in md
    assert "| t2 | Second, failing | held | 2 |" in md
    assert "session exited without completing task" in md
    assert (run_dir(git_repo) / "report.html").read_text().startswith("<!DOCTYPE html>")
    kinds = [(b["event"], b.get("task") or b.get("category")) for b in hook.bodies]
    assert kinds == [("task_held", "t2"), ("run_end", "finished")]
    assert hook.bodies[-1]["runId"] == run_dir(git_repo).name

    status = run_ralph("status")
    assert f"Report:     .ralph/runs/{run_dir(git_repo).name}/report.html" in status.stdout
    report = run_ralph("report")
    assert report.returncode == 0 and "Tasks:      1 done of 2\n" in report.stdout  # no rate:
    assert f".ralph/runs/{run_dir(git_repo).name}/report.md" in report.stdout   # a run of seconds
    assert "| Tasks done per hour | - |" in md
    data = json.loads(run_ralph("report", "--json").stdout)
    assert (data["done"], data["cost_usd"], data["billing"]) == (1, 0.42, "subscription")
    assert data["tasks_per_hour"] is None
    assert run_ralph("report", run_dir(git_repo).name[:17], "--md").stdout == md



TWO_TASKS = """\
#!/bin/sh
"$RALPH_TASK_SCRIPT" claim t1 > /dev/null
"$RALPH_TASK_SCRIPT" claim t2 > /dev/null
"$RALPH_TASK_SCRIPT" done t1 --result '{"commit":"abc1234def0"}' > /dev/null
"""


DELETES_ITS_TASK = """\
#!/bin/sh
id=$("$RALPH_TASK_SCRIPT" claim | sed -n 's/^id: //p' | head -1)
[ "$id" = "t2" ] && "$RALPH_TASK_SCRIPT" delete t2 > /dev/null && exit 0
"$RALPH_TASK_SCRIPT" done "$id" --result '{"commit":"abc1234def0"}' > /dev/null
"""


def test_a_task_the_agent_deleted_instead_of_finishing_is_named_and_reported(
        git_repo, run_ralph, backlog, bin_dir):
    """Deleting its task ends the backlog as surely as finishing it, without the work and past
    any verification: the session's end says so, and the report shows the task deleted."""
    (bin_dir / "claude").write_text(DELETES_ITS_TASK)
    proc = run_ralph("build", "-n", "5")
    assert proc.returncode == 0, proc.stderr
    line = "task t2: deleted by the session's agent, not finished (nothing verified it)"
    assert line + "\n" in proc.stderr and line not in proc.stdout
    [logged] = [e for e in events(git_repo) if e.get("kind") == "deleted"]
    assert (logged["task"], logged["message"]) == ("t2", line)
    tasks = {t["id"]: t for t in json.loads(run_ralph("report", "--json").stdout)["tasks"]}
    assert (tasks["t1"]["outcome"], tasks["t2"]["outcome"]) == ("done", "deleted")
    assert tasks["t2"]["notices"] == [f"deleted: {line}"]
    md = (run_dir(git_repo) / "report.md").read_text()
    assert "| t2 | Second, failing | deleted |" in md


DELETES_ANOTHER_TASK = """\
#!/bin/sh
id=$("$RALPH_TASK_SCRIPT" claim | sed -n 's/^id: //p' | head -1)
"$RALPH_TASK_SCRIPT" delete t2 > /dev/null
"$RALPH_TASK_SCRIPT" done "$id" --result '{"commit":"abc1234def0"}' > /dev/null
"""


def test_a_task_nobody_held_deleted_during_a_build_session_is_named_and_reported(
        git_repo, run_ralph, backlog, bin_dir):
    """The agent finishes t1 and deletes t2, which it never claimed: the backlog is empty and
    the run ends "complete", but t2's work was never done; the session's end says so."""
    (bin_dir / "claude").write_text(DELETES_ANOTHER_TASK)
    proc = run_ralph("build", "-n", "5")
    assert proc.returncode == 0, proc.stderr
    line = "task t2: deleted during the session, not done (it was not the session's task)"
    assert proc.stderr.count(line + "\n") == 1 and line not in proc.stdout
    [logged] = [e for e in events(git_repo) if e.get("kind") == "deleted"]
    assert (logged["task"], logged["message"]) == ("t2", line)
    tasks = {t["id"]: t for t in json.loads(run_ralph("report", "--json").stdout)["tasks"]}
    assert (tasks["t1"]["outcome"], tasks["t2"]["outcome"]) == ("done", "deleted")


def test_a_frozen_scope_s_task_deleted_by_the_last_session_is_named_too(git_repo, run_ralph,
                                                                         backlog, bin_dir):
    """The frozen scope names a removed task before the next session; the deletion emptied
    the backlog, so there is none: only the session's end can say it."""
    (bin_dir / "claude").write_text(DELETES_ANOTHER_TASK)
    proc = run_ralph("build", "-n", "5", "--freeze-scope")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("task t2: deleted during the session, not done (it was not the "
                             "session's task)\n") == 1


def test_a_plan_session_that_deletes_a_task_is_not_told_it(git_repo, run_ralph, run_task,
                                                           backlog, bin_dir):
    """Planning prunes the backlog by design: only a build session's deletions are named."""
    (bin_dir / "claude").write_text('#!/bin/sh\n"$RALPH_TASK_SCRIPT" delete t2 > /dev/null\n')
    proc = run_ralph("plan", "-n", "1")
    assert proc.returncode == 0, proc.stderr
    status = {t["id"]: t["status"] for t in map(json.loads, run_task("_export-json").stdout
                                                .splitlines())}
    assert status == {"t1": "open", "t2": "deleted"}
    assert "deleted" not in proc.stderr
    assert not [e for e in events(git_repo) if e.get("kind") == "deleted"]


def test_a_session_that_took_two_tasks_and_finished_one_is_told_task_by_task(
        git_repo, run_ralph, backlog, bin_dir):
    """The session's end names which task ended how: the report does not give the finished
    task the other one's fail reason, and status lists both ids as text."""
    (bin_dir / "claude").write_text(TWO_TASKS)
    proc = run_ralph("build", "-n", "1")
    assert proc.returncode == 0, proc.stderr
    [end] = [e for e in events(git_repo) if e["event"] == "session_end"]
    assert (end["task"], end["completed"], end["failed"]) == (["t1", "t2"], ["t1"], ["t2"])
    tasks = {t["id"]: t for t in json.loads(run_ralph("report", "--json").stdout)["tasks"]}
    assert (tasks["t1"]["outcome"], tasks["t1"]["fail_reasons"]) == ("done", [])
    assert (tasks["t2"]["outcome"], tasks["t2"]["fail_reasons"]) == (
        "failed", ["session exited without completing task"])
    assert "  session 1  t1, t2  failed" in run_ralph("status").stdout

def test_a_hanging_notifier_is_killed_at_its_timeout_and_the_run_ends_anyway(
        git_repo, run_ralph, backlog, tmp_path):
    (git_repo / "ralph.yml").write_text("notify_timeout: 1s\n")
    marker = tmp_path / "notifier"
    hang = f"echo $$ > {marker}.pid; sleep 300; touch {marker}.finished"
    proc = run_ralph("build", "-n", "5", *NO_BREAKERS, "--notify", hang, timeout=100)
    assert proc.returncode == 0, proc.stderr
    pid = int(marker.with_suffix(".pid").read_text())
    wait_for(lambda: not Path(f"/proc/{pid}").exists())       # killed with its group
    assert not marker.with_suffix(".finished").exists()
    found = events(git_repo)
    names = [e["event"] for e in found]
    assert names.index("run_end") > max(i for i, n in enumerate(names) if n == "session_end")
    [failed] = [e for e in found if e.get("kind") == "notify_failed"]
    assert "timed out after 1s and was killed" in failed["message"]


def test_a_webhook_that_hangs_on_the_run_end_is_logged_as_failed(git_repo, run_ralph, backlog):
    """Only the run_end is notified (one session, t1 done) and the webhook never answers: the
    run leaves once notify_timeout is spent, at the moment the POST itself times out, so the
    failure was never written and the lost run_end left no trace."""
    listener = socket.create_server(("127.0.0.1", 0))
    held = []                                             # accepted, never answered

    def hold() -> None:
        while True:
            try:
                held.append(listener.accept())
            except OSError:                               # closed at the test's end
                return
    threading.Thread(target=hold, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/hook/secret-token"
    (git_repo / "ralph.yml").write_text("notify_timeout: 1s\n")
    try:
        proc = run_ralph("build", "-n", "1", "--notify", url, timeout=100)
    finally:
        listener.close()
    assert proc.returncode == 0, proc.stderr
    [failed] = [e for e in events(git_repo) if e.get("kind") == "notify_failed"]
    assert failed["message"].startswith(
        f"notification by webhook http://127.0.0.1:{url.split(':')[2].split('/')[0]}/... failed: ")
    assert "secret-token" not in failed["message"]


def test_report_and_watch_from_another_shell_while_the_run_works(
        git_repo, run_ralph, backlog, base_env, tmp_path):
    gate = tmp_path / "go"
    env = {**base_env, "HOLD_UNTIL": str(gate)}
    run = subprocess.Popen([sys.executable, str(RALPH), "build", "-n", "1"], cwd=git_repo,
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           stdin=subprocess.DEVNULL)
    try:
        wait_for(lambda: Path(f"{gate}.started").exists(), timeout=60)
        report = run_ralph("report")
        assert report.returncode == 0, report.stderr
        assert "still running" in report.stdout and "t1" in report.stdout
        lines = run_ralph("status", "--watch", "--count", "2", "--interval", "0.1")
        [first, second] = lines.stdout.splitlines()
        assert " | running | task t1 for " in first and "0 done, 0 failed" in second
        screen = on_a_terminal(git_repo, base_env, "status", "--watch", "--count", "1")
        assert screen.startswith("\x1b[H\x1b[J") and "Status:     running" in screen
        assert "Current:    t1 (claimed) (session 1, started " in screen
        assert "Agent:      working on t1" in screen and "Queue:      1 active, 1 open" in screen
    finally:
        gate.touch()
        run.wait(timeout=60)
    assert "report.html" in run_ralph("status").stdout


def on_a_terminal(cwd: Path, env: dict, *args: str) -> str:
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, str(RALPH), *args], cwd=cwd, env=env,
                            stdin=subprocess.DEVNULL, stdout=child, stderr=child)
    os.close(child)
    out = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:                       # EIO: the terminal's other end closed
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=30)
    os.close(main)
    return out.decode("utf-8", "replace").replace("\r\n", "\n")


@pytest.mark.parametrize("args,code,message", [
    (["--bogus"], 1, "Error: Unknown option '--bogus'\nRun 'ralph report --help' for usage\n"),
    (["--since", "soon"], 1, "Error: --since requires a duration (e.g. 12h, 7d), got 'soon'\n"
                             "Run 'ralph report --help' for usage\n"),
    (["--html"], 1, "Error: --html requires a file name\nRun 'ralph report --help' for usage\n"),
    (["nope"], 1, None),
    (["--md", "--json"], 1, "Error: give one of --md, --json, --html, not both --md and --json\n"
                            "Run 'ralph report --help' for usage\n"),
    (["--json", "--html", "r.html"], 1, "Error: give one of --md, --json, --html, not both "
                                        "--json and --html\nRun 'ralph report --help' for usage\n"),
], ids=["unknown-option", "bad-duration", "html-without-file", "unknown-run", "two-forms",
        "json-and-html"])
def test_bad_report_arguments_are_one_clear_line(git_repo, run_ralph, args, code, message):
    make_run(git_repo / ".ralph", RUN, 2)
    proc = run_ralph("report", *args)
    assert (proc.returncode, proc.stdout) == (code, "")
    assert proc.stderr == (message or f"Error: no run 'nope' in {git_repo}/.ralph/runs "
                                      "(ralph status names the latest)\n")


def test_an_html_file_that_cannot_be_written_names_its_own_directory_not_ralph_dir(
        git_repo, run_ralph):
    make_run(git_repo / ".ralph", RUN, 2)
    proc = run_ralph("report", "--html", "/proc/ralph-report.html")   # no file can be made
    assert (proc.returncode, proc.stdout) == (8, "")
    assert proc.stderr == ("Error: cannot write /proc/ralph-report.html: No such file or "
                           "directory; check the disk and the permissions of /proc/\n")


def test_no_run_yet_is_said_plainly(git_repo, run_ralph):
    proc = run_ralph("report")
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        0, f"No ralph run found in {git_repo}/.ralph.\n", "")


def test_a_corrupt_events_file_gives_a_report_that_says_so(git_repo, run_ralph):
    make_run(git_repo / ".ralph", RUN, 5)
    path = git_repo / ".ralph" / "runs" / RUN / "events.jsonl"
    path.write_bytes(path.read_bytes()[:-40] + b"\n\xff\xfe garbage\n{\"ts\": ")
    for args in ([], ["--md"], ["--json"], ["--html", "-"], ["--since", "3650d"]):
        proc = run_ralph("report", *args)
        assert proc.returncode == 0 and proc.stderr == "", (args, proc.stderr)
    text = run_ralph("report").stdout
    assert "Could not read everything:" in text and "cut short" in text


def test_escape_sequences_in_titles_and_reasons_are_shown_escaped_in_text_and_markdown(
        git_repo, run_ralph, run_task):
    hostile = "Red \x1b[31mALERT\x1b[0m \x1b]0;pwned\x07"
    shown = "Red \\x1b[31mALERT\\x1b[0m \\x1b]0;pwned\\x07"
    line = json.dumps({"id": "t0", "t": hostile}) + "\n"
    assert run_task("plan-sync", input=line).returncode == 0
    make_run(git_repo / ".ralph", RUN, 5, reason=f"failed: {hostile}")
    text = run_ralph("report").stdout
    assert f"failed: {shown}" in text
    markdown = run_ralph("report", "--md").stdout
    assert f"| t0 | {shown.replace(chr(92), chr(92) * 2)} |" in markdown      # `\\` in Markdown
    for out in (text, markdown):
        assert not any(c in out for c in "\x1b\x07")


def test_a_report_since_a_moment_names_the_modes_of_all_its_runs_not_the_latests(
        git_repo, run_ralph):
    ralph_dir = git_repo / ".ralph"
    make_run(ralph_dir, "20261122T200000Z-pppppp", 2)
    make_run(ralph_dir, RUN, 2)
    plan = run_state.read(ralph_dir, "20261122T200000Z-pppppp")
    plan.mode = "plan"
    run_state.save(ralph_dir, plan)
    events = ralph_dir / "runs" / plan.run_id / "events.jsonl"
    events.write_text(events.read_text().replace('"mode": "build"', '"mode": "plan"'))
    merged = run_ralph("report", "--since", "3650d").stdout
    assert merged.startswith("ralph report: 2 run(s) started in the last 3650d 0h (build, plan)\n")
    one = run_ralph("report", RUN).stdout
    assert one.startswith(f"ralph report: run {RUN} (build)\n")


def test_notify_without_a_channel_is_refused_before_anything_is_written(git_repo, run_ralph):
    proc = run_ralph("build", "--notify")
    assert (proc.returncode, proc.stderr) == (
        1, "Error: --notify requires a command, a URL or desktop\n")
    assert not (git_repo / ".ralph" / "runs").exists()
    assert "  --notify CMD|URL|desktop    Notify on run end" in run_ralph("build", "--help").stdout

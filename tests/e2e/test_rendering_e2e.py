"""Black-box: streams through ralph.py (docs/contract/ralph-cli.md s.12, s.20.3): the rendering
reaches stdout while the agent still runs, and the session log holds the raw stream byte for
byte."""
from __future__ import annotations

import json

from conftest import install_stub, wait_for
from loophelp import Running, agent, assistant, events, result, tasks  # noqa: F401  (fixtures)


def test_rendering_reaches_stdout_while_the_agent_is_still_running(
        tasks, bin_dir, base_env, git_repo, tmp_path):
    install_stub(bin_dir, "claude", "claude_signals")
    release = tmp_path / "release"
    run = Running(["plan"], cwd=git_repo, env={**base_env, **tasks.env, "STUB_RELEASE": str(release)})
    try:
        wait_for(lambda: "started\n" in run.stdout)
        assert run.proc.poll() is None and "released" not in run.stdout
        release.write_text("")
        assert run.wait() == 0
        assert "started\nreleased\n" in run.stdout
    finally:
        run.kill()


def test_the_log_file_is_the_raw_stream_including_non_json_and_non_utf8_lines(
        run_ralph, tasks, agent, git_repo):
    raw = (events(assistant("one ")) + "not json at all\n" + "[1, 2]\n" + "42\n"
           + '{"type": "assistant", "message": {"content": "no list"}}\n').encode()
    raw += b"\xff\xfe broken \xc3 utf-8\n" + b'{"type":"assistant","message":{"content":[{"type":"text","text":"two \xff"}]}}\n'
    raw += events(assistant("three")).encode() + b'{"type":"result","subtype":"success","total_cost_usd":2,"num_turns":4}'
    agent.stream(raw)
    proc = run_ralph("plan", env={**tasks.env, **agent.env})
    assert proc.returncode == 0
    logs = list((git_repo / ".ralph" / "logs").iterdir())
    assert len(logs) == 1 and logs[0].read_bytes() == raw
    # How the invalid bytes inside "two" render is the renderer's business; that rendering
    # goes on after them is ralph.py's.
    assert "\u2501\u2501\u2501\none " in proc.stdout
    assert "three\n\u2501\u2501 Done (success) | cost: $2 | turns: 4 \u2501\u2501\n" in proc.stdout


def test_a_large_stream_is_logged_whole_and_rendered(run_ralph, tasks, agent, git_repo):
    big = "x" * 100_000
    stream = events(*[assistant(f"{i}{big}") for i in range(60)], result(cost=0.123456789, turns=60))
    agent.stream(stream)
    proc = run_ralph("plan", env={**tasks.env, **agent.env})
    log = next((git_repo / ".ralph" / "logs").iterdir())
    assert log.read_text() == stream
    assert proc.stdout.count(big) == 60
    assert "| cost: $0.1234 | turns: 60" in proc.stdout


def test_the_log_is_named_after_the_run_mode_and_session_number(run_ralph, tasks, agent, git_repo):
    agent.stream(events(assistant("a")))
    run_ralph("plan", "-n", "2", env={**tasks.env, **agent.env})
    names = sorted(p.name for p in (git_repo / ".ralph" / "logs").iterdir())
    assert [n.rsplit("-", 2)[1:] for n in names] == [["plan", "001.jsonl"], ["plan", "002.jsonl"]]
    assert json.loads((git_repo / ".ralph" / "logs" / names[0]).read_text())["type"] == "assistant"


def test_escape_sequences_in_the_agents_words_are_shown_escaped_and_the_log_keeps_them_raw(
        run_ralph, tasks, agent, git_repo):
    """An agent repeats a task title it was given (`Red \\x1b[31mALERT ...`): the rendering
    shows the escapes as text, so the terminal is neither recoloured nor renamed, and keeps
    newlines and tabs; the session log is the raw stream."""
    hostile = "Red \x1b[31mALERT\x1b[0m \x1b]0;pwned\x07\r\x9b2J"
    bash = {"type": "assistant", "message": {"content": [
        {"type": "tool_use", "name": "Bash", "input": {"command": f"echo '{hostile}'"}}]}}
    raw = events(assistant(f"claimed:\n\t{hostile}\n"), bash, result())
    agent.stream(raw)
    proc = run_ralph("plan", env={**tasks.env, **agent.env})
    assert proc.returncode == 0, proc.stderr
    shown = "Red \\x1b[31mALERT\\x1b[0m \\x1b]0;pwned\\x07\\r\\x9b2J"
    assert f"claimed:\n\t{shown}\n" in proc.stdout
    assert f"\n   $ echo '{shown}'" in proc.stdout
    assert not any(c in proc.stdout for c in "\x1b\x07\r\x9b")
    assert next((git_repo / ".ralph" / "logs").iterdir()).read_text() == raw

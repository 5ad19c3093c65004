"""Black-box (part A): `ralph build --agent NAME` runs that CLI with its argv, reads
its stream with its renderer, and logs it; `--agent-cmd` replaces the binary, or is the whole
command of the `command` backend (template with {prompt}, or the prompt on stdin). Stub
binaries named like each CLI (tests/stubs/agent_cli) record argv and stdin and print a small
sample of that CLI's stream."""
from __future__ import annotations

import json

import pytest

from conftest import STUBS, install_stub, read_jsonl
from loophelp import tasks  # noqa: F401  (fixture)

RULE = "\u2501" * 40
TASK_MD = "## Task t1\nid: t1\nstatus: open"
PROMPT = f"/ralph-build {TASK_MD}"


def _lines(*events: dict | str) -> str:
    return "".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in events)


# name -> (stream sample, expected argv after the binary (no --danger, no --model), rendered)
BACKENDS = {
    "claude": (
        _lines({"type": "system", "subtype": "init"},
               {"type": "assistant", "message": {"content": [
                   {"type": "text", "text": "Working."},
                   {"type": "tool_use", "name": "Read", "input": {"file_path": "a.py"}}]}},
               {"type": "result", "subtype": "success", "total_cost_usd": 0.05, "num_turns": 2}),
        ["-p", PROMPT, "--output-format=stream-json", "--verbose"],
        "Working.\n\U0001F527 Read a.py\n\n\u2501\u2501 Done (success) | cost: $0.05 | turns: 2 \u2501\u2501\n"),
    "codex": (
        _lines({"type": "thread.started", "thread_id": "x"}, {"type": "turn.started"},
               {"type": "item.completed", "item": {"id": "i1", "type": "agent_message",
                                                   "text": "Done it."}},
               {"type": "item.started", "item": {"id": "i2", "type": "command_execution",
                                                 "command": "ls", "status": "in_progress"}},
               {"type": "item.completed", "item": {"id": "i2", "type": "command_execution",
                                                   "command": "ls", "exit_code": 0}},
               {"type": "turn.completed", "usage": {"input_tokens": 10, "output_tokens": 3}}),
        ["exec", "--json", "--sandbox", "workspace-write", "--", PROMPT],
        "Done it.\n\U0001F527 Bash\n   $ ls\n\n\u2501\u2501 Done (success) | tokens: in 10, out 3 \u2501\u2501\n"),
    "pi": (
        _lines({"type": "session", "id": "s"}, {"type": "agent_start"},
               {"type": "message_update", "assistantMessageEvent": {"type": "text_delta",
                                                                    "delta": "Hi pi."}},
               {"type": "tool_execution_start", "toolName": "bash", "args": {"command": "make"}},
               {"type": "message_end", "message": {
                   "role": "assistant", "content": [{"type": "text", "text": "Hi pi."}],
                   "usage": {"input": 5, "output": 2, "cost": {"total": 0.01}},
                   "stopReason": "stop"}},
               {"type": "turn_end"}, {"type": "agent_end"}),
        ["--mode", "json", "-p"],
        "Hi pi.\n\U0001F527 bash\n   $ make\n\n\u2501\u2501 Done (success) | cost: $0.01 | turns: 1 | tokens: in 5, out 2 \u2501\u2501\n"),
    "amp": (
        _lines({"type": "assistant", "message": {"content": [{"type": "text", "text": "amp!"}]}},
               {"type": "result", "subtype": "success", "num_turns": 1}),
        ["--execute", PROMPT, "--stream-json"],
        "amp!\n\u2501\u2501 Done (success) | cost: $null | turns: 1 \u2501\u2501\n"),
    "opencode": (
        _lines({"type": "step_start", "part": {}},
               {"type": "text", "part": {"messageID": "m1", "text": "oc text"}},
               {"type": "tool_use", "part": {"tool": "read", "state": {
                   "status": "completed", "input": {"filePath": "b.py"}}}},
               {"type": "step_finish", "part": {"reason": "stop", "cost": 0.02,
                                                "tokens": {"input": 7, "output": 1}}}),
        ["run", "--format", "json", PROMPT],
        "oc text\n\U0001F527 read b.py\n\n\u2501\u2501 Done (success) | cost: $0.02 | turns: 1 | tokens: in 7, out 1 \u2501\u2501\n"),
    "gemini": (
        _lines({"type": "init", "session_id": "s", "model": "g"},
               {"type": "message", "role": "user", "content": PROMPT},
               {"type": "message", "role": "assistant", "content": "Gem.", "delta": True},
               {"type": "tool_use", "tool_name": "read_file", "tool_id": "t",
                "parameters": {"absolute_path": "/c.py"}},
               {"type": "result", "status": "success",
                "stats": {"input_tokens": 4, "output_tokens": 2}}),
        ["-p", PROMPT, "--output-format=stream-json"],
        "Gem.\n\U0001F527 read_file /c.py\n\n\u2501\u2501 Done (success) | tokens: in 4, out 2 \u2501\u2501\n"),
}


def _run(run_ralph, tasks, tmp_path, bin_dir, name, stream, *args, env=None):
    install_stub(bin_dir, name, "agent_cli")
    (tmp_path / "stream").write_bytes(stream.encode())
    tasks.script(peek=[{"out": TASK_MD}, {"out": ""}])
    full_env = {**tasks.env, "STUB_LOG": str(tmp_path / "calls.jsonl"),
                "STUB_STREAM": str(tmp_path / "stream"), **(env or {})}
    proc = run_ralph("build", *args, env=full_env)
    return proc, read_jsonl(tmp_path / "calls.jsonl")


def _rendered(stdout: str) -> str:
    """What the session printed: between the banner's closing rule and the end line (the
    stub task CLI's plan-status says 0 open, 0 active)."""
    body = stdout.split(RULE + "\n", 2)[2]
    return body.split("All tasks complete. Exiting loop.\n", 1)[0]


@pytest.mark.parametrize("name", sorted(BACKENDS), ids=sorted(BACKENDS))
def test_each_backend_runs_its_cli_with_its_argv_and_renders_its_stream(
        run_ralph, tasks, tmp_path, bin_dir, git_repo, name):
    stream, argv, rendered = BACKENDS[name]
    args = () if name == "claude" else ("--agent", name)
    proc, calls = _run(run_ralph, tasks, tmp_path, bin_dir, name, stream, *args)
    assert proc.returncode == 0, proc.stderr
    stdin = PROMPT if name == "pi" else ""                   # pi: print mode reads stdin
    assert [(c["prog"], c["argv"], c["stdin"]) for c in calls] == [(name, argv, stdin)]
    assert _rendered(proc.stdout) == rendered
    logs = list((git_repo / ".ralph" / "logs").iterdir())
    assert [p.read_text() for p in logs] == [stream]          # the raw stream, byte for byte
    (events,) = (git_repo / ".ralph" / "runs").glob("*/events.jsonl")
    assert [e["agent"] for e in read_jsonl(events) if e["event"] == "session_start"] == [name]


@pytest.mark.parametrize("name,extra,safe", [
    ("claude", ["--dangerously-skip-permissions", "--model", "gpt-x"],
     "--dangerously-skip-permissions"),
    ("codex", ["--dangerously-bypass-approvals-and-sandbox", "-m", "gpt-x"],
     "--dangerously-bypass-approvals-and-sandbox"),
    ("pi", ["--model", "gpt-x"], "nothing to skip: the agent asks no permissions"),
    ("gemini", ["--yolo", "-m", "gpt-x"], "--yolo --skip-trust"),
    ("opencode", ["-m", "gpt-x"], 'OPENCODE_PERMISSION={"*":"allow"}'),
], ids=["claude", "codex", "pi", "gemini", "opencode"])
def test_danger_and_model_are_spelled_the_way_each_cli_wants(
        run_ralph, tasks, tmp_path, bin_dir, name, extra, safe):
    proc, calls = _run(run_ralph, tasks, tmp_path, bin_dir, name, "", "--agent", name,
                       "--danger", "--model", "gpt-x")
    assert proc.returncode == 0, proc.stderr
    argv = calls[0]["argv"]
    assert [a for a in argv if a in extra] == [a for a in extra]
    assert "Model:  gpt-x (gpt-x)\n" in proc.stdout
    # the banner names what --danger gave this CLI, and an agent other than claude itself
    backend = "anthropic" if name == "claude" else name
    assert f"Safe:   NO ({safe})\nBackend: {backend}\n" in proc.stdout, proc.stdout
    if name == "opencode":
        assert calls[0]["env"]["OPENCODE_PERMISSION"] == '{"*":"allow"}'


def test_agent_cmd_replaces_the_binary_of_a_named_backend(run_ralph, tasks, tmp_path, bin_dir):
    install_stub(bin_dir, "my-codex", "agent_cli")
    proc, calls = _run(run_ralph, tasks, tmp_path, bin_dir, "codex", "",
                       "--agent", "codex", "--agent-cmd", "my-codex --profile ci")
    assert proc.returncode == 0, proc.stderr
    assert [(c["prog"], c["argv"]) for c in calls] == [
        ("my-codex", ["--profile", "ci", "exec", "--json", "--sandbox", "workspace-write",
                      "--", PROMPT])]


def test_command_backend_puts_the_prompt_into_its_template_and_shows_plain_output(
        run_ralph, tasks, tmp_path, bin_dir):
    proc, calls = _run(run_ralph, tasks, tmp_path, bin_dir, "mytool", "plain out\nline 2\n",
                       "--agent", "command", "--agent-cmd", "mytool run --message={prompt} -q")
    assert proc.returncode == 0, proc.stderr
    assert [(c["prog"], c["argv"], c["stdin"]) for c in calls] == [
        ("mytool", ["run", f"--message={PROMPT}", "-q"], "")]
    assert _rendered(proc.stdout) == "plain out\nline 2\n"


def test_command_backend_without_a_prompt_slot_writes_the_prompt_to_stdin(
        run_ralph, tasks, tmp_path, bin_dir):
    proc, calls = _run(run_ralph, tasks, tmp_path, bin_dir, "mytool", "ok\n",
                       "--agent", "command", "--agent-cmd", "mytool --stdin")
    assert proc.returncode == 0, proc.stderr
    assert [(c["prog"], c["argv"], c["stdin"]) for c in calls] == [("mytool", ["--stdin"], PROMPT)]


def test_agent_from_ralph_yml_is_used_and_a_flag_overrides_it(run_ralph, tasks, tmp_path,
                                                               bin_dir, git_repo):
    (git_repo / "ralph.yml").write_text("agent: gemini\n")
    install_stub(bin_dir, "pi", "agent_cli")
    proc, calls = _run(run_ralph, tasks, tmp_path, bin_dir, "gemini", "")
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "task-script.json.count").unlink()          # the stub task CLI starts over
    proc2, calls = _run(run_ralph, tasks, tmp_path, bin_dir, "codex", "", "--agent", "pi")
    assert proc2.returncode == 0, proc2.stderr
    assert [c["prog"] for c in calls] == ["gemini", "pi"]


@pytest.mark.parametrize("args,line", [
    (["--agent", "cluade"],
     "Error: unknown agent 'cluade' (known: amp, claude, codex, command, gemini, opencode, pi)"),
    (["--agent", "command"],
     "Error: agent 'command' needs --agent-cmd, e.g. --agent-cmd 'mytool run {prompt}'"),
    (["--agent", "amp", "--model", "x"],
     "Error: agent 'amp' takes no --model; put the model in --agent-cmd or drop --model"),
    (["--parallel", "0"], "Error: --parallel must be from 1 to 64, got 0"),
    (["--parallel", "100000"], "Error: --parallel must be from 1 to 64, got 100000"),
    (["--merge", "squash"], "Error: --merge must be one of rebase, ff, none, got 'squash'"),
    (["--model", "\udcff"], "Error: --model must be valid UTF-8 text, got '\\udcff'"),  # byte 0xff
    (["--limit-default-wait", "99999999999999999999d"],
     "Error: --limit-default-wait must be a duration of at most 3650d, got 8.64e+24"),
], ids=["unknown-agent", "command-without-cmd", "amp-model", "parallel-0", "parallel-100000",
        "bad-merge", "not-utf8", "huge-duration"])
def test_bad_agent_settings_stop_before_anything_is_written(run_ralph, tasks, git_repo, args, line):
    proc = run_ralph("build", *args, env=tasks.env)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", line + "\n")
    assert tasks.calls() == []
    assert not (git_repo / ".ralph").exists()


def test_unknown_agent_in_ralph_yml_is_refused_too(run_ralph, tasks, git_repo):
    (git_repo / "ralph.yml").write_text("agent: gpt\n")
    proc = run_ralph("plan", env=tasks.env)
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: unknown agent 'gpt' (known: amp, claude,")
    assert tasks.calls() == []


def test_pi_is_run_with_an_argv_the_real_pi_accepts(run_ralph, tasks, tmp_path, bin_dir):
    # `pi` answers an argument `--` as pi 0.73.1 does, then is the stub.
    pi = bin_dir / "pi"
    pi.write_text('#!/bin/sh\nfor a in "$@"; do if [ "$a" = "--" ]; then '
                  'echo "Error: Unknown option: --" >&2; exit 1; fi; done\n'
                  f'exec "{STUBS / "agent_cli"}" "$@"\n')
    pi.chmod(0o755)
    (tmp_path / "stream").write_bytes(BACKENDS["pi"][0].encode())
    tasks.script(peek=[{"out": TASK_MD}, {"out": ""}])
    proc = run_ralph("build", "--agent", "pi", env={
        **tasks.env, "STUB_LOG": str(tmp_path / "calls.jsonl"),
        "STUB_STREAM": str(tmp_path / "stream")})
    assert proc.returncode == 0, proc.stderr
    assert "Unknown option" not in proc.stderr
    assert _rendered(proc.stdout) == BACKENDS["pi"][2]

"""Agent adapters: argv per backend, prompt delivery, errors, and the renderers of
the non-Claude streams. Sample streams are written from each CLI's documentation."""
from __future__ import annotations

import io
import json
import subprocess
import sys
import tracemalloc
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from ralphpy.agents import adapters
from ralphpy.agents import claude_render
from ralphpy.agents.summary import PlainRenderer
from ralphpy.agents.streams import CodexRenderer, GeminiRenderer, OpencodeRenderer, PiRenderer
from ralphpy.unattended.outcome import classify
from ralphpy.errors import UsageDisabled, UsageError
from ralphpy.unattended import outcome, usage_limits

NASTY = "/ralph-build it's \"quoted\" $(rm -rf /) `x` \\back\\slash\nsecond line\n\ttab --flag"


@pytest.mark.parametrize("danger, model, tail", [
    (False, None, []),
    (True, None, ["--dangerously-skip-permissions"]),
    (False, "opus-4.5", ["--model", "opus-4.5"]),
    (True, "global.anthropic.claude-opus-4-5-20251101-v1:0",
     ["--dangerously-skip-permissions", "--model", "global.anthropic.claude-opus-4-5-20251101-v1:0"]),
], ids=["plain", "danger", "model", "danger-and-model"])
def test_claude_argv_is_exactly_the_one_of_section_11(danger, model, tail):
    argv = adapters.get_adapter("claude").argv("/ralph-build", model=model, danger=danger)
    assert argv == ["claude", "-p", "/ralph-build", "--output-format=stream-json", "--verbose",
                    *tail]



def test_a_nul_byte_in_the_task_data_reaches_the_agent_as_a_replacement_character(tmp_path):
    """A verify command's output (a fail reason) or a title may hold NUL; an argument cannot:
    the argv must start, not raise ValueError in exec."""
    argv = adapters.get_adapter("claude").argv("/ralph-build t1\0\0 failed")
    assert argv[2] == "/ralph-build t1\ufffd\ufffd failed"
    done = subprocess.run([sys.executable, "-c", "import sys; print(sys.argv[1])", argv[2]],
                          capture_output=True, text=True, encoding="utf-8")
    assert done.stdout == "/ralph-build t1\ufffd\ufffd failed\n"

def test_the_big_prompt_fallback_writes_the_data_and_names_the_file(tmp_path):
    data = "x" * (adapters.MAX_ARG_BYTES + 1)
    assert not adapters.prompt_fits(data) and adapters.prompt_fits("/ralph-build")
    prompt = adapters.spill_prompt("/ralph-build", data, tmp_path / "peek.md")
    assert (tmp_path / "peek.md").read_text() == data + "\n"
    assert prompt.startswith("/ralph-build ") and str(tmp_path / "peek.md") in prompt


def test_claude_is_a_known_agent_with_stdin_closed_and_the_s12_renderer():
    adapter = adapters.get_adapter("claude")
    assert adapter.stdin("x") is None and adapter.env(danger=True) == {}
    assert isinstance(adapter.new_renderer(io.BytesIO()), claude_render.StreamRenderer)


@pytest.mark.parametrize("name, danger, model, expected", [
    ("pi", False, None, ["pi", "--mode", "json", "-p"]),
    ("pi", True, "sonnet:high", ["pi", "--mode", "json", "-p", "--model", "sonnet:high"]),
    ("codex", False, None, ["codex", "exec", "--json", "--sandbox", "workspace-write", "--", "P"]),
    ("codex", True, "gpt-5-codex", ["codex", "exec", "--json",
                                    "--dangerously-bypass-approvals-and-sandbox",
                                    "-m", "gpt-5-codex", "--", "P"]),
    ("amp", False, None, ["amp", "--execute", "P", "--stream-json"]),
    ("amp", True, None, ["amp", "--execute", "P", "--stream-json", "--dangerously-allow-all"]),
    ("opencode", False, None, ["opencode", "run", "--format", "json", "P"]),
    ("opencode", True, "anthropic/claude-sonnet-4",
     ["opencode", "run", "--format", "json", "-m", "anthropic/claude-sonnet-4", "P"]),
    ("gemini", False, None, ["gemini", "-p", "P", "--output-format=stream-json"]),
    ("gemini", True, "gemini-2.5-pro", ["gemini", "-p", "P", "--output-format=stream-json",
                                        "--yolo", "--skip-trust", "-m", "gemini-2.5-pro"]),
], ids=["pi", "pi-danger-model", "codex", "codex-danger-model", "amp", "amp-danger",
        "opencode", "opencode-danger-model", "gemini", "gemini-danger-model"])
def test_each_backend_builds_its_documented_argv(name, danger, model, expected):
    assert adapters.get_adapter(name).argv("P", model=model, danger=danger) == expected


def test_pi_reads_its_prompt_on_stdin_so_no_argument_can_be_taken_for_an_option():
    adapter = adapters.get_adapter("pi")
    assert adapter.prompt_on_stdin and adapter.stdin("-x @f") == b"-x @f"
    assert "--" not in adapter.argv("-x @f")


def test_opencode_skips_permissions_through_its_environment_variable_only_with_danger():
    adapter = adapters.get_adapter("opencode")
    assert adapter.env(danger=True) == {"OPENCODE_PERMISSION": '{"*":"allow"}'}
    assert adapter.env(danger=False) == {}


def test_extra_arguments_go_before_the_prompt_separator():
    argv = adapters.get_adapter("codex").argv("P", extra=["--skip-git-repo-check"])
    assert argv[-3:] == ["--skip-git-repo-check", "--", "P"]


@pytest.mark.parametrize("name", ["amp", "command"], ids=["amp", "command"])
def test_a_model_for_a_cli_without_a_model_option_is_a_usage_error(name):
    with pytest.raises(UsageError, match=f"agent '{name}' takes no --model"):
        adapters.get_adapter(name, "tool {prompt}" if name == "command" else None).argv(
            "P", model="m")


def test_an_unknown_agent_name_lists_the_known_ones_on_one_line():
    with pytest.raises(UsageError) as err:
        adapters.get_adapter("cluade")
    assert str(err.value) == ("unknown agent 'cluade' "
                              "(known: amp, claude, codex, command, gemini, opencode, pi)")
    assert err.value.exit_code == 1
    assert adapters.KNOWN_AGENTS == ("amp", "claude", "codex", "command", "gemini", "opencode",
                                     "pi")


@pytest.mark.parametrize("agent_cmd, message", [
    (None, "agent 'command' needs --agent-cmd"),
    ("", "agent 'command' needs --agent-cmd"),
    ("tool 'unbalanced", "cannot be split: No closing quotation"),
    ("   ", "--agent-cmd is empty"),
    ("{prompt} --x", "must start with a program"),
], ids=["missing", "empty", "unbalanced-quote", "blank", "prompt-as-program"])
def test_a_bad_command_template_is_a_usage_error(agent_cmd, message):
    with pytest.raises(UsageError, match=message):
        adapters.get_adapter("command", agent_cmd)


def test_agent_cmd_replaces_the_binary_of_a_named_backend_and_keeps_its_flags():
    argv = adapters.get_adapter("codex", "npx -y @openai/codex").argv("P")
    assert argv[:4] == ["npx", "-y", "@openai/codex", "exec"]
    assert adapters.get_adapter("codex").binary == ("codex",)   # the table is not changed


def test_agent_cmd_with_a_prompt_slot_is_refused_for_a_named_backend():
    with pytest.raises(UsageError, match="needs --agent command"):
        adapters.get_adapter("claude", "claude -p {prompt}")


def test_a_command_template_places_the_prompt_inside_a_word_too():
    adapter = adapters.get_adapter("command", "aider --yes --message={prompt} --no-git")
    assert adapter.argv("fix it") == ["aider", "--yes", "--message=fix it", "--no-git"]
    assert not adapter.prompt_on_stdin and adapter.stdin("x") is None


@pytest.fixture
def argv_dump(tmp_path: Path) -> Path:
    """A real executable that prints its argv as JSON and its stdin."""
    stub = tmp_path / "dump-argv"
    stub.write_text(f"#!{sys.executable}\nimport json, sys\n"
                    "print(json.dumps({'argv': sys.argv[1:], 'stdin': sys.stdin.read()}))\n")
    stub.chmod(0o755)
    return stub


@pytest.mark.parametrize("name", ["claude", "codex", "amp", "opencode", "gemini"],
                         ids=["claude", "codex", "amp", "opencode", "gemini"])
def test_a_prompt_with_quotes_and_newlines_reaches_the_agent_as_one_argument(name, argv_dump):
    adapter = adapters.get_adapter(name, str(argv_dump))
    proc = subprocess.run(adapter.argv(NASTY, danger=True), capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, check=True)
    seen = json.loads(proc.stdout)["argv"]
    assert seen == adapter.argv(NASTY, danger=True)[1:]
    assert seen.count(NASTY) == 1


def test_pi_gets_a_prompt_with_quotes_and_newlines_whole_on_stdin(argv_dump):
    adapter = adapters.get_adapter("pi", str(argv_dump))
    proc = subprocess.run(adapter.argv(NASTY, danger=True), input=adapter.stdin(NASTY),
                          capture_output=True, check=True)
    assert json.loads(proc.stdout) == {"argv": ["--mode", "json", "-p"], "stdin": NASTY}


def test_a_command_template_without_prompt_slot_sends_the_prompt_on_stdin(argv_dump):
    adapter = adapters.get_adapter("command", f"{argv_dump} --flag")
    assert adapter.prompt_on_stdin
    proc = subprocess.run(adapter.argv(NASTY), input=adapter.stdin(NASTY), capture_output=True,
                          check=True)
    assert json.loads(proc.stdout) == {"argv": ["--flag"], "stdin": NASTY}


def test_a_command_backend_shows_the_plain_output_of_a_real_process(argv_dump):
    adapter = adapters.get_adapter("command", f"{argv_dump} {{prompt}}")
    out = io.BytesIO()
    renderer = adapter.new_renderer(out)
    proc = subprocess.Popen(adapter.argv("say <promise>COMPLETE</promise>"),
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    raw = proc.stdout.read()
    proc.wait()
    for i in range(0, len(raw), 7):
        renderer.feed(raw[i:i + 7])
    renderer.close()
    assert out.getvalue() == raw
    assert claude_render.promise_received(renderer.summary, "COMPLETE")


class _Sink:
    def __init__(self) -> None:
        self.bytes = 0

    def write(self, data: bytes) -> None:
        self.bytes += len(data)

    def flush(self) -> None:
        pass


def test_plain_renderer_keeps_constant_memory_on_a_large_output():
    sink = _Sink()
    renderer = PlainRenderer(sink)
    chunk = (b"x" * 1023 + b"\n") * 64
    tracemalloc.start()
    for _ in range(512):                       # 32 MiB
        renderer.feed(chunk)
    renderer.feed(b"the end <promise>DONE</promise>\n")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    renderer.close()
    assert sink.bytes == 512 * len(chunk) + 32
    assert peak < 2 * 1024 * 1024
    summary = renderer.summary
    assert summary.assistant_texts_tail[-1] == "the end <promise>DONE</promise>"
    assert claude_render.promise_received(summary, "DONE")
    assert len(summary.last_assistant_text) <= 64 * 1024


def test_plain_renderer_refuses_feed_after_close():
    renderer = PlainRenderer(io.BytesIO())
    renderer.close()
    with pytest.raises(ValueError):
        renderer.feed(b"x")


def _jsonl(*events: dict) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


CODEX = _jsonl(
    {"type": "thread.started", "thread_id": "0199a213"},
    {"type": "turn.started"},
    {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "**Plan**"}},
    {"type": "item.started", "item": {"id": "item_1", "type": "command_execution",
                                      "command": "bash -lc ls", "aggregated_output": "",
                                      "status": "in_progress"}},
    {"type": "item.completed", "item": {"id": "item_1", "type": "command_execution",
                                        "command": "bash -lc ls", "aggregated_output": "a\n",
                                        "exit_code": 0, "status": "completed"}},
    {"type": "item.completed", "item": {"id": "item_2", "type": "file_change", "status": "completed",
                                        "changes": [{"path": "a.py", "kind": "update"}]}},
    {"type": "item.completed", "item": {"id": "item_3", "type": "agent_message",
                                        "text": "Done. <promise>COMPLETE</promise>"}},
    {"type": "turn.completed", "usage": {"input_tokens": 24763, "cached_input_tokens": 24448,
                                         "output_tokens": 122}},
) + b"not json at all\n"

GEMINI = _jsonl(
    {"type": "init", "timestamp": "t", "session_id": "abc", "model": "gemini-2.5-pro"},
    {"type": "message", "timestamp": "t", "role": "user", "content": "<promise>COMPLETE</promise>"},
    {"type": "message", "timestamp": "t", "role": "assistant", "content": "Reading", "delta": True},
    {"type": "message", "timestamp": "t", "role": "assistant", "content": " files.", "delta": True},
    {"type": "tool_use", "timestamp": "t", "tool_name": "read_file", "tool_id": "c1",
     "parameters": {"file_path": "./package.json"}},
    {"type": "tool_result", "timestamp": "t", "tool_id": "c1", "status": "success", "output": "{}"},
    {"type": "tool_use", "timestamp": "t", "tool_name": "run_shell_command", "tool_id": "c2",
     "parameters": {"command": "make test"}},
    {"type": "error", "timestamp": "t", "severity": "warning", "message": "Loop detected"},
    {"type": "message", "timestamp": "t", "role": "assistant", "content": "All ", "delta": True},
    {"type": "message", "timestamp": "t", "role": "assistant", "content": "good.", "delta": True},
    {"type": "result", "timestamp": "t", "status": "success",
     "stats": {"total_tokens": 16866, "input_tokens": 14562, "output_tokens": 2304,
               "duration_ms": 9, "tool_calls": 2}},
)

PI = _jsonl(
    {"type": "session", "version": 3, "id": "uuid", "timestamp": "t", "cwd": "/p"},
    {"type": "agent_start"},
    {"type": "turn_start"},
    {"type": "message_start", "message": {"role": "user", "content": "<promise>COMPLETE</promise>"}},
    {"type": "message_end", "message": {"role": "user", "content": "<promise>COMPLETE</promise>"}},
    {"type": "message_start", "message": {"role": "assistant", "content": []}},
    {"type": "message_update", "usage": {}, "assistantMessageEvent":
        {"type": "text_delta", "contentIndex": 0, "delta": "Let me "}},
    {"type": "message_update", "usage": {}, "assistantMessageEvent":
        {"type": "text_delta", "contentIndex": 0, "delta": "look."}},
    {"type": "message_end", "message": {"role": "assistant", "stopReason": "toolUse",
     "content": [{"type": "text", "text": "Let me look."},
                 {"type": "toolCall", "id": "t1", "name": "bash", "arguments": {"command": "ls"}}],
     "usage": {"input": 100, "output": 20, "cost": {"total": 0.0125}}}},
    {"type": "tool_execution_start", "toolCallId": "t1", "toolName": "bash",
     "args": {"command": "ls"}},
    {"type": "tool_execution_end", "toolCallId": "t1", "toolName": "bash", "result": {},
     "isError": False},
    {"type": "turn_end", "message": {}, "toolResults": []},
    {"type": "turn_start"},
    {"type": "message_end", "message": {"role": "assistant", "stopReason": "stop",
     "content": [{"type": "text", "text": "Finished."}],
     "usage": {"input": 50, "output": 5, "cost": {"total": 0.0025}}}},
    {"type": "turn_end", "message": {}, "toolResults": []},
    {"type": "agent_end", "messages": [], "willRetry": False},
)

OPENCODE = _jsonl(
    {"type": "step_start", "timestamp": 1, "sessionID": "ses_1",
     "part": {"type": "step-start", "messageID": "msg_1"}},
    {"type": "text", "timestamp": 2, "sessionID": "ses_1",
     "part": {"type": "text", "messageID": "msg_1", "text": "Reading README."}},
    {"type": "tool_use", "timestamp": 3, "sessionID": "ses_1",
     "part": {"type": "tool", "tool": "read", "callID": "c1", "messageID": "msg_1",
              "state": {"status": "completed", "input": {"filePath": "README.md"},
                        "output": "demo", "title": "README.md"}}},
    {"type": "step_finish", "timestamp": 4, "sessionID": "ses_1",
     "part": {"type": "step-finish", "reason": "tool-calls", "cost": 0.01,
              "tokens": {"input": 10, "output": 3, "reasoning": 0, "cache": {"read": 0, "write": 0}}}},
    {"type": "text", "timestamp": 5, "sessionID": "ses_1",
     "part": {"type": "text", "messageID": "msg_2", "text": "It says demo."}},
    {"type": "step_finish", "timestamp": 6, "sessionID": "ses_1",
     "part": {"type": "step-finish", "reason": "stop", "cost": 0.02,
              "tokens": {"input": 20, "output": 4, "reasoning": 0, "cache": {"read": 0, "write": 0}}}},
)

WRENCH = "\n\U0001F527 "


@pytest.mark.parametrize("factory, stream, expected", [
    (CodexRenderer, CODEX,
     f"{WRENCH}Bash\n   $ bash -lc ls\n{WRENCH}Edit update a.py\n"
     "Done. <promise>COMPLETE</promise>"
     "\n\u2501\u2501 Done (success) | tokens: in 24763, out 122 \u2501\u2501\n"),
    (GeminiRenderer, GEMINI,
     f"Reading files.{WRENCH}read_file ./package.json\n{WRENCH}run_shell_command\n   $ make test\n"
     "\n\u26a0 Loop detected\nAll good."
     "\n\u2501\u2501 Done (success) | tokens: in 14562, out 2304 \u2501\u2501\n"),
    (PiRenderer, PI,
     f"Let me look.{WRENCH}bash\n   $ ls\nFinished."
     "\n\u2501\u2501 Done (success) | cost: $0.015 | turns: 2 | tokens: in 150, out 25 \u2501\u2501\n"),
    (OpencodeRenderer, OPENCODE,
     f"Reading README.{WRENCH}read README.md\nIt says demo."
     "\n\u2501\u2501 Done (success) | cost: $0.03 | turns: 2 | tokens: in 30, out 7 \u2501\u2501\n"),
], ids=["codex", "gemini", "pi", "opencode"])
@pytest.mark.parametrize("chunk", [1, 5, 1 << 20], ids=["bytewise", "small-chunks", "whole"])
def test_json_stream_renderers_show_text_tools_and_an_end_line_in_any_chunking(
        factory, stream, expected, chunk):
    out = io.BytesIO()
    renderer = factory(out)
    for i in range(0, len(stream), chunk):
        renderer.feed(stream[i:i + chunk])
    renderer.close()
    assert out.getvalue().decode() == expected


@pytest.mark.parametrize("factory, stream, last_text, cost, turns, tokens, promise", [
    (CodexRenderer, CODEX, "Done. <promise>COMPLETE</promise>", None, 1, (24763, 122), True),
    (GeminiRenderer, GEMINI, "All good.", None, None, (14562, 2304), False),
    (PiRenderer, PI, "Finished.", 0.015, 2, (150, 25), False),
    (OpencodeRenderer, OPENCODE, "It says demo.", 0.03, 2, (30, 7), False),
], ids=["codex", "gemini", "pi", "opencode"])
def test_json_stream_renderers_fill_the_session_summary(factory, stream, last_text, cost, turns,
                                                         tokens, promise):
    renderer = factory(io.BytesIO())
    renderer.feed(stream)
    renderer.close()
    s = renderer.summary
    assert s.last_assistant_text == last_text
    assert s.result_subtype == "success" and s.is_error is False
    assert (s.total_cost_usd is None) == (cost is None)
    if cost is not None:
        assert s.total_cost_usd == pytest.approx(cost)
    assert s.num_turns == turns
    assert (s.input_tokens, s.output_tokens) == tokens
    # docs/contract/ralph-cli.md s.20.1: the echoed prompt (gemini, pi user messages) never counts
    # as a promise.
    assert claude_render.promise_received(s, "COMPLETE") is promise


def test_codex_turn_failure_is_an_error_result_with_its_message_kept_for_limit_detection():
    renderer = CodexRenderer(io.BytesIO())
    renderer.feed(_jsonl({"type": "turn.started"},
                         {"type": "error", "message": "stream disconnected"},
                         {"type": "turn.failed", "error": {"message": "You've hit your usage limit."}}))
    renderer.close()
    s = renderer.summary
    assert s.is_error is True and s.result_subtype == "error"
    assert s.error_texts == ["stream disconnected", "You've hit your usage limit."]


def gemini_failed_turn(message: str) -> bytes:
    """gemini 0.61's whole stream-json output when the API call of its first turn fails."""
    return _jsonl(
        {"type": "init", "session_id": "8bd2dc5e", "model": "auto"},
        {"type": "message", "role": "user", "content": "/ralph-build"},
        {"type": "result", "status": "error", "error": {"type": "unknown", "message": message},
         "stats": {"total_tokens": 0, "input_tokens": 0, "output_tokens": 0, "tool_calls": 0}})


def test_a_failed_gemini_turn_is_the_session_s_result_and_a_refused_key_is_an_auth_failure():
    """Exactly what gemini 0.61 prints when its API refuses the key (400 INVALID_ARGUMENT)."""
    message = ('[API Error: {"error":{"code":400,"message":"API key not valid. Please pass a '
               'valid API key.","status":"INVALID_ARGUMENT"}}]')
    renderer = GeminiRenderer(io.BytesIO())
    renderer.feed(gemini_failed_turn(message))
    renderer.close()
    s = renderer.summary
    assert (s.result_subtype, s.is_error, s.result_text) == ("error", True, message)
    out = classify(1, s)
    assert (out.kind, out.detail) == ("auth_failure", f"authentication failed: {message}")


def test_a_failed_codex_turn_is_shown_once_and_its_usage_limit_is_recognised():
    """Exactly what codex 0.169 prints when its API answers 429 `usage_limit_reached`: the
    message as an `error` event, then again as `turn.failed` (exit 1)."""
    limit = "You\u2019ve hit your usage limit. Try again later."
    out = io.BytesIO()
    renderer = CodexRenderer(out)
    renderer.feed(_jsonl({"type": "thread.started", "thread_id": "01a21927-520e-7022"},
                         {"type": "turn.started"},
                         {"type": "error", "message": limit},
                         {"type": "turn.failed", "error": {"message": limit}}))
    renderer.close()
    assert out.getvalue().decode() == (f"\n\u26a0 {limit}\n"
                                       "\n\u2501\u2501 Done (error) \u2501\u2501\n")
    s = renderer.summary
    assert (s.result_subtype, s.is_error, s.result_text) == ("error", True, limit)
    hit = usage_limits.detect(s, "", datetime.now(timezone.utc))
    assert hit is not None and (hit.kind, hit.message) == (usage_limits.LIMIT, limit)


# What gemini 0.61 prints, exactly, when the Gemini API answers 429 RESOURCE_EXHAUSTED for a
# spent free-tier quota: per minute, once its own attempts ran out; per day, at once (exit 173).
GEMINI_ADVICE = ("Please wait and try again later. To increase your limits, request a quota "
                 "increase through AI Studio, or switch to another /auth method")
GEMINI_PER_MINUTE = (
    "[API Error: You exceeded your current quota, please check your plan and billing details. "
    "For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-"
    "limits. To monitor your current usage, head to: https://ai.dev/rate-limit. \n* Quota "
    "exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, "
    "limit: 10, model: gemini-2.5-flash\nPlease retry in 2.5s.\nSuggested retry after 2s.]\n"
    + GEMINI_ADVICE)
GEMINI_PER_DAY = ("[API Error: You have exhausted your daily quota on this model.]\n"
                  + GEMINI_ADVICE)


@pytest.mark.parametrize("message, wait", [(GEMINI_PER_MINUTE, 2.5), (GEMINI_PER_DAY, None)],
                         ids=["per-minute-names-its-wait", "per-day-names-none"])
def test_a_gemini_session_ended_by_a_spent_quota_is_a_usage_limit_shown_once(message, wait):
    out = io.BytesIO()
    renderer = GeminiRenderer(out)
    renderer.feed(gemini_failed_turn(message))
    renderer.close()
    assert out.getvalue().decode().count("[API Error:") == 1
    now = datetime.now(timezone.utc)
    hit = usage_limits.detect(renderer.summary, "", now)
    assert (hit.kind, hit.message) == (usage_limits.LIMIT, message.splitlines()[0].strip())
    if wait is None:
        assert hit.reset_known is False
    else:
        assert hit.reset_at == now + timedelta(seconds=wait) and hit.reset_known is True
    out = classify(173, renderer.summary, limit_hit=hit)
    assert (out.kind, out.counts_as_failure) == ("usage_limit", False)


# What gemini 0.61 prints, exactly, when the API answers 429 for a quota whose limit is 0 (a
# project without that free tier): at once, without a retry, whatever the quota (exit 173).
GEMINI_ZERO_QUOTA = (
    "[API Error: You exceeded your current quota, please check your plan and billing details. "
    "For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-"
    "limits. To monitor your current usage, head to: https://ai.dev/rate-limit. \n* Quota "
    "exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, "
    "limit: 0, model: gemini-2.5-flash\nPlease retry in 25.465784708s.]\n" + GEMINI_ADVICE)


def test_a_gemini_session_ended_by_a_quota_of_0_stops_the_run_with_exit_7():
    out = io.BytesIO()
    renderer = GeminiRenderer(out)
    renderer.feed(gemini_failed_turn(GEMINI_ZERO_QUOTA))
    renderer.close()
    assert out.getvalue().decode().count("[API Error:") == 1
    hit = usage_limits.detect(renderer.summary, "", datetime.now(timezone.utc))
    assert (hit.kind, hit.reset_at) == (usage_limits.DISABLED, None)      # nothing to wait for
    how = classify(173, renderer.summary, limit_hit=hit)
    assert (how.kind, how.counts_as_failure) == ("usage_disabled", False)
    stop = outcome.stop_error(how, "gemini")
    assert (type(stop), stop.exit_code) == (UsageDisabled, 7)
    assert str(stop) == (
        'usage disabled: the API\'s quota is 0 ("Quota exceeded for metric: generativelanguage.'
        'googleapis.com/generate_content_free_tier_requests, limit: 0, model: gemini-2.5-flash"'
        "), so waiting cannot help; use an API key whose project has that quota, or another "
        "model (--model), then start the run again")


def test_amp_stream_json_is_rendered_by_the_claude_renderer():
    amp = _jsonl(
        {"type": "system", "subtype": "init", "cwd": "/w", "session_id": "T-1", "tools": []},
        {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "2+2?"}]}},
        {"type": "assistant", "message": {"type": "message", "role": "assistant",
                                          "content": [{"type": "text", "text": "2 + 2 equals 4."}]}},
        {"type": "result", "subtype": "success", "duration_ms": 2906, "is_error": False,
         "num_turns": 1, "result": "2 + 2 equals 4.", "session_id": "T-1"})
    out = io.BytesIO()
    renderer = adapters.get_adapter("amp").new_renderer(out)
    renderer.feed(amp)
    renderer.close()
    assert out.getvalue().decode() == ("2 + 2 equals 4.\n\u2501\u2501 Done (success) | "
                                       "cost: $null | turns: 1 \u2501\u2501\n")


def test_a_json_renderer_skips_a_line_longer_than_its_cap_and_goes_on():
    out = io.BytesIO()
    renderer = CodexRenderer(out, max_line_bytes=100)
    renderer.feed(b'{"type":"error","message":"' + b"x" * 300)
    renderer.feed(b'"}\n' + _jsonl({"type": "error", "message": "short"}))
    renderer.close()
    assert out.getvalue().decode() == "\n\u26a0 short\n"
    assert renderer.summary.events_seen["oversized"] == 1


@pytest.mark.parametrize("factory, stream, expected", [
    (PiRenderer, _jsonl(
        {"type": "message_end", "message": {"role": "assistant", "stopReason": "error",
                                            "errorMessage": "429 rate limit", "content": [
                                                {"type": "text", "text": "Partial answer."}]}}),
     "Partial answer.\n\u26a0 429 rate limit\n"),
    (GeminiRenderer, _jsonl(
        {"type": "message", "role": "assistant", "content": "Whole message."},
        {"type": "result", "status": "error", "error": {"type": "Quota", "message": "quota"}}),
     "Whole message.\n\u26a0 quota\n\n\u2501\u2501 Done (error) \u2501\u2501\n"),
    (OpencodeRenderer, _jsonl(
        {"type": "error", "error": {"name": "APIError", "data": {"message": "rate limited"}}}),
     "\n\u26a0 rate limited\n\n\u2501\u2501 Done (error) | turns: 0 \u2501\u2501\n"),
    (CodexRenderer, _jsonl(
        {"type": "item.completed", "item": {"id": "i9", "type": "command_execution",
                                            "command": "make", "status": "completed"}}),
     f"{WRENCH}Bash\n   $ make\n"),
], ids=["pi-without-deltas-and-error", "gemini-whole-message-error-result",
        "opencode-error-event", "codex-command-seen-only-completed"])
def test_renderers_handle_messages_without_deltas_and_errors(factory, stream, expected):
    out = io.BytesIO()
    renderer = factory(out)
    renderer.feed(stream)
    renderer.close()
    assert out.getvalue().decode() == expected
    if "\u26a0" in expected:
        assert renderer.summary.error_texts

"""ralphpy.agents.claude_render through its public interface: bytes in through feed()/close(), bytes out of
the caller's stream, facts out of .summary (docs/contract/ralph-cli.md s.12, s.20.1; issues 3 and
7)."""
from __future__ import annotations

import io
import json
import subprocess
import sys
import tracemalloc

import pytest

from conftest import wait_for
from ralphpy.agents.claude_render import MAX_LINE_BYTES, SessionSummary, StreamRenderer, promise_received

WRENCH = "\U0001F527"
BAR = "\u2501\u2501"


def line(event, **dumps) -> bytes:
    """One stream-json line, compact like Claude Code unless other json.dumps options given."""
    dumps.setdefault("separators", (",", ":"))
    return json.dumps(event, ensure_ascii=False, **dumps).encode() + b"\n"


def assistant(*blocks) -> dict:
    return {"type": "assistant", "message": {"role": "assistant", "content": list(blocks)}}


def tool(name, input_=...) -> dict:
    """A tool_use block; name None leaves `name` out, input_ left out leaves `input` out."""
    block = {"type": "tool_use", "id": "toolu_1"}
    if name is not None:
        block["name"] = name
    if input_ is not ...:
        block["input"] = input_
    return block


def text(value) -> dict:
    return {"type": "text", "text": value}


def render(*chunks: bytes, close: bool = True, **kw) -> tuple[str, StreamRenderer]:
    out = io.BytesIO()
    renderer = StreamRenderer(out, **kw)
    for chunk in chunks:
        renderer.feed(chunk)
    if close:
        renderer.close()
    return out.getvalue().decode("utf-8"), renderer


# ---- s.12 tool table -----------------------------------------------------------------------

TOOL_CASES = [
    ("read", tool("Read", {"file_path": "src/a.py"}), f"\n{WRENCH} Read src/a.py\n"),
    ("write", tool("Write", {"file_path": "b.txt", "content": "é" * 600}),
     f"\n{WRENCH} Write b.txt\n{'é' * 500}\n\n"),
    ("write-short-content", tool("Write", {"file_path": "b.txt", "content": "hi\n"}),
     f"\n{WRENCH} Write b.txt\nhi\n\n\n"),
    ("edit-newlines", tool("Edit", {"file_path": "c.py", "old_string": "a\nb",
                                    "new_string": "x\ny\n"}),
     f"\n{WRENCH} Edit c.py\n   - a\n   - b\n   + x\n   + y\n   + \n\n"),
    ("edit-truncated-before-newlines-are-replaced",
     tool("Edit", {"file_path": "c.py", "old_string": "o" * 199 + "\nzzz",
                   "new_string": "ñ" * 250}),
     f"\n{WRENCH} Edit c.py\n   - {'o' * 199}\n   - \n   + {'ñ' * 200}\n\n"),
    ("bash", tool("Bash", {"command": "make test", "description": "run"}),
     f"\n{WRENCH} Bash\n   $ make test\n"),
    ("bash-120-code-points", tool("Bash", {"command": "🙂" * 130}),
     f"\n{WRENCH} Bash\n   $ {'🙂' * 120}\n"),
    ("grep", tool("Grep", {"pattern": "def \\w+", "path": "lib"}),
     f"\n{WRENCH} Grep def \\w+ lib\n"),
    ("grep-without-path-ends-with-space", tool("Grep", {"pattern": "TODO"}),
     f"\n{WRENCH} Grep TODO \n"),
    ("glob", tool("Glob", {"pattern": "**/*.py", "path": None}),
     f"\n{WRENCH} Glob **/*.py \n"),
    ("task", tool("Task", {"subagent_type": "Explore", "description": "find the loop",
                           "prompt": "long"}),
     f"\n{WRENCH} Task [Explore] find the loop\n"),
    ("task-create", tool("TaskCreate", {"subject": "Add tests", "description": "d"}),
     f"\n{WRENCH} TaskCreate Add tests\n"),
    ("task-update", tool("TaskUpdate", {"taskId": "7", "status": "completed"}),
     f"\n{WRENCH} TaskUpdate #7 \u2192 completed\n"),
    ("task-update-numeric-id-is-json-text", tool("TaskUpdate", {"taskId": 7}),
     f"\n{WRENCH} TaskUpdate #7 \u2192 \n"),
    ("todowrite-has-no-detail", tool("TodoWrite", {"todos": [{"content": "x"}]}),
     f"\n{WRENCH} TodoWrite\n"),
    ("skill", tool("Skill", {"skill": "ralph-build"}), f"\n{WRENCH} Skill /ralph-build\n"),
    ("other-compact-json-keeps-key-order-and-non-ascii",
     tool("mcp__gh__issue", {"z": "été", "a": [1, 2.5, 3.0, True, None], "m": {"k": "v"}}),
     f'\n{WRENCH} mcp__gh__issue {{"z":"été","a":[1,2.5,3,true,null],"m":{{"k":"v"}}}}\n'),
    ("other-200-code-points", tool("WebFetch", {"url": "日" * 300}),
     f'\n{WRENCH} WebFetch {{"url":"{"日" * 192}\n'),
    ("other-escapes-like-json", tool("X", {"s": "a\"b\\c\n\t"}),
     f'\n{WRENCH} X {{"s":"a\\"b\\\\c\\n\\t"}}\n'),
    ("other-missing-input-is-null", tool("WebSearch"), f"\n{WRENCH} WebSearch null\n"),
    ("other-null-input-is-null", tool("WebSearch", None), f"\n{WRENCH} WebSearch null\n"),
    ("known-tool-missing-input-fields-are-empty", tool("Read"), f"\n{WRENCH} Read \n"),
    ("known-tool-non-object-input-fields-are-empty", tool("Read", "src/a.py"),
     f"\n{WRENCH} Read \n"),
    ("null-field-is-empty", tool("Read", {"file_path": None}), f"\n{WRENCH} Read \n"),
    ("number-field-is-json-text", tool("Read", {"file_path": 42}), f"\n{WRENCH} Read 42\n"),
    ("object-field-is-compact-json", tool("Skill", {"skill": {"n": [1, "é"], "b": False}}),
     f'\n{WRENCH} Skill /{{"n":[1,"é"],"b":false}}\n'),
    ("float-field-without-fraction-has-no-point", tool("Read", {"file_path": 2.0}),
     f"\n{WRENCH} Read 2\n"),
    ("missing-name-is-empty-and-uses-the-other-row", tool(None, {"a": 1}),
     f'\n{WRENCH}  {{"a":1}}\n'),
    ("numeric-name-is-json-text", tool(5, {"a": 1}), f'\n{WRENCH} 5 {{"a":1}}\n'),
]


@pytest.mark.parametrize("block, expected", [c[1:] for c in TOOL_CASES],
                         ids=[c[0] for c in TOOL_CASES])
def test_tool_use_block_renders_its_table_row(block, expected):
    assert render(line(assistant(block)))[0] == expected


# ---- s.12 assistant and other events --------------------------------------------------------

EVENT_CASES = [
    ("text-as-is-no-newline-added", line(assistant(text("Hi *there*  "))), "Hi *there*  "),
    ("blocks-in-order", line(assistant(text("a"), tool("Read", {"file_path": "f"}), text("b"))),
     f"a\n{WRENCH} Read f\nb"),
    # [SAFER] s.12 says "exactly as is"; control characters are shown escaped, never obeyed
    ("text-with-newlines-and-control-chars", line(assistant(text("x\n\ty\x1b[0m\r"))),
     "x\n\ty\\x1b[0m\\r"),
    ("missing-text-is-empty", line(assistant({"type": "text"}, text("z"))), "z"),
    ("numeric-text-is-json-text", line(assistant(text(12.50))), "12.5"),
    ("other-block-types-render-nothing",
     line(assistant({"type": "thinking", "thinking": "hmm"}, {"type": "image"}, text("ok"))),
     "ok"),
    ("non-object-blocks-render-nothing", line(assistant("text", 3, None, [1], text("ok"))), "ok"),
    ("missing-content", line({"type": "assistant", "message": {"role": "assistant"}}), ""),
    ("string-content", line({"type": "assistant", "message": {"content": "hello"}}), ""),
    ("object-content", line({"type": "assistant", "message": {"content": text("x")}}), ""),
    ("missing-message", line({"type": "assistant"}), ""),
    ("non-object-message", line({"type": "assistant", "message": [text("x")]}), ""),
    ("system-event", line({"type": "system", "subtype": "init", "content": [text("x")]}), ""),
    ("user-event-tool-result",
     line({"type": "user", "message": {"role": "user", "content": [
         {"type": "tool_result", "content": "secret"}, text("also not shown")]}}), ""),
    ("unknown-type", line({"type": "stream_event", "message": {"content": [text("x")]}}), ""),
    ("missing-type", line({"message": {"content": [text("x")]}}), ""),
    ("non-string-type", line({"type": ["assistant"], "message": {"content": [text("x")]}}), ""),
    ("spaced-json-like-python-dumps",
     json.dumps(assistant(text("spaced"))).encode() + b"\n", "spaced"),
    ("pretty-keys-type-not-first",
     b'{ "message" : {"content":[{"type":"text","text":"late"}]} , "type" : "assistant" }\n',
     "late"),
    ("escaped-type-value", b'{"type":"\\u0061ssistant","message":{"content":'
     b'[{"type":"text","text":"esc"}]}}\n', "esc"),
    ("escaped-type-key", b'{"\\u0074ype":"assistant","message":{"content":'
     b'[{"type":"text","text":"key"}]}}\n', "key"),
    ("crlf-line", line(assistant(text("crlf")))[:-1] + b"\r\n", "crlf"),
    ("empty-and-blank-lines", b"\n\n   \n" + line(assistant(text("after"))), "after"),
]


@pytest.mark.parametrize("data, expected", [c[1:] for c in EVENT_CASES],
                         ids=[c[0] for c in EVENT_CASES])
def test_event_renders_as_section_12_says(data, expected):
    assert render(data)[0] == expected


BAD_LINES = [
    ("plain-text", b"Error: something went wrong"),
    ("truncated-json", b'{"type":"assistant","message":{"content":[{"type":"text","text":"x"'),
    ("bare-number", b"42"),
    ("bare-array", b'[{"type":"assistant"}]'),
    ("bare-string", b'"assistant"'),
    ("bare-null", b"null"),
    ("nan-is-not-json", b'{"type":"result","total_cost_usd":NaN}'),
    ("two-objects-on-one-line", b'{"type":"result"} {"type":"result"}'),
    ("invalid-utf8-bytes", b"\xff\xfe\x80 binary junk \xc3"),
    ("deeply-nested", b"[" * 100000 + b"]" * 100000),
]


@pytest.mark.parametrize("bad", [c[1] for c in BAD_LINES], ids=[c[0] for c in BAD_LINES])
def test_a_line_that_is_not_a_json_object_is_ignored_and_rendering_goes_on(bad):
    data = line(assistant(text("before|"))) + bad + b"\n" + line(assistant(text("after")))
    output, renderer = render(data)
    assert output == "before|after"
    assert renderer.summary.events_seen["lines"] == 3


def test_invalid_utf8_inside_a_json_string_shows_as_replacement_character():
    data = b'{"type":"assistant","message":{"content":[{"type":"text","text":"a\xffb\xe2\x82"}]}}\n'
    assert render(data)[0] == "a\ufffdb\ufffd"


def test_lone_surrogate_escape_shows_as_replacement_character():
    data = b'{"type":"assistant","message":{"content":[{"type":"text","text":"x\\ud800y"}]}}\n'
    assert render(data)[0] == "x\ufffdy"


def test_escaped_surrogate_pair_shows_as_its_character():
    data = b'{"type":"assistant","message":{"content":[{"type":"text","text":"\\ud83d\\ude00"}]}}\n'
    assert render(data)[0] == "😀"


# ---- s.12 result line -----------------------------------------------------------------------

RESULT_CASES = [
    ("long-fraction-cut-to-6", {"total_cost_usd": 0.123456789}, "0.1234"),
    ("short-fraction", {"total_cost_usd": 0.05}, "0.05"),
    ("integer", {"total_cost_usd": 2}, "2"),
    ("float-without-fraction-has-no-point", {"total_cost_usd": 2.0}, "2"),
    ("two-digit-dollars", {"total_cost_usd": 12.3456789}, "12.345"),
    ("exponent", {"total_cost_usd": 1.5e-07}, "1.5e-0"),
    ("missing", {}, "null"),
    ("null", {"total_cost_usd": None}, "null"),
    ("string-as-is-cut", {"total_cost_usd": "0.987654"}, "0.9876"),
]


@pytest.mark.parametrize("fields, cost", [c[1:] for c in RESULT_CASES],
                         ids=[c[0] for c in RESULT_CASES])
def test_result_line_shows_cost_as_first_six_characters_of_its_json_number(fields, cost):
    event = {"type": "result", "subtype": "success", "num_turns": 3, **fields}
    assert render(line(event))[0] == f"\n{BAR} Done (success) | cost: ${cost} | turns: 3 {BAR}\n"


def test_cost_written_with_a_trailing_zero_still_loses_its_point():
    data = b'{"type":"result","subtype":"success","total_cost_usd":3.000,"num_turns":1}\n'
    assert render(data)[0] == f"\n{BAR} Done (success) | cost: $3 | turns: 1 {BAR}\n"


def test_result_line_shows_missing_subtype_and_turns_as_null():
    assert render(line({"type": "result"}))[0] == \
        f"\n{BAR} Done (null) | cost: $null | turns: null {BAR}\n"


def test_result_line_shows_non_string_subtype_as_json_text():
    event = {"type": "result", "subtype": ["x", 1], "num_turns": "7", "total_cost_usd": 0.5}
    assert render(line(event))[0] == f'\n{BAR} Done (["x",1]) | cost: $0.5 | turns: 7 {BAR}\n'


# ---- chunking, last line, streaming ----------------------------------------------------------

STREAM = (line({"type": "system", "subtype": "init"})
          + line(assistant(text("Grüße 🙂 "), tool("Bash", {"command": "ls ✓"})))
          + b"not json\n"
          + line({"type": "user", "message": {"content": [{"type": "tool_result",
                                                          "content": "x" * 5000}]}})
          + line({"type": "result", "subtype": "success", "total_cost_usd": 0.42,
                  "num_turns": 2}))
STREAM_TEXT = (f"Grüße 🙂 \n{WRENCH} Bash\n   $ ls ✓\n"
               f"\n{BAR} Done (success) | cost: $0.42 | turns: 2 {BAR}\n")


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 4096, len(STREAM)],
                         ids=lambda n: f"chunks-of-{n}")
def test_any_chunking_renders_the_same_bytes_even_inside_utf8_sequences(size):
    chunks = [STREAM[i:i + size] for i in range(0, len(STREAM), size)]
    assert render(*chunks)[0] == STREAM_TEXT


def test_last_line_without_newline_is_rendered_at_close_only():
    out = io.BytesIO()
    renderer = StreamRenderer(out)
    renderer.feed(line(assistant(text("one|")))[:-1])
    assert out.getvalue() == b""
    renderer.close()
    assert out.getvalue() == b"one|"


def test_close_twice_is_harmless_and_feed_after_close_is_refused():
    renderer = render(line(assistant(text("x"))))[1]
    renderer.close()
    with pytest.raises(ValueError):
        renderer.feed(b"{}\n")


class RecordingOut:
    """The caller's stream (sys.stdout.buffer in ralph.py): records writes and flushes."""

    def __init__(self):
        self.calls: list[tuple[str, bytes]] = []

    def write(self, data):
        self.calls.append(("write", bytes(data)))
        return len(data)

    def flush(self):
        self.calls.append(("flush", b""))

    def flushed_text(self) -> str:
        last_flush = max((i for i, c in enumerate(self.calls) if c[0] == "flush"), default=-1)
        return b"".join(d for k, d in self.calls[:last_flush + 1] if k == "write").decode()


def test_each_line_is_written_and_flushed_before_the_next_chunk_arrives():
    out = RecordingOut()
    renderer = StreamRenderer(out)
    renderer.feed(line(assistant(text("first"))))
    assert out.flushed_text() == "first"
    renderer.feed(line(assistant(text("sec")))[:10])
    assert out.flushed_text() == "first"
    renderer.feed(line(assistant(text("sec")))[10:] + line(assistant(text("|third"))))
    assert out.flushed_text() == "firstsec|third"
    renderer.feed(line({"type": "user"}))
    assert out.calls[-1] == ("flush", b"")


def test_rendering_reaches_out_while_the_writing_process_is_still_running(tmp_path):
    go = tmp_path / "go"
    child = subprocess.Popen(
        [sys.executable, "-c",
         "import os, sys, time\n"
         "sys.stdout.write('{\"type\":\"assistant\",\"message\":{\"content\":"
         "[{\"type\":\"text\",\"text\":\"live\"}]}}\\n'); sys.stdout.flush()\n"
         f"while not os.path.exists({str(go)!r}): time.sleep(0.01)\n"],
        stdout=subprocess.PIPE)
    try:
        out = io.BytesIO()
        renderer = StreamRenderer(out)
        renderer.feed(child.stdout.read1(65536))
        wait_for(lambda: out.getvalue() == b"live")
        assert child.poll() is None
    finally:
        go.touch()
        child.communicate(timeout=10)


# ---- long lines and memory ------------------------------------------------------------------

def test_line_over_the_cap_is_skipped_across_chunks_and_rendering_resumes():
    big = line(assistant(text("B" * 500)))
    output, renderer = render(line(assistant(text("a|"))), big[:100], big[100:300], big[300:],
                              line(assistant(text("c"))), max_line_bytes=256)
    assert output == "a|c"
    assert renderer.summary.events_seen["oversized"] == 1


def test_line_over_the_cap_inside_one_chunk_is_skipped():
    data = line(assistant(text("a|"))) + line(assistant(text("B" * 500))) + b"{}\n"
    output, renderer = render(data, line(assistant(text("c"))), max_line_bytes=256)
    assert output == "a|c"
    assert renderer.summary.events_seen == {"lines": 4, "assistant": 2, "result": 0,
                                            "rate_limit_event": 0, "oversized": 1}


@pytest.mark.parametrize("cap, rendered", [(100, True), (99, False)],
                         ids=["line-of-exactly-the-cap", "one-byte-over"])
def test_the_cap_counts_the_bytes_of_a_line_without_its_newline(cap, rendered):
    xs = "x" * (102 - len(line(assistant(text("x")))))
    data = line(assistant(text(xs)))
    assert len(data) - 1 == 100
    assert render(data[:50], data[50:], max_line_bytes=cap)[0] == (xs if rendered else "")


def test_oversized_last_line_without_newline_is_not_rendered_at_close():
    assert render(line(assistant(text("a"))), b'{"type":"result"' + b" " * 300,
                  max_line_bytes=256)[0] == "a"


def test_default_cap_is_8_mib_and_memory_stays_bounded_by_it():
    assert MAX_LINE_BYTES == 8 * 1024 * 1024
    renderer = StreamRenderer(io.BytesIO())
    chunk = b"x" * 65536
    tracemalloc.start()
    try:
        renderer.feed(b'{"type":"assistant","message":{"content":[{"type":"text","text":"')
        for _ in range(48 * 1024 * 1024 // len(chunk)):   # one 48 MiB line
            renderer.feed(chunk)
        renderer.feed(b'"}]}}\n' + line(assistant(text("next"))))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < MAX_LINE_BYTES + 4 * 1024 * 1024
    assert renderer.summary.last_assistant_text == "next"
    assert renderer.summary.events_seen["oversized"] == 1


# ---- summary (the session classification reads it) -------------------------------------------------------------

def test_summary_before_any_event_is_empty():
    summary = StreamRenderer(io.BytesIO()).summary
    assert summary == SessionSummary(events_seen={"lines": 0, "assistant": 0, "result": 0,
                                                  "rate_limit_event": 0, "oversized": 0})
    assert summary.result_text is None and summary.last_assistant_text is None


def test_summary_holds_the_fields_of_the_last_result_event():
    denial = {"tool_name": "Bash", "tool_use_id": "t1", "tool_input": {"command": "rm -rf /"}}
    first = {"type": "result", "subtype": "error_max_turns", "is_error": True,
             "total_cost_usd": 9, "num_turns": 50, "result": "old",
             "permission_denials": [denial, denial]}
    last = {"type": "result", "subtype": "success", "is_error": False,
            "total_cost_usd": 0.25, "num_turns": 4, "result": "done",
            "permission_denials": [denial]}
    summary = render(line(first), line(last))[1].summary
    assert (summary.result_subtype, summary.is_error, summary.total_cost_usd,
            summary.num_turns, summary.result_text, summary.permission_denials) == \
        ("success", False, 0.25, 4, "done", [denial])
    assert summary.events_seen["result"] == 2


def test_summary_result_fields_of_the_wrong_type_are_none():
    event = {"type": "result", "subtype": 3, "is_error": "yes", "total_cost_usd": "1",
             "num_turns": True, "result": ["x"], "permission_denials": "none"}
    summary = render(line(event))[1].summary
    assert (summary.result_subtype, summary.is_error, summary.total_cost_usd,
            summary.num_turns, summary.result_text, summary.permission_denials) == \
        (None, None, None, None, None, [])


def test_summary_last_assistant_text_concatenates_the_text_blocks_of_the_last_event_only():
    data = (line(assistant(text("earlier")))
            + line(assistant(text("a"), tool("Read", {"file_path": "x"}), text("b")))
            + line({"type": "user", "message": {"content": [text("tool out")]}}))
    summary = render(data)[1].summary
    assert summary.last_assistant_text == "ab"
    assert summary.assistant_texts_tail == ["earlier", "a", "b"]


def test_summary_last_assistant_text_is_empty_when_the_last_event_has_no_text():
    data = line(assistant(text("words"))) + line(assistant(tool("Read", {"file_path": "x"})))
    assert render(data)[1].summary.last_assistant_text == ""


def test_summary_keeps_rate_limit_events_as_dicts_and_a_bounded_tail():
    rejected = {"type": "rate_limit_event", "rate_limit_info": {
        "status": "rejected", "resetsAt": 1767000000, "rateLimitType": "five_hour"}}
    allowed = {"type": "rate_limit_event", "rate_limit_info": {"status": "allowed"}}
    data = line(allowed) * 70 + line(rejected)
    data += b"".join(line(assistant(text(f"t{i}"))) for i in range(20))
    data += line(assistant(text("L" * 5000)))
    summary = render(data)[1].summary
    assert summary.rate_limit_events[-1] == rejected
    assert len(summary.rate_limit_events) == 64
    assert summary.events_seen["rate_limit_event"] == 71
    assert len(summary.assistant_texts_tail) == 16
    assert summary.assistant_texts_tail[-2] == "t19"
    assert summary.assistant_texts_tail[-1] == "L" * 4096


def test_summary_is_a_snapshot_that_later_feeding_does_not_change():
    renderer = render(line(assistant(text("one"))), close=False)[1]
    before = renderer.summary
    renderer.feed(line(assistant(text("two"))))
    assert before.last_assistant_text == "one"
    assert before.assistant_texts_tail == ["one"]
    assert renderer.summary.last_assistant_text == "two"


# ---- s.20.1 completion promise --------------------------------------------------------------

P = "<promise>COMPLETE</promise>"
FINAL = {"type": "result", "subtype": "success", "result": "All done."}
PROMISE_CASES = [
    ("in-last-assistant-text", True, "COMPLETE",
     [assistant(text("Plan ready.\n" + P)), FINAL]),
    ("in-result-string", True, "COMPLETE",
     [assistant(text("bye")), {"type": "result", "result": f"done {P}"}]),
    ("split-over-text-blocks-of-the-last-event", True, "COMPLETE",
     [assistant(text("<promise>COMP"), tool("Read", {"file_path": "x"}), text("LETE</promise>"))]),
    ("custom-promise-text", True, "ALL DONE", [assistant(text("<promise>ALL DONE</promise>"))]),
    ("spaces-inside", False, "COMPLETE", [assistant(text("<promise> COMPLETE </promise>"))]),
    ("lower-case", False, "COMPLETE", [assistant(text("<promise>complete</promise>"))]),
    ("other-text", False, "COMPLETE", [assistant(text("<promise>DONE</promise>"))]),
    ("default-text-when-custom-configured", False, "DONE", [assistant(text(P))]),
    ("only-in-tool-use-input", False, "COMPLETE",
     [assistant(tool("Bash", {"command": f"echo '{P}'"})), FINAL]),
    ("only-in-tool-result", False, "COMPLETE",
     [{"type": "user", "message": {"content": [{"type": "tool_result", "content": P}]}},
      assistant(text("ok")), FINAL]),
    ("only-in-an-earlier-assistant-message", False, "COMPLETE",
     [assistant(text(P)), assistant(text("one more thing")), FINAL]),
    ("only-in-echoed-prompt-of-system-event", False, "COMPLETE",
     [{"type": "system", "subtype": "init", "prompt": P}, assistant(text("hi")), FINAL]),
    ("only-in-user-event-text", False, "COMPLETE",
     [{"type": "user", "message": {"content": [text(f"/ralph-plan say {P}")]}},
      assistant(text("hi"))]),
    ("only-in-non-result-field-of-result", False, "COMPLETE",
     [assistant(text("hi")), {"type": "result", "result": "x", "errors": [P]}]),
    ("no-events", False, "COMPLETE", []),
]


@pytest.mark.parametrize("expected, promise, events", [c[1:] for c in PROMISE_CASES],
                         ids=[c[0] for c in PROMISE_CASES])
def test_promise_counts_only_in_the_last_assistant_text_or_the_result_string(
        expected, promise, events):
    summary = render(b"".join(line(e) for e in events))[1].summary
    assert promise_received(summary, promise) is expected


# ------------------------------------------------------------------ api_retry (beyond s.12)

def _render_lines(*events: dict) -> tuple[bytes, StreamRenderer]:
    out = io.BytesIO()
    renderer = StreamRenderer(out)
    renderer.feed(b"".join(json.dumps(e).encode() + b"\n" for e in events))
    renderer.close()
    return out.getvalue(), renderer


def _retry(**fields) -> dict:
    return {"type": "system", "subtype": "api_retry", "attempt": 2, "max_retries": 10,
            "retry_delay_ms": 1117, "error_status": 529, "error": "overloaded", **fields}


def test_an_api_retry_is_one_line_with_attempt_status_error_and_the_next_delay():
    shown, renderer = _render_lines(_retry())
    assert shown == "\nAPI retry 2/10: 529 overloaded; next attempt in 1.1s\n".encode()
    assert renderer.summary.api_retries == 1 and renderer.abort is None


def test_an_api_retry_with_missing_fields_still_renders():
    shown, _ = _render_lines({"type": "system", "subtype": "api_retry"})
    assert shown == b"\nAPI retry ?/?: error; next attempt in ?\n"


def test_a_retried_401_asks_for_the_session_to_stop():
    _, renderer = _render_lines(_retry(error_status=401, error="authentication_failed"))
    assert renderer.abort == "API retry 2/10: 401 authentication_failed; next attempt in 1.1s"
    assert renderer.summary.auth_error == renderer.abort


def test_other_system_events_still_render_nothing():
    shown, renderer = _render_lines({"type": "system", "subtype": "init", "tools": ["api_retry"]},
                                    {"type": "system", "subtype": "status"})
    assert shown == b"" and renderer.summary.api_retries == 0


# ------------------------------------------------------------------ the CLI's release (beyond s.12)

INIT = {"type": "system", "subtype": "init", "cwd": "/repo", "session_id": "s1",
        "tools": ["Bash"], "model": "claude-sonnet-4-5", "claude_code_version": "2.1.332"}


@pytest.mark.parametrize("first", [True, False], ids=["type-first", "type-later"])
def test_the_init_event_names_the_cli_release_and_shows_nothing(first):
    event = INIT if first else {k: INIT[k] for k in reversed(list(INIT))}
    shown, renderer = _render_lines(event, {"type": "result", "subtype": "success"})
    assert renderer.summary.cli_version == "2.1.332"
    assert shown == f"\n{BAR} Done (success) | cost: $null | turns: null {BAR}\n".encode()


@pytest.mark.parametrize("version", [None, 2, ""], ids=["absent", "not-text", "empty"])
def test_an_init_event_without_a_release_leaves_it_unknown(version):
    event = {k: v for k, v in INIT.items() if k != "claude_code_version"}
    if version is not None:
        event["claude_code_version"] = version
    _, renderer = _render_lines(event)
    assert renderer.summary.cli_version is None

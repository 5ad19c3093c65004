"""tasks/jsontext gives what the json package gives, value for value and error for error,
and a task command does not import json (nor re, which json imports) to show a task."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT
from ralphpy.tasks import jsontext

TEXTS = [
    '["write the code", "write the test"]', "[]", "{}", '{"commit": "abc"}', " \t\n[1, 2.5, -3e2]\r\n",
    '"plain"', "42", "-0", "1E400", "-1e400", "NaN", "Infinity", "[-Infinity]", "true", "null",
    '["\\u00fc\\ud83d\\ude00", "\\ud800"]', '{"a": {"b": [null, false]}, "a": 2}', '"tab\\there"',
    "", " ", "[1,]", "[1] x", "[1]]", '"unterminated', '"ctrl\x01char"', "\ufeff[1]", "tru", "01",
    "[1, 2", '{"a" 1}', "\u00a0[1]", "[1]\u00a0", "\x0b1", "1\x0c",
]


def outcome(fn, *args):
    try:
        return "ok", repr(fn(*args))
    except Exception as err:  # the error's type and message are part of what must match
        return type(err).__name__, str(err)


@pytest.mark.parametrize("text", TEXTS)
def test_loads_is_json_loads(text):
    assert outcome(jsontext.loads, text) == outcome(json.loads, text)


VALUES = [
    ["write the code", "ü", "😀", "\ud800", "\"quote\" and \\ back\n"], {"a": [1, 2.5, None, True]},
    "a string", 7, -0.0, 1e300, float("inf"), float("nan"), [], {}, {"k": {"nested": ["x"]}},
    {1: "int key", None: "none key", 2.5: "float key"}, {True: "bool key"}, ("tu", "ple"),
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
@pytest.mark.parametrize("ensure_ascii", [True, False])
@pytest.mark.parametrize("compact", [True, False])
def test_dumps_is_json_dumps(value, ensure_ascii, compact):
    expected = json.dumps(value, ensure_ascii=ensure_ascii, separators=(",", ":") if compact else None)
    assert jsontext.dumps(value, ensure_ascii=ensure_ascii, compact=compact) == expected


def test_dumps_refuses_what_json_refuses():
    assert outcome(jsontext.dumps, {"x": {1, 2}}) == outcome(json.dumps, {"x": {1, 2}})
    loop: list = []
    loop.append(loop)
    assert outcome(jsontext.dumps, loop) == outcome(json.dumps, loop)


def test_showing_a_task_imports_neither_json_nor_re(tmp_path):
    probe = ("import sys; sys.path.insert(0, %r); from ralphpy.tasks import jsontext, markdown;"
             "jsontext.loads('[1]'); markdown.steps_list('[\"a\"]'); markdown.compact({'a': 1});"
             "print(sorted(m for m in ('json', 're', 'enum') if m in sys.modules))") % str(ROOT / "lib")
    out = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout == "[]\n"

"""Owns what the amp CLI (Sourcegraph's `@ampcode/cli`, pinned in package.json) says when it
refuses a session, and the renderer of its `--stream-json` (Claude Code's, render.py's, plus
amp's own lines). What the real binary does, measured against tests/e2e_real/standin_amp.py
and read in its bundle (its error printer writes `Error: <message>` on stderr and exits 1):

- A key Amp's server refuses (401 `{"ok": false, "error": {"code": "auth-required"}}` on
  `getUserInfo`, or a 401 on thread creation): `Error: Invalid or missing API key. Run 'amp
  login' to authenticate.` on stderr, nothing on stdout, exit 1. Every login amp cannot get
  past ends the same way, naming `amp login`: `Not logged in. Run 'amp login' ...`, `Access
  token expired. Run 'amp login' to refresh.`, `Session expired and could not be refreshed.
  Run 'amp login' ...`, `AMP_API_KEY holds an OAuth session token, ... run 'amp login'.`
- No key at all (no AMP_API_KEY, never logged in): `No API key found. Starting login flow...`
  on stdout, a URL, `paste your code here: `, and it waits, stdin on /dev/null or not.
- A thread refused for payment (402 on `POST /api/thread-actors`): `Error: <the body's
  "error" string, else the whole body>` on stderr, nothing on stdout, exit 1. Nothing keeps
  the status, so the refusal is known by its words: those amp's own client takes for spent
  credits (`Out of credits`, `... in available credits to start this request`, `Your Amp
  credit balance is low.`), HTTP's `Payment Required`, and `insufficient credit(s)/balance`.
  Not `You've reached your free usage limit`: Amp's free tier refills by the hour.
- A thread that failed once running: a `result` event of subtype `error_during_execution`,
  `is_error: true`, its message in `error` (not `result`), led by amp's title of it: `Out of
  Credits ...` or `No Usage Available ...` for spent credits, `Unauthorized ...` for a 401.

Does not own running amp (session/), reading its stderr (session/stderr_tee.py) or what a
refusal does to the run (unattended/outcome.py). Never prints.
"""
from __future__ import annotations

import re
from typing import Any

from ralphpy.agents.claude_render import StreamRenderer
from ralphpy.agents.refusal import AUTH, NO_CREDIT, Refusal
from ralphpy.agents.summary import field_text

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")            # FORCE_COLOR paints the label
_ERROR_LINE = re.compile(r"^Error:[ \t]*(.*?)[ \t\r]*$", re.M)
_LOGIN = re.compile(r"\brun [`']amp login[`']", re.I)
_CREDIT = re.compile(r"\bout of credits?\b|\binsufficient (?:credits?|balance|funds)\b"
                     r"|\bin available credits\b|\bcredit balance is low\b"
                     r"|\bpayment required\b", re.I)
_RESULT_CREDIT = re.compile(r"\s*(?:Out of Credits|No Usage Available)\b")
_RESULT_AUTH = re.compile(r"\s*Unauthorized\b")
# amp titles the free tier's hourly limit `Out of Credits` too: waiting helps there
_FREE_TIER = re.compile(r"\bfree (?:usage|tier)\b", re.I)
_NO_KEY = b"No API key found."
NO_KEY_DETAIL = "No API key found (amp would wait for an interactive login)"
_MESSAGE_CHARS = 300         # a body amp prints whole (not JSON) must not make a long line


def _message(line: str) -> str:
    return line.strip()[:_MESSAGE_CHARS].removesuffix(".")


def _no_credit(message: str) -> Refusal:
    return Refusal(NO_CREDIT, f"amp refused the session for lack of credit: {message}; add "
                              "credits to the Amp account (waiting cannot help), then start "
                              "the run again")


def refusal(stderr_tail: str, summary: Any) -> Refusal | None:
    """amp's refusal of the session: its last `Error:` line on stderr (the one it exited on),
    else the message of its error result. None: an ordinary agent error, or none."""
    lines = _ERROR_LINE.findall(_ANSI.sub("", stderr_tail or ""))
    if lines:
        message = _message(lines[-1])
        if _LOGIN.search(message):
            return Refusal(AUTH, f"authentication failed: {message}")
        if _CREDIT.search(message):
            return _no_credit(message)
    text = getattr(summary, "result_text", None)
    if getattr(summary, "is_error", None) is True and isinstance(text, str):
        message = _message(text.strip().splitlines()[0]) if text.strip() else ""
        if _RESULT_CREDIT.match(text) and not _FREE_TIER.search(text):
            return _no_credit(message)
        if _RESULT_AUTH.match(text):
            return Refusal(AUTH, f"authentication failed: {message}")
    return None


class AmpRenderer(StreamRenderer):
    """render.py's StreamRenderer, plus what amp writes beyond Claude Code's stream-json: the
    `error` of its error result is shown and kept as the result text, and its `No API key
    found` line stops the session at once (`abort`, as a retried 401 does for claude)."""

    def _line(self, line: bytes, parts: list[str]) -> None:
        if self._s.auth_error is None and line.lstrip().startswith(_NO_KEY):
            self._s.auth_error = NO_KEY_DETAIL
            parts.append(f"\n\u26a0 {line.decode('utf-8', 'replace').strip()}\n")
        super()._line(line, parts)

    def _result(self, event: dict) -> str:
        shown = super()._result(event)
        error = event.get("error")
        if self._s.result_text is None and self._s.is_error and error not in (None, ""):
            self._s.result_text = field_text(error)
            return f"\n\u26a0 {self._s.result_text}\n{shown}"
        return shown


__all__ = ["AmpRenderer", "refusal", "NO_KEY_DETAIL"]

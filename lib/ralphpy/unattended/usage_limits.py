"""Owns recognising that a session ran into a usage limit, or that its usage is disabled (by
an admin, or a quota of 0) so that no wait can help, from what the session produced: the
structural stream-json `rate_limit_event` and the limit messages the agent CLIs print. Knows
nothing of waiting (limit_wait), of reset-phrase grammar (reset_time) or of session
classification (outcome).

Structural shape (Claude Code 2.x, seen in stream-json logs quoted in public issue threads):

    {"type": "rate_limit_event",
     "rate_limit_info": {"status": "allowed" | "allowed_warning" | "rejected",
                         "resetsAt": 1778565600,          # epoch seconds
                         "rateLimitType": "five_hour" | "seven_day" | ...,
                         "overageStatus": "allowed" | "rejected", "overageDisabledReason": "...",
                         "isUsingOverage": false, "overageResetsAt": 1778570000},
     "uuid": "...", "session_id": "..."}

Only `status == "rejected"` is a hit (nested under `rate_limit_info`, or at the top level of
the event for older/other shapes). `overageStatus: "rejected"` alone is the steady state of
accounts without extra usage and is NOT a hit; it is one only while `isUsingOverage` is true
(the extra usage itself ran out), with `overageResetsAt` as the reset when present.

Messages are searched only in what the agent itself said (the result text, the text blocks of
assistant events) and in the agent's stderr, never in tool input or tool output. A message
counts only at the start of a line (after blanks, "⎿", "Error:" or "API Error: <code>"), or
anywhere inside an "API Error" line, so an agent that quotes the wording mid-sentence does
not stop the run.

gemini (0.61) ends a session on a 429 it gave up on (a quota per minute after its own
retries, one per day at once) with the API's message as '[API Error: <message>]' and, on a
line of its own, advice it gives for a 429 and nothing else (errorParsing.js,
RATE_LIMIT_ERROR_MESSAGE_*): "Please wait and try again later. To increase your limits, request
a quota increase through AI Studio, or switch to another /auth method" ("through Vertex" on
Vertex AI). Such an error is a limit, its first line the message, and the wait it names
("Please retry in 37.5s.", "Suggested retry after 37s.") the reset; a daily quota names none.

Unless the quota's limit is 0 (a key whose project has no free tier, a model it has no quota
for): no wait can help, and the error is disabled usage. Google's message names each quota it
refused on a line "* Quota exceeded for metric: <metric>, limit: 0, model: <model>"; gemini
0.61 reads that same "limit: 0" in the message to give up at once (googleQuotaErrors.js), and
the message is all of the error that reaches ralph (the result's error.message): QuotaFailure's
fields do not, and Google leaves a quotaValue of 0 out of them anyway (proto3 JSON)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Any, Iterable

from ralphpy.unattended.reset_time import from_epoch, parse_reset, retry_after

LIMIT = "limit"
DISABLED = "disabled"

_APOS = "['’‘ʼ]?"
# A line prefix Claude Code puts before its own messages, if any.
_LEAD = r"\s*(?:⎿\s*)?(?:(?:API\s+)?Error:?\s*(?:\d{3}\s*)?)?"
_DISABLED_RE = re.compile(r"your usage allocation has been disabled by your admin", re.I)
_LIMIT_RE = re.compile(
    rf"(?:you{_APOS}ve\s+hit\s+your\s+(?:[\w-]+\s+){{0,3}}limit"      # hit your (session|...) limit
    rf"|you{_APOS}re\s+out\s+of\s+extra\s+usage"
    rf"|(?:claude\s+(?:ai\s+)?)?(?:\d+-hour|weekly|daily|session|opus|sonnet|usage)"
    rf"(?:\s+usage)?\s+limit\s+reached"                              # 5-hour limit reached
    rf"|you{_APOS}ve\s+reached\s+your\s+(?:[\w-]+\s+){{0,3}}limit)",
    re.I)
_API_ERROR_LINE = re.compile(r"^\s*(?:⎿\s*)?API\s+Error", re.I)
_GEMINI_ERROR = "[API Error:"
_GEMINI_429_RE = re.compile(r"^please\s+wait\s+and\s+try\s+again\s+later\.\s+to\s+increase\s+"
                            r"your\s+limits", re.I | re.M)
_ZERO_LIMIT_RE = re.compile(r"\blimit:\s*0(?!\d|\.\d)", re.I)     # not "limit: 0.5", "limit: 05"
_ZERO_QUOTA_RE = re.compile(r"quota exceeded for metric:\s*[^,\n\]]+,\s*limit:\s*0(?!\d|\.\d)"
                            r"(?:,\s*model:\s*[\w./-]*\w)?", re.I)
_QUOTED_AT_MOST = 3


@dataclass(frozen=True)
class LimitHit:
    """A usage limit (kind LIMIT, wait until reset_at) or disabled usage (kind DISABLED,
    fatal, reset_at None). reset_known is False when reset_at is the configured default wait."""

    kind: str
    reset_at: datetime | None
    message: str
    source: str                     # "event", "text" or "stderr"
    reset_known: bool = True
    limit_type: str | None = None   # rateLimitType of the structural event, when there was one

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form for the run state (reset_at as ISO 8601 with offset)."""
        return {"kind": self.kind, "reset_at": self.reset_at.isoformat() if self.reset_at else None,
                "message": self.message, "source": self.source,
                "reset_known": self.reset_known, "limit_type": self.limit_type}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LimitHit":
        reset = data.get("reset_at")
        return cls(kind=data["kind"], reset_at=datetime.fromisoformat(reset) if reset else None,
                   message=data.get("message", ""), source=data.get("source", "state"),
                   reset_known=bool(data.get("reset_known", True)),
                   limit_type=data.get("limit_type"))


def _field(source: Any, name: str, default: Any = None) -> Any:
    if isinstance(source, dict):
        return source.get(name, default)
    return getattr(source, name, default)


def _texts(summary: Any) -> list[str]:
    """What the agent said: result text, last assistant text, the bounded tail of texts."""
    if summary is None:
        return []
    texts = [_field(summary, "result_text"), _field(summary, "last_assistant_text")]
    texts.extend(_field(summary, "assistant_texts_tail") or [])
    return [t for t in texts if isinstance(t, str) and t]


def _matching_line(pattern: re.Pattern, texts: Iterable[str]) -> str | None:
    for text in texts:
        for line in text.splitlines():
            found = pattern.search(line)
            if not found:
                continue
            at_start = re.fullmatch(_LEAD, line[:found.start()]) is not None
            if at_start or _API_ERROR_LINE.match(line):
                return line.strip()[:300]
    return None


def _gemini_429(texts: Iterable[str]) -> tuple[str, str] | None:
    """gemini's error ending a session on a 429: its first line, and the whole error."""
    for text in texts:
        if text.startswith(_GEMINI_ERROR) and _GEMINI_429_RE.search(text):
            return text.splitlines()[0].strip()[:300], text
    return None


def _zero_quota(said: str) -> str | None:
    """The message of disabled usage when a gemini 429 (`said`, the whole error) refused a
    quota whose limit is 0: Google's lines naming those quotas (metric, model), each once."""
    found = _ZERO_LIMIT_RE.search(said)
    if not found:
        return None
    quotas = list(dict.fromkeys(m.group(0).strip() for m in _ZERO_QUOTA_RE.finditer(said)))
    if not quotas:                  # another wording: the line that holds the zero limit
        start = said.rfind("\n", 0, found.start()) + 1
        end = said.find("\n", found.end())
        quotas = [said[start:end if end >= 0 else None].strip(" *[]")[:200]]
    shown = "; ".join(f'"{quota}"' for quota in quotas[:_QUOTED_AT_MOST])
    if len(quotas) > _QUOTED_AT_MOST:
        shown += f"; {len(quotas) - _QUOTED_AT_MOST} more"
    return (f"the API's quota is 0 ({shown}), so waiting cannot help; use an API key whose "
            "project has that quota, or another model (--model), then start the run again")


def _structural(events: Iterable[Any]) -> tuple[dict, dict] | None:
    """The last rejected rate_limit_event and its info dict, or None."""
    found = None
    for event in events or []:
        if not isinstance(event, dict):
            continue
        info = event.get("rate_limit_info")
        info = info if isinstance(info, dict) else event    # top-level shape: fields on the event
        status = info.get("status", event.get("status"))
        overage_hit = (info.get("isUsingOverage") is True
                       and info.get("overageStatus") == "rejected")
        if status == "rejected" or overage_hit:
            found = (event, info)
    return found


def detect(summary: Any, stderr_tail: str, now: datetime, *,
           default_wait: timedelta = timedelta(minutes=30),
           local_tz: tzinfo | None = None) -> LimitHit | None:
    """A LimitHit when the session hit a usage limit or found its usage disabled, else None.

    `summary` is a render.SessionSummary or anything with its fields (attributes or dict keys:
    rate_limit_events, result_text, last_assistant_text, assistant_texts_tail). Admin-disabled
    beats a limit; so does a gemini 429 on a quota of 0, disabled usage too. The structural
    event's epoch reset wins over a reset parsed from text; without either, reset_at is
    now + default_wait and reset_known is False."""
    stderr_lines = [stderr_tail] if stderr_tail else []
    texts = _texts(summary)
    for source, pool in (("text", texts), ("stderr", stderr_lines)):
        line = _matching_line(_DISABLED_RE, pool)
        if line:
            return LimitHit(DISABLED, None, line, source, reset_known=False)
    structural = _structural(_field(summary, "rate_limit_events") or [])
    text_line, said, text_source = None, "", None     # said: where the reset is read
    for source, pool in (("text", texts), ("stderr", stderr_lines)):
        text_line = _matching_line(_LIMIT_RE, pool)
        said = text_line or ""
        if text_line is None:
            text_line, said = _gemini_429(pool) or (None, "")
            zero = _zero_quota(said)
            if zero:
                return LimitHit(DISABLED, None, zero, source, reset_known=False)
        if text_line:
            text_source = source
            break
    if structural is None and text_line is None:
        return None
    reset_at, limit_type = None, None
    if structural is not None:
        event, info = structural
        limit_type = info.get("rateLimitType")
        reset_value = info.get("resetsAt", event.get("resetsAt"))
        if info.get("status", event.get("status")) != "rejected":
            reset_value = info.get("overageResetsAt", reset_value)   # extra usage ran out
        reset_at = from_epoch(reset_value) if reset_value is not None else None
    if reset_at is None and text_line:
        reset_at = parse_reset(said, now, local_tz=local_tz) or retry_after(said, now)
    message = text_line or f"rate_limit_event: status rejected ({limit_type or 'unknown limit'})"
    source = "event" if structural is not None else text_source
    if reset_at is None:
        return LimitHit(LIMIT, now + default_wait, message, source, False, limit_type)
    return LimitHit(LIMIT, reset_at, message, source, True, limit_type)


__all__ = ["LimitHit", "LIMIT", "DISABLED", "detect"]

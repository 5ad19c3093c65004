"""A scripted stand-in for the Gemini API on 127.0.0.1, for the real `gemini` CLI.

The CLI is pointed at it with GOOGLE_GEMINI_BASE_URL, with API-key auth (GEMINI_API_KEY, any
value; the key arrives as `x-goog-api-key`). It is standin.py's StandIn (server, recording,
`brain(request, n)` for the agent's turns) speaking the Gemini API as gemini 0.61 uses it:

- `POST /v1beta/models/<model>:streamGenerateContent?alt=sse`: requests that declare tools
  (`tools[].functionDeclarations`) are the agent's turns, answered by the brain (Text, Tool
  or Fail) as SSE `data:` chunks of GenerateContentResponse: the text, then a `functionCall`
  part; the last chunk carries `finishReason: STOP` and `usageMetadata`. The CLI sends the
  tool's result back as a `functionResponse` part (`function_responses`).
- `POST .../<model>:generateContent`: side questions that ask for JSON by a
  `responseJsonSchema`; before each turn the model router asks a light model for a
  complexity score. They get an object filled from that schema (`_fill`).
- `POST .../<model>:countTokens`: a count (the CLI asks only for media and long histories).

Errors are the Gemini API's `{"error": {"code", "message", "status"}}` (Fail.kind is the
status, e.g. RESOURCE_EXHAUSTED), with Fail.error's members added (`details`). `quota_exceeded`
is the 429 RESOURCE_EXHAUSTED of a spent free-tier request quota, per minute or per day, as
Google sends it: the message (`... Please retry in 37.5s.`), then QuotaFailure (whose
`quotaId` tells gemini which quota it is), Help and RetryInfo (`retryDelay`) details; with
`limit=0`, the 429 of a project that has no such quota at all (`..., limit: 0, model: ...`).
"""
from __future__ import annotations

import json
from typing import Any

from standin import Fail, Handler, StandIn, Text, Tool

SHELL = "run_shell_command"      # gemini's shell tool: bash -c <command>
USAGE = {"promptTokenCount": 20, "candidatesTokenCount": 12, "totalTokenCount": 32}
QUOTA_METRIC = "generativelanguage.googleapis.com/generate_content_free_tier_requests"
QUOTA_MODEL = "gemini-2.5-flash"


def shell(command: str, text: str = "") -> Tool:
    return Tool(SHELL, {"command": command, "description": "run"}, text)


class GeminiStandIn(StandIn):
    """StandIn's server and recording; the answers in the Gemini API's shapes."""

    def respond(self, handler: Handler, path: str, body: dict) -> None:
        method = path.rsplit(":", 1)[-1]
        if method == "countTokens":
            return handler.send_json(200, {"totalTokens": 100})
        if method == "generateContent":
            return handler.send_json(200, _response([{"text": json.dumps(_fill(body))}]))
        if method != "streamGenerateContent":
            return handler.send_json(404, _error(404, "NOT_FOUND", f"no {path}"))
        answer = self._answer(body)
        if isinstance(answer, Fail):
            payload = _error(answer.status, answer.kind, answer.message)
            payload["error"].update(answer.error)
            return handler.send_json(answer.status, payload, answer.headers)
        handler.start_stream()
        for chunk in _chunks(answer):          # `data:` lines only: the API names no events
            data = f"data: {json.dumps(chunk)}\r\n\r\n".encode()
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        handler.end_stream()


def _chunks(answer: Any) -> list[dict]:
    """The stream of one answer: its text, then the function call, the last chunk with the
    finish reason and usage (the CLI retries a stream that ends without a finish reason)."""
    parts = []
    if isinstance(answer, (Text, Tool)) and answer.text:
        parts.append({"text": answer.text})
    if isinstance(answer, Tool):
        parts.append({"functionCall": {"name": answer.name, "args": answer.input}})
    chunks = [_response([part]) for part in parts[:-1]]
    last = _response(parts[-1:])
    last["candidates"][0]["finishReason"] = "STOP"
    last["usageMetadata"] = USAGE
    return [*chunks, last]


def _response(parts: list[dict]) -> dict:
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}],
            "modelVersion": "standin"}


def _error(code: int, status: str, message: str) -> dict:
    return {"error": {"code": code, "message": message, "status": status}}


def quota_exceeded(per: str = "minute", retry_s: float | None = 37.5,
                   limit: int | None = None) -> Fail:
    """The API's answer when the free tier's requests per `per` ("minute" or "day") of the
    model are spent; `retry_s`: the wait it names, in the message and (whole seconds) as
    RetryInfo, or None for no wait named; `limit`: the quota's limit (10 a minute, 250 a day
    unless given). A limit of 0 (a project without that free tier) is in the message as any
    other (`limit: 0`), and its violation has no quotaValue: proto3 JSON leaves a 0 out."""
    quota_id = f"GenerateRequestsPer{per.capitalize()}PerProjectPerModel-FreeTier"
    limit = {"minute": 10, "day": 250}[per] if limit is None else limit
    message = ("You exceeded your current quota, please check your plan and billing details. "
               "For more information on this error, head to: https://ai.google.dev/gemini-api/"
               "docs/rate-limits. To monitor your current usage, head to: https://ai.dev/"
               f"rate-limit. \n* Quota exceeded for metric: {QUOTA_METRIC}, limit: {limit}, "
               f"model: {QUOTA_MODEL}")
    violation = {"quotaMetric": QUOTA_METRIC, "quotaId": quota_id,
                 "quotaDimensions": {"location": "global", "model": QUOTA_MODEL}}
    if limit:
        violation["quotaValue"] = str(limit)
    details = [
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [violation]},
        {"@type": "type.googleapis.com/google.rpc.Help", "links": [{
            "description": "Learn more about Gemini API quotas",
            "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]}]
    if retry_s is not None:
        message += f"\nPlease retry in {retry_s:g}s."
        details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo",
                        "retryDelay": f"{int(retry_s)}s"})
    return Fail(429, "RESOURCE_EXHAUSTED", message, error={"details": details})


def _fill(body: dict) -> Any:
    """A value of the JSON schema the request asks for: each required property with its first
    enum value, or an empty string, 1, false, [] or {} by type. The router then scores the
    task as simple (`complexity_score` 1) and picks its flash model; the next-speaker check,
    when the CLI makes it, hears that the user speaks next."""
    schema = body.get("generationConfig", {}).get("responseJsonSchema") or {}
    return _value(schema)


def _value(schema: dict) -> Any:
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        props = schema.get("properties", {})
        return {name: _value(props.get(name, {})) for name in schema.get("required", props)}
    return {"string": "", "integer": 1, "number": 1, "boolean": False, "array": []}.get(kind)


def function_responses(body: dict) -> list[dict]:
    """The `response` of every functionResponse part the CLI sent back, oldest first."""
    return [part["functionResponse"].get("response", {})
            for content in body.get("contents", []) for part in content.get("parts", [])
            if isinstance(part, dict) and "functionResponse" in part]


__all__ = ["GeminiStandIn", "Text", "Tool", "Fail", "shell", "function_responses",
           "quota_exceeded", "SHELL", "QUOTA_METRIC", "QUOTA_MODEL"]

"""A scripted stand-in for the OpenAI Responses API on 127.0.0.1, for the real `codex` CLI.

codex is pointed at it by a model provider in $CODEX_HOME/config.toml (`base_url`,
`wire_api = "responses"`). StandIn's server, recording and scripting are reused: `brain(request,
n)` returns Text, Tool (a function call: name, arguments), Fail (an HTTP error whose `kind` is
the error's `code`, which codex reads: `usage_limit_reached`, `insufficient_quota`, ...) or
Stall; `requests` keeps every request. `POST /v1/responses` is answered with the API's SSE:
`response.created`, then for each output item `response.output_item.added`, its deltas
(`response.output_text.delta` for a message, `response.function_call_arguments.delta/done` for
a function call), `response.output_item.done` with the whole item, and `response.completed`
with the usage. codex acts on the items of `output_item.done` and ends the request at
`response.completed`.
"""
from __future__ import annotations

import itertools
import json
from typing import Any

from standin import Fail, Handler, StandIn, Stall, Text, Tool, text_of

MODEL = "gpt-5.5"
USAGE = {"input_tokens": 20, "input_tokens_details": {"cached_tokens": 0},
         "output_tokens": 12, "output_tokens_details": {"reasoning_tokens": 0},
         "total_tokens": 32}


class ResponsesStandIn(StandIn):
    """StandIn answering `POST /v1/responses` (streamed: codex always asks for a stream)."""

    def respond(self, handler: Handler, path: str, body: dict) -> None:
        if not path.endswith("/v1/responses"):
            return handler.send_json(404, _error("not_found", "not here"))
        answer = self._answer(body)
        if isinstance(answer, Fail):
            payload = _error(answer.kind, answer.message)
            payload["error"].update(answer.error)
            return handler.send_json(answer.status, payload, answer.headers)
        response_id = f"resp_{self.next_id():06d}"
        handler.start_stream()
        seq = itertools.count()

        def event(kind: str, **fields: Any) -> None:
            handler.event(kind, {"type": kind, "sequence_number": next(seq), **fields})

        event("response.created", response=_response(response_id, "in_progress", []))
        if isinstance(answer, Stall):
            return self.stall(handler)
        items = []
        text = answer.text if isinstance(answer, (Text, Tool)) else ""
        if text:
            items.append(self._message(event, len(items), text))
        if isinstance(answer, Tool):
            items.append(self._call(event, len(items), answer.name, answer.input))
        event("response.completed", response=_response(response_id, "completed", items,
                                                       usage=USAGE))
        handler.end_stream()

    def _message(self, event: Any, index: int, text: str) -> dict:
        item_id = f"msg_{self.next_id():06d}"
        part = {"type": "output_text", "text": "", "annotations": []}
        event("response.output_item.added", output_index=index, item={
            "type": "message", "id": item_id, "status": "in_progress", "role": "assistant",
            "content": []})
        event("response.content_part.added", item_id=item_id, output_index=index,
              content_index=0, part=part)
        event("response.output_text.delta", item_id=item_id, output_index=index,
              content_index=0, delta=text)
        event("response.output_text.done", item_id=item_id, output_index=index,
              content_index=0, text=text)
        done = {**part, "text": text}
        event("response.content_part.done", item_id=item_id, output_index=index,
              content_index=0, part=done)
        item = {"type": "message", "id": item_id, "status": "completed", "role": "assistant",
                "content": [done]}
        event("response.output_item.done", output_index=index, item=item)
        return item

    def _call(self, event: Any, index: int, name: str, arguments: dict) -> dict:
        number = self.next_id()
        item_id, call_id = f"fc_{number:06d}", f"call_{number:06d}"
        args = json.dumps(arguments)
        event("response.output_item.added", output_index=index, item={
            "type": "function_call", "id": item_id, "call_id": call_id, "name": name,
            "arguments": "", "status": "in_progress"})
        event("response.function_call_arguments.delta", item_id=item_id, output_index=index,
              delta=args)
        event("response.function_call_arguments.done", item_id=item_id, output_index=index,
              arguments=args)
        item = {"type": "function_call", "id": item_id, "call_id": call_id, "name": name,
                "arguments": args, "status": "completed"}
        event("response.output_item.done", output_index=index, item=item)
        return item


def _response(response_id: str, status: str, output: list, usage: dict | None = None) -> dict:
    return {"id": response_id, "object": "response", "status": status, "model": MODEL,
            "output": output, "usage": usage}


def _error(code: str, message: str) -> dict:
    return {"error": {"type": code, "code": code, "message": message, "param": None}}


def function_outputs(body: dict) -> list[str]:
    """The output of every function call codex sent back in this request, oldest first."""
    return [text_of(item.get("output")) for item in body.get("input", [])
            if isinstance(item, dict) and item.get("type") == "function_call_output"]


__all__ = ["ResponsesStandIn", "function_outputs", "MODEL"]

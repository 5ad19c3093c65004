"""A stand-in for the start of an Amp CLI session, on 127.0.0.1 (the CLI's AMP_URL).

amp talks to Amp's own server, not to a model API: it asks whose key it holds
(`/api/internal?getUserInfo`), loads plugins and skills, sends telemetry, then creates a thread
(`/api/thread-actors`) and joins it over a Rivet actor WebSocket. The thread's agent loop and
its model calls run on Amp's server, which is not stood in here: thread creation is refused
(402, amp's "out of credits" answer, with `refusal` as the message amp prints), so the session
ends there. Every POST is kept in `requests`, as in StandIn.
"""
from __future__ import annotations

from standin import Handler, StandIn, Text

USER = {"id": "user_standin", "email": "standin@example.com", "emailVerified": True,
        "username": "standin", "features": [], "team": None}
# The JSON-RPC methods of /api/internal a headless start calls, and their results.
RESULTS = {"getUserInfo": USER, "loadPlugins": [], "loadSkills": {"skills": []}}


class AmpStandIn(StandIn):
    def __init__(self, refusal: str):
        super().__init__(lambda body, n: Text(""))
        self.refusal = refusal

    def respond(self, handler: Handler, path: str, body: dict) -> None:
        if path == "/api/internal":
            return handler.send_json(200, {"ok": True,
                                           "result": RESULTS.get(body.get("method"), {})})
        if path == "/api/telemetry":
            return handler.send_json(200, {})
        if path == "/api/thread-actors":
            return handler.send_json(402, {"error": self.refusal})
        return handler.send_json(404, {"error": "not here"})

    def telemetry(self) -> list[dict]:
        """Every telemetry event amp sent, oldest first."""
        return [event for r in self.requests if r["path"] == "/api/telemetry"
                for event in r["body"]]


__all__ = ["AmpStandIn"]

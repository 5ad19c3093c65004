"""A stand-in for the start of an Amp CLI session, on 127.0.0.1 (the CLI's AMP_URL).

amp talks to Amp's own server, not to a model API: it asks whose key it holds
(`/api/internal?getUserInfo`), loads plugins and skills, sends telemetry, then creates a thread
(`/api/thread-actors`) and joins it over a Rivet actor WebSocket. The thread's agent loop and
its model calls run on Amp's server, which is not stood in here, so a session ends at the
latest at thread creation, refused the way Amp's server refuses:

- `refusal` (a message): the thread is refused with 402 Payment Required, `{"error":
  refusal}`, Amp's answer to an account without credit; amp prints the `error` string as its
  message (or the whole body when there is none).
- `key_refused`: every `/api/internal` call is refused with 401 and amp's JSON-RPC error
  `{"ok": false, "error": {"code": "auth-required", ...}}`, Amp's answer to a key it does not
  know (amp reads the code, not the message); amp stops after `getUserInfo`.

Every POST is kept in `requests`, as in StandIn.
"""
from __future__ import annotations

from standin import Handler, StandIn, Text

USER = {"id": "user_standin", "email": "standin@example.com", "emailVerified": True,
        "username": "standin", "features": [], "team": None}
# The JSON-RPC methods of /api/internal a headless start calls, and their results.
RESULTS = {"getUserInfo": USER, "loadPlugins": [], "loadSkills": {"skills": []}}
KEY_REFUSED = {"ok": False, "error": {"code": "auth-required", "message": "Unauthorized"}}


class AmpStandIn(StandIn):
    def __init__(self, refusal: str = "Insufficient credit balance (stand-in)", *,
                 key_refused: bool = False):
        super().__init__(lambda body, n: Text(""))
        self.refusal = refusal
        self.key_refused = key_refused

    def respond(self, handler: Handler, path: str, body: dict) -> None:
        if path == "/api/internal" and self.key_refused:
            return handler.send_json(401, KEY_REFUSED)
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

    def asked_for_a_thread(self) -> bool:
        return any(r["path"] == "/api/thread-actors" for r in self.requests)


__all__ = ["AmpStandIn", "KEY_REFUSED"]

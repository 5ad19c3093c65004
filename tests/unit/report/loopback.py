"""A webhook receiver for the notification tests: an HTTP server on 127.0.0.1 (never another
interface) on a free port, in a thread, recording the JSON bodies POSTed to it."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    """A webhook receiver on 127.0.0.1; `statuses` are answered in turn (then 200)."""

    def __init__(self, statuses: list[int] | None = None):
        self.bodies: list[dict] = []
        self.statuses = list(statuses or [])
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.bodies.append(json.loads(body))
                self.send_response(receiver.statuses.pop(0) if receiver.statuses else 200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook/secret-token"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


__all__ = ["Receiver"]

"""A minimal HTTP endpoint with the metaqueue API's shape (``POST /v1/<verb>``, bearer token), for relay tests.

It records what reached it and answers what the test tells it to; it stands in for the server only
where the thing under test is the relay (the gateway), not the metaqueue's semantics.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Recorder:
    token: str
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status: int = 200
    answer: dict[str, Any] = field(default_factory=lambda: {"action": "wait", "jobs": []})
    url: str = ""


@contextmanager
def relay_server(token: str = "s3cret-0123456789") -> Iterator[Recorder]:
    rec = Recorder(token)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.headers.get("Authorization") != f"Bearer {rec.token}":
                self._send(401, {"detail": "missing or wrong bearer token"})
                return
            rec.requests.append((self.path, json.loads(body)))
            self._send(rec.status, rec.answer)

        def _send(self, status: int, obj: dict[str, Any]) -> None:
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    rec.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield rec
    finally:
        server.shutdown()
        server.server_close()

"""A webhook's receiving end for tests: a real local HTTP(S) server that records each POST and
answers with planned statuses, and the signature check a receiver does."""

import hashlib
import hmac
import json
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler

from tests.local_server import LocalServer


class Receiver:
    """A local endpoint answering each POST with the next planned status (then 200)."""

    def __init__(self, statuses=(), delay: float = 0.0, tls: ssl.SSLContext | None = None) -> None:
        self.statuses = list(statuses)
        self.delay = delay
        self.requests: list[dict] = []
        self.received = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body, "at": time.monotonic()}
                )
                time.sleep(receiver.delay)
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", "/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()
                receiver.received.set()

            def log_message(self, *args):
                pass

        self.server = LocalServer(Handler)
        if tls is not None:
            self.server.httpd.socket = tls.wrap_socket(self.server.httpd.socket, server_side=True)

    def __enter__(self):
        self.server.__enter__()
        self.port = self.server.httpd.server_address[1]
        self.url = self.server.url.removesuffix("/v1") + "/hooks/deepcite?team=1"
        return self

    def __exit__(self, *exc):
        self.server.__exit__(*exc)


def verify(secret: str, request: dict) -> dict:
    """What a receiver does: recompute the signature over timestamp.body and compare."""
    timestamp = request["headers"]["X-Deepcite-Timestamp"]
    expected = hmac.new(
        secret.encode(), f"{timestamp}.".encode() + request["body"], hashlib.sha256
    ).hexdigest()
    assert hmac.compare_digest(request["headers"]["X-Deepcite-Signature"], f"sha256={expected}")
    assert abs(time.time() - int(timestamp)) < 60
    return json.loads(request["body"])

"""A real HTTP server speaking the OpenAI /v1/embeddings protocol, for tests. Its vectors
are hashed bags of words: texts that share words are close, so rankings are checkable."""

import hashlib
import json
import re
from http.server import BaseHTTPRequestHandler

from tests.local_server import LocalServer

DIM = 64


def bag_of_words_vector(text: str) -> list[float]:
    vector = [0.0] * DIM
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
        vector[int.from_bytes(digest, "little") % DIM] += 1.0
    return vector


class EmbeddingServer(LocalServer):
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.fail_with: int | None = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(
                    {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                )
                if server.fail_with:
                    self.send_response(server.fail_with)
                    self.end_headers()
                    return
                data = [
                    {"object": "embedding", "index": i, "embedding": bag_of_words_vector(text)}
                    for i, text in enumerate(body["input"])
                ]
                payload = json.dumps({"object": "list", "data": data[::-1], "model": body["model"]})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(payload.encode())

            def log_message(self, *args):
                pass

        super().__init__(Handler)

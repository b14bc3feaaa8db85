"""GraphQL over HTTP with the standard library: one POST per operation, errors as `CliError`."""

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Any

from cli.constants import (
    EXIT_FAILED,
    EXIT_USAGE,
    GRAPHQL_PATH,
    HTTP_TIMEOUT_SECONDS,
    UPLOAD_FIELD,
    UPLOAD_PATH,
    UPLOAD_TIMEOUT_SECONDS,
)


class CliError(Exception):
    """A failure reported as one line `[code] message`, ending the command with `exit_code`."""

    def __init__(self, code: str, message: str, *, exit_code: int = EXIT_FAILED, transient: bool = False):
        super().__init__(message)
        self.code = code
        self.message = message
        self.exit_code = exit_code
        # A dropped connection or a 5xx: worth retrying while waiting for a run.
        self.transient = transient


class UsageError(CliError):
    def __init__(self, code: str, message: str):
        super().__init__(code, message, exit_code=EXIT_USAGE)


def graphql_endpoint(url: str) -> str:
    """`http://host:8000`, `http://host:8000/` and `http://host:8000/graphql` all name one endpoint."""
    parsed = urllib.parse.urlsplit(url.strip())
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise UsageError("invalid_url", f"the server URL must be http(s)://host[:port], not {url!r}")
    path = parsed.path.rstrip("/")
    if not path.endswith(GRAPHQL_PATH):
        path += GRAPHQL_PATH
    return urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, path, "", ""))


def global_id(value: str, type_name: str) -> str:
    """A relay global id as given, or one built from a plain database id (`7` -> `Corpus:7`)."""
    value = value.strip()
    if value.isascii() and value.isdigit():
        return base64.b64encode(f"{type_name}:{int(value)}".encode()).decode("ascii")
    return value


class GraphQLClient:
    def __init__(self, *, url: str, token: str, timeout: float = HTTP_TIMEOUT_SECONDS) -> None:
        self.endpoint = graphql_endpoint(url)
        self.base_url = self.endpoint[: -len(GRAPHQL_PATH)]
        self.token = token
        self.timeout = timeout

    def execute(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """The `data` of a successful response; any error (HTTP, GraphQL) raises CliError."""
        # The scheme is http(s), checked by graphql_endpoint.
        request = urllib.request.Request(  # noqa: S310
            self.endpoint,
            data=json.dumps({"query": query, "variables": variables or {}}).encode("utf-8"),
            method="POST",
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json",
                "Authorization": f"Bearer {self.token}",
                "User-Agent": "deepcite-cli",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise CliError(
                "connection_failed", f"cannot reach {self.endpoint}: {reason}", transient=True
            ) from exc
        payload = self._decode(status, raw)
        errors = payload.get("errors")
        if errors:
            raise _graphql_error(errors[0], status)
        if status != 200 or not isinstance(payload.get("data"), dict):
            raise CliError(
                f"http_{status}", f"unexpected answer from {self.endpoint}", transient=status >= 500
            )
        return payload["data"]

    def upload(self, corpus_id: str, files: list[tuple[str, bytes]]) -> list[dict[str, Any]]:
        """POST (file name, content) pairs to the corpus's upload endpoint; one result per file
        ({filename, status, code, message, document_id, passages}). A refusal raises CliError."""
        boundary = f"deepcite-{uuid.uuid4().hex}"
        body = b"".join(_multipart_part(boundary, name, content) for name, content in files)
        body += f"--{boundary}--\r\n".encode()
        url = self.base_url + UPLOAD_PATH.format(corpus=urllib.parse.quote(corpus_id, safe=""))
        request = urllib.request.Request(  # noqa: S310 (http(s), checked by graphql_endpoint)
            url,
            data=body,
            method="POST",
            headers={
                "Content-Type": f"multipart/form-data; boundary={boundary}",
                "Accept": "application/json",
                "Authorization": f"Bearer {self.token}",
                "User-Agent": "deepcite-cli",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=UPLOAD_TIMEOUT_SECONDS) as response:  # noqa: S310
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        except (urllib.error.URLError, OSError) as exc:
            raise CliError("connection_failed", f"cannot reach {url}: {getattr(exc, 'reason', exc)}") from exc
        try:
            payload = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            payload = None
        if not isinstance(payload, dict):
            raise CliError(f"http_{status}", f"{url} did not answer with JSON (HTTP {status})")
        errors = payload.get("errors")
        if errors and isinstance(errors[0], dict):
            raise CliError(str(errors[0].get("code") or f"http_{status}"), str(errors[0].get("message")))
        if status != 200 or not isinstance(payload.get("documents"), list):
            raise CliError(f"http_{status}", f"unexpected answer from {url}")
        return payload["documents"]

    def mutate(self, query: str, variables: dict[str, Any], name: str) -> dict[str, Any]:
        """Run a mutation and return its payload; a typed payload error raises CliError."""
        payload = self.execute(query, variables)[name]
        if payload is None:
            raise CliError("bad_response", f"the server returned no {name} payload")
        if payload.get("errors"):
            error = payload["errors"][0]
            field = f" ({error['field']})" if error.get("field") else ""
            raise CliError(error.get("code") or "error", f"{error.get('message', 'failed')}{field}")
        return payload

    def _decode(self, status: int, raw: bytes) -> dict[str, Any]:
        try:
            payload = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            payload = None
        if not isinstance(payload, dict):
            raise CliError(
                f"http_{status}",
                f"{self.endpoint} did not answer with GraphQL JSON (HTTP {status}); is it a Deepcite server?",
                transient=status >= 500,
            )
        return payload


def _graphql_error(error: Any, status: int) -> CliError:
    if not isinstance(error, dict):
        return CliError("graphql_error", str(error))
    extensions = error.get("extensions") or {}
    code = extensions.get("code") or (f"http_{status}" if status != 200 else "graphql_error")
    return CliError(str(code), str(error.get("message") or "request failed"), transient=status >= 500)


def _multipart_part(boundary: str, filename: str, content: bytes) -> bytes:
    # A file name goes in a quoted header parameter: no quote, backslash or line break in it.
    safe = "".join("_" if c in '"\\\r\n' else c for c in filename)
    head = (
        f"--{boundary}\r\n"
        f'Content-Disposition: form-data; name="{UPLOAD_FIELD}"; filename="{safe}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    )
    return head.encode("utf-8") + content + b"\r\n"

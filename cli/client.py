"""GraphQL over HTTP with the standard library: one POST per operation, errors as `CliError`."""

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from cli.constants import EXIT_FAILED, EXIT_USAGE, GRAPHQL_PATH, HTTP_TIMEOUT_SECONDS


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

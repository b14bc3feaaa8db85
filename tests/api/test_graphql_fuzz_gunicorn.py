"""The fuzz strategies of test_graphql_fuzz.py sent over HTTP to a real gunicorn process with
the production settings (Django's test client skips the server's body handling), plus what only
a socket can send: a Content-Length the body does not match, chunked bodies, a garbage length,
header bytes that are not ASCII. No answer is a 500, names an internal exception, or logs an
unhandled error."""

import http.client
import json
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.api.test_graphql_fuzz import (
    VALID_QUERIES,
    bodies,
    content_types,
    fuzz,
    garbled_documents,
    junk_variables,
    leaked_markers,
)
from tests.production_server import production_server

EXAMPLES = {"garbled": 500, "variables": 800, "bodies": 700}
executed: dict[str, int] = dict.fromkeys(EXAMPLES, 0)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("fuzz")
    with production_server(workdir) as running:
        running.manage(
            "createuser", "fuzz", "--password-env", "FUZZ_PASSWORD", env={"FUZZ_PASSWORD": "x" * 20}
        )
        running.token = running.manage("createapitoken", "fuzz").stdout.strip()
        running.log = workdir / "gunicorn.log"
        yield running
    log = running.log.read_text(errors="replace")
    assert "Traceback" not in log and "unhandled error" not in log, log[-3000:]


def send(server, body: bytes, content_type: str, token: str | None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    headers = {"Content-Type": content_type} if content_type else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        connection.request("POST", "/graphql", body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def assert_clean(status: int, body: bytes, sent: bytes = b"") -> None:
    text = body.decode("utf-8", errors="replace")
    assert status != 500, text[:500]
    leaked = leaked_markers(text, sent)
    assert not leaked, (leaked, text[:500])


def raw(server, request: bytes, *, half_close: bool = False) -> tuple[int, bytes]:
    """Send bytes as they are; read the whole answer (the server closes after it)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(request)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    answer = b"".join(chunks)
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def request_bytes(server, body: bytes, *headers: bytes) -> bytes:
    lines = [b"POST /graphql HTTP/1.1", b"Host: 127.0.0.1", b"Connection: close"]
    lines += [b"Authorization: Bearer " + server.token.encode(), *headers]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


@fuzz(EXAMPLES["garbled"])
@given(document=garbled_documents, anonymous=st.booleans())
def test_garbled_documents_over_http(server, document, anonymous):
    body = json.dumps({"query": document}).encode()
    assert_clean(*send(server, body, "application/json", None if anonymous else server.token), body)
    executed["garbled"] += 1


@fuzz(EXAMPLES["variables"])
@given(
    query=st.sampled_from(VALID_QUERIES),
    variables=junk_variables,
)
def test_junk_variables_over_http(server, query, variables):
    body = json.dumps({"query": query, "variables": variables}).encode()
    assert_clean(*send(server, body, "application/json", server.token), body)
    executed["variables"] += 1


@fuzz(EXAMPLES["bodies"])
@given(body=bodies, content_type=content_types, anonymous=st.booleans())
def test_wrong_bodies_and_content_types_over_http(server, body, content_type, anonymous):
    assert_clean(*send(server, body, content_type, None if anonymous else server.token), body)
    executed["bodies"] += 1


QUERY = json.dumps({"query": "{ corpora { edges { node { id } } } }"}).encode()


def test_a_well_formed_request_is_answered(server):
    # the control for the cases below: the same bytes, framed properly
    status, body = raw(
        server,
        request_bytes(server, QUERY, b"Content-Type: application/json", b"Content-Length: %d" % len(QUERY)),
    )
    # (the fuzzing above may have created corpora: createCorpus is among the valid queries)
    answer = json.loads(body)
    assert (status, list(answer), list(answer["data"]["corpora"])) == (200, ["data"], ["edges"])


def test_a_body_shorter_than_its_content_length_is_a_typed_400(server):
    request = request_bytes(
        server, QUERY, b"Content-Type: application/json", b"Content-Length: %d" % (len(QUERY) + 50)
    )
    status, body = raw(server, request, half_close=True)
    assert status == 400
    assert json.loads(body)["errors"][0]["extensions"]["code"] == "invalid_body"


def test_a_chunked_body_is_asked_for_its_length(server):
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(QUERY), QUERY)
    status, body = raw(
        server,
        request_bytes(server, chunked, b"Content-Type: application/json", b"Transfer-Encoding: chunked"),
    )
    assert (status, json.loads(body)["errors"][0]["extensions"]["code"]) == (411, "length_required")


@pytest.mark.parametrize("length", [b"abc", b"-1", b"99999999999999999999", b"\xd9\xa3"])
def test_a_content_length_that_is_not_a_size_is_refused(server, length):
    request = request_bytes(server, QUERY, b"Content-Type: application/json", b"Content-Length: " + length)
    status, body = raw(server, request)
    assert status in {400, 413}
    assert_clean(status, body)


def test_a_declared_length_past_the_limit_is_413_before_the_body_is_sent(server):
    request = request_bytes(server, b"", b"Content-Type: application/json", b"Content-Length: 10000000")
    status, body = raw(server, request)
    assert status == 413
    assert json.loads(body)["errors"][0]["extensions"]["code"] == "request_too_large"


def test_header_bytes_that_are_not_ascii_are_not_a_500(server):
    request = request_bytes(
        server,
        QUERY,
        b"Content-Type: application/json; charset=\xff\xfe",
        b"Content-Length: %d" % len(QUERY),
        b"X-Note: \xc3\x28\xa0\xa1",
    )
    assert_clean(*raw(server, request))


def test_at_least_2000_inputs_went_over_http():
    if any(count == 0 for count in executed.values()):
        pytest.skip(f"only part of the module ran: {executed}")
    assert sum(executed.values()) >= 2_000, executed

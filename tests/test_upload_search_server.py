"""Twenty text documents uploaded through the API to a real gunicorn process (production
settings, the bundled embedding model, no broker: embedding runs in the background in the web
process): each is found by a lexical search within 2 s of the upload's answer, while the
embedding goes on."""

import json
import time
import urllib.request
import uuid

import pytest

from tests.production_server import production_server

DOCUMENTS = 20
WITHIN_SECONDS = 2.0
SEARCH = """query($c: ID!, $q: String!) {
  search(corpusId: $c, query: $q, mode: LEXICAL, topK: 3) { passage { document { title } } }
}"""


def document(index: int) -> str:
    return (
        f"# Supply agreement {index}\n\nThe supplier quoted codeword marker{index:02d}x for this order. "
        "Deliveries arrive within thirty days of each purchase order; the buyer inspects them on arrival.\n\n"
        "Either party may terminate this agreement on ninety days' written notice to the other party.\n"
    )


def multipart(files: dict[str, str]) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
        f"Content-Type: text/markdown\r\n\r\n{text}\r\n"
        for name, text in files.items()
    ]
    return ("".join(parts) + f"--{boundary}--\r\n").encode(), f"multipart/form-data; boundary={boundary}"


def call(url: str, token: str, body: bytes, content_type: str) -> dict:
    request = urllib.request.Request(  # noqa: S310 -- the local test server
        url, data=body, headers={"Authorization": f"Bearer {token}", "Content-Type": content_type}
    )
    with urllib.request.urlopen(request, timeout=120) as response:  # noqa: S310
        return json.loads(response.read())


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("uploads")
    with production_server(workdir, EMBEDDING_BACKEND="minilm") as running:
        running.manage("createuser", "uma", "--password-env", "PW", env={"PW": "a long enough password 7"})
        running.token = running.manage("createapitoken", "uma").stdout.strip()
        yield running


def graphql(server, query: str, variables: dict) -> dict:
    body = json.dumps({"query": query, "variables": variables}).encode()
    answer = call(f"{server.base}/graphql", server.token, body, "application/json")
    assert "errors" not in answer, answer
    return answer["data"]


def test_uploaded_documents_are_found_by_lexical_search_within_two_seconds(server):
    created = graphql(server, 'mutation { createCorpus(name: "Uploads") { corpus { id } } }', {})
    corpus = created["createCorpus"]["corpus"]["id"]
    body, content_type = multipart({f"supply-{i:02d}.md": document(i) for i in range(DOCUMENTS)})

    answer = call(f"{server.base}/api/corpora/{corpus}/documents", server.token, body, content_type)
    answered = time.monotonic()
    assert [d["status"] for d in answer["documents"]] == ["ingested"] * DOCUMENTS

    missing = set(range(DOCUMENTS))
    while missing and time.monotonic() - answered < WITHIN_SECONDS:
        for index in sorted(missing):
            hits = graphql(server, SEARCH, {"c": corpus, "q": f"marker{index:02d}x"})["search"]
            if hits and hits[0]["passage"]["document"]["title"] == f"supply-{index:02d}":
                missing.discard(index)
    assert not missing, f"not found within {WITHIN_SECONDS} s of the answer: {sorted(missing)}"

    # the embedding goes on in the background and reaches every passage on its own
    stats = "query($c: ID!) { corpus(id: $c) { passageCount embeddedPassageCount } }"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        counts = graphql(server, stats, {"c": corpus})["corpus"]
        if counts["embeddedPassageCount"] == counts["passageCount"]:
            break
        time.sleep(0.5)
    assert counts["embeddedPassageCount"] == counts["passageCount"] > 0

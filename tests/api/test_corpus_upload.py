"""POST /api/corpora/<corpus>/documents through Django's test client and the real database:
real Markdown and PDF files ingested as `manage.py ingest` stores them, one result per file
(duplicate, unsupported, corrupt, too large), the body refused from its Content-Length before a
byte is read, bearer tokens and sessions (CSRF enforced), the creator only, the upload rate, and
a JSON answer with a code for every refusal."""

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from accounts.services import api_token_create
from corpora.models import Document, FileType, Passage
from corpora.selectors import passage_search
from corpora.services import corpus_create, corpus_share
from corpora.uploads import upload_filename_clean
from tasks.embeddings import in_process_worker
from tests.api.conftest import gid
from tests.documents import docx_bytes, docx_paragraphs_bytes, pdf_bytes
from tests.embedding_server import EmbeddingServer
from tests.factories import ACME_SUPPLY, INITECH_LICENSE

URL = "/api/corpora/{}/documents"
MISSING = 10**9
PDF = pdf_bytes(
    [
        ["Data Processing Addendum", "The Processor shall notify the Controller of a personal data breach"],
        ["within forty-eight hours of becoming aware of it."],
    ]
)


class Uploader:
    """Posts files to the upload endpoint as a client would; returns (status, body, response)."""

    def __init__(self, client: Client, token: str | None = None) -> None:
        self.client = client
        self.token = token

    def __call__(self, ref, files: list[tuple[str, bytes]], **extra):
        if self.token:
            extra.setdefault("HTTP_AUTHORIZATION", f"Bearer {self.token}")
        data = {"files": [SimpleUploadedFile(name, content) for name, content in files]}
        response = self.client.post(URL.format(ref), data, **extra)
        return response.status_code, response.json(), response


@pytest.fixture
def upload(user) -> Uploader:
    return Uploader(Client(), token=api_token_create(user=user, name="uploads").secret)


@pytest.fixture
def other_upload(other_user) -> Uploader:
    return Uploader(Client(), token=api_token_create(user=other_user, name="uploads").secret)


def refusal(status: int, code: str, message: str) -> tuple[int, dict]:
    return status, {"errors": [{"code": code, "message": message}]}


def ingested(document: Document, filename: str) -> dict:
    return {
        "filename": filename,
        "status": "ingested",
        "code": None,
        "message": f"ingested {filename!r}: {document.passages.count()} passages",
        "document_id": gid("Document", document.pk),
        "passages": document.passages.count(),
    }


def test_a_markdown_file_and_a_pdf_are_ingested_and_searchable_at_once(upload, corpus):
    # when
    status, body, _ = upload(corpus.pk, [("acme-supply.md", ACME_SUPPLY.encode()), ("dpa.pdf", PDF)])
    # then
    acme = Document.objects.get(file_type=FileType.MD)
    dpa = Document.objects.get(file_type=FileType.PDF)
    assert status == 200
    assert body == {
        "corpus_id": gid("Corpus", corpus.pk),
        "documents": [ingested(acme, "acme-supply.md"), ingested(dpa, "dpa.pdf")],
    }
    assert (acme.corpus, acme.title, acme.source_name) == (corpus, "acme-supply", "acme-supply.md")
    assert (dpa.corpus, dpa.page_count) == (corpus, 2)
    assert body["documents"][1]["passages"] >= 1
    for passage in Passage.objects.filter(document__in=[acme, dpa]):
        assert passage.document.text[passage.start : passage.end] == passage.text
    hits = passage_search(corpus=corpus, query="personal data breach", mode="lexical")
    assert hits[0].passage.document_id == dpa.pk
    assert passage_search(corpus=corpus, query="Delaware", mode="lexical")[0].passage.document_id == acme.pk


def test_the_corpus_is_named_by_its_global_id_or_its_number(upload, corpus):
    status, body, _ = upload(gid("Corpus", corpus.pk), [("a.md", ACME_SUPPLY.encode())])
    assert (status, body["documents"][0]["status"]) == (200, "ingested")
    status, body, _ = upload(corpus.pk, [("b.txt", INITECH_LICENSE.encode())])
    assert (status, body["documents"][0]["status"]) == (200, "ingested")
    assert Document.objects.filter(corpus=corpus).count() == 2


def test_the_same_bytes_twice_are_a_duplicate_of_the_first(upload, corpus):
    # when: twice in one request, then again in another
    _, first, _ = upload(corpus.pk, [("acme.md", ACME_SUPPLY.encode()), ("copy.md", ACME_SUPPLY.encode())])
    _, again, _ = upload(corpus.pk, [("acme-again.md", ACME_SUPPLY.encode())])
    # then
    document = Document.objects.get()
    duplicate = {
        "status": "duplicate",
        "code": "duplicate_document",
        "message": f"skipped: same content already ingested as document {document.pk} ('acme.md')",
        "document_id": gid("Document", document.pk),
        "passages": 0,
    }
    assert first["documents"] == [ingested(document, "acme.md"), {"filename": "copy.md", **duplicate}]
    assert again["documents"] == [{"filename": "acme-again.md", **duplicate}]


def test_each_bad_file_is_reported_with_its_code_and_the_others_are_stored(upload, corpus, settings):
    # given a per-file limit the big file is over
    settings.INGEST_MAX_FILE_BYTES = 2000
    files = [
        ("setup.exe", b"MZ\x90\x00binary"),
        ("notes", b"no suffix"),
        ("broken.pdf", b"%PDF-1.4 this is not really a pdf"),
        ("empty.txt", b"   \n  "),
        ("big.txt", b"word " * 1000),
        ("initech.txt", INITECH_LICENSE.encode()),
    ]
    # when
    status, body, _ = upload(corpus.pk, files)
    # then
    assert status == 200
    results = [(d["filename"], d["status"], d["code"], d["document_id"]) for d in body["documents"]]
    document = Document.objects.get()
    assert results == [
        ("setup.exe", "failed", "unsupported_file_type", None),
        ("notes", "failed", "unsupported_file_type", None),
        ("broken.pdf", "failed", "corrupt_file", None),
        ("empty.txt", "failed", "empty_document", None),
        ("big.txt", "failed", "file_too_large", None),
        ("initech.txt", "ingested", None, gid("Document", document.pk)),
    ]
    assert body["documents"][4]["message"] == "'big.txt' is 5000 bytes; the limit is 2000"
    assert body["documents"][0]["message"].startswith("'setup.exe': unsupported file type '.exe'; supported:")
    assert document.source_name == "initech.txt"


def test_a_docx_of_too_many_paragraphs_is_refused_and_a_smaller_one_keeps_its_headings(
    upload, corpus, settings
):
    # given a paragraph limit one file is over, and a file with headings under it
    settings.INGEST_MAX_PARAGRAPHS = 1000
    files = [
        ("many.docx", docx_paragraphs_bytes(1001)),
        ("few.docx", docx_bytes([("Heading 2", "Backups"), ("Normal", "Nightly backups are kept 30 days.")])),
    ]
    # when
    status, body, _ = upload(corpus.pk, files)
    # then
    assert status == 200
    assert [(d["filename"], d["status"], d["code"]) for d in body["documents"]] == [
        ("many.docx", "failed", "file_too_large"),
        ("few.docx", "ingested", None),
    ]
    assert body["documents"][0]["message"] == (
        "'many.docx': over 20000000 characters or 1000 paragraphs of text; refused"
    )
    assert Document.objects.get().source_name == "few.docx"
    assert list(Passage.objects.values_list("heading_path", flat=True)) == [["Backups"]]


def test_a_docx_that_unzips_past_the_limit_is_refused_before_it_is_parsed(upload, corpus, settings):
    # given a .docx of 5 KB whose XML unzips to some 500 KB, over the limit
    settings.INGEST_MAX_UNZIPPED_BYTES = 100_000
    bomb = docx_paragraphs_bytes(12_000)
    # when
    status, body, _ = upload(corpus.pk, [("bomb.docx", bomb)])
    # then
    assert status == 200
    [result] = body["documents"]
    assert (result["status"], result["code"]) == ("failed", "file_too_large")
    assert result["message"].startswith("'bomb.docx' unzips to ")
    assert result["message"].endswith(" bytes; the limit is 100000")
    assert not Document.objects.exists()


def test_a_pdf_of_more_pages_than_the_limit_is_refused(upload, corpus, settings):
    # given a page limit a four-page PDF is over
    settings.INGEST_MAX_PDF_PAGES = 3
    pages = pdf_bytes([["Backups are kept 30 days."]] * 4)
    # when
    status, body, _ = upload(corpus.pk, [("pages.pdf", pages)])
    # then
    assert status == 200
    assert body["documents"][0] | {"document_id": None} == {
        "filename": "pages.pdf",
        "status": "failed",
        "code": "file_too_large",
        "message": "'pages.pdf' has 4 pages; the limit is 3",
        "document_id": None,
        "passages": 0,
    }
    assert not Document.objects.exists()


def test_deeply_nested_html_is_ingested_in_reading_order(upload, corpus, caplog):
    # given pages nested far past Python's recursion limit
    files = [
        ("inline.html", b"<p>" + b"<b><i>" * 100_000 + b"Backups are kept 30 days."),
        ("tables.html", b"<h2>Retention</h2>" + b"<table>" * 50_000 + b"Logs are kept a year."),
    ]
    # when
    status, body, _ = upload(corpus.pk, files)
    # then
    assert status == 200
    assert [(d["filename"], d["status"], d["code"]) for d in body["documents"]] == [
        ("inline.html", "ingested", None),
        ("tables.html", "ingested", None),
    ]
    texts = dict(Document.objects.values_list("source_name", "text"))
    assert texts == {
        "inline.html": "Backups are kept 30 days.",
        "tables.html": "Retention\n\nLogs are kept a year.",
    }
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


def test_an_oversized_body_is_refused_from_its_content_length_before_it_is_read(upload, corpus, settings):
    # given a body whose reading would fail the test
    settings.UPLOAD_MAX_BYTES = 1000

    class Unreadable:
        def read(self, *args):
            raise AssertionError("the body was read")

        readline = read

    # when
    status, body, _ = upload(
        corpus.pk,
        [],
        CONTENT_TYPE="multipart/form-data; boundary=x",
        CONTENT_LENGTH="1001",
        **{"wsgi.input": Unreadable()},
    )
    # then
    assert (status, body) == refusal(413, "request_too_large", "the request body is over 1000 bytes")
    # and a real body over the limit, sent in full, is refused the same way
    status, body, _ = upload(corpus.pk, [("big.txt", b"x" * 2000)])
    assert (status, body) == refusal(413, "request_too_large", "the request body is over 1000 bytes")
    assert Document.objects.count() == 0


def test_the_body_needs_a_content_length(upload, corpus):
    status, body, _ = upload(corpus.pk, [("a.md", b"# A")], HTTP_TRANSFER_ENCODING="chunked")
    assert (status, body) == refusal(411, "length_required", "send the body with a Content-Length")
    status, body, _ = upload(corpus.pk, [("a.md", b"# A")], CONTENT_LENGTH="12abc")
    assert (status, body) == refusal(400, "invalid_body", "the Content-Length header is not a number")
    assert Document.objects.count() == 0


def test_a_bad_token_is_refused(corpus):
    status, body, _ = Uploader(Client(), token="dc_not-a-token")(corpus.pk, [("a.md", b"# A")])
    assert (status, body) == refusal(
        401, "invalid_token", "the API token is missing, unknown, expired or revoked"
    )
    status, body, _ = Uploader(Client())(corpus.pk, [("a.md", b"# A")], HTTP_AUTHORIZATION="Basic abc")
    assert status == 401 and body["errors"][0]["code"] == "invalid_token"
    assert Document.objects.count() == 0


def test_a_read_only_token_is_refused(user, corpus):
    token = api_token_create(user=user, name="ro", read_only=True).secret
    status, body, _ = Uploader(Client(), token=token)(corpus.pk, [("a.md", b"# A")])
    assert (status, body) == refusal(
        403, "token_read_only", "this API token is read-only: it cannot upload documents"
    )
    assert Document.objects.count() == 0


def test_anonymous_is_refused(corpus):
    status, body, _ = Uploader(Client())(corpus.pk, [("a.md", b"# A")])
    assert (status, body) == refusal(401, "not_authenticated", "sign in or send an API token")


def test_another_users_corpus_answers_as_a_missing_one(other_upload, corpus):
    not_found = refusal(404, "corpus_not_found", "corpus not found")
    for ref in (corpus.pk, gid("Corpus", corpus.pk), MISSING, gid("Corpus", MISSING), "junk", "9" * 40, "0"):
        status, body, _ = other_upload(ref, [("a.md", ACME_SUPPLY.encode())])
        assert (status, body) == not_found, ref
    assert Document.objects.count() == 0


def test_a_user_the_corpus_is_shared_with_cannot_upload(other_upload, user, corpus):
    corpus_share(user=user, corpus=corpus, username="bob")
    status, body, _ = other_upload(corpus.pk, [("a.md", ACME_SUPPLY.encode())])
    assert (status, body) == refusal(
        403, "permission_denied", "only the corpus's creator can upload documents to it"
    )
    assert Document.objects.count() == 0


def test_a_session_must_send_the_csrf_token(user, corpus):
    # given a signed-in browser that enforces CSRF
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    browser.get("/accounts/login/")  # sets the CSRF cookie
    token = browser.cookies["csrftoken"].value
    session = Uploader(browser)
    # when / then: without the token
    status, body, _ = session(corpus.pk, [("a.md", ACME_SUPPLY.encode())])
    assert (status, body) == refusal(403, "csrf_failed", "CSRF check failed")
    assert Document.objects.count() == 0
    # with it, in the header or as the form's field
    status, body, _ = session(corpus.pk, [("a.md", ACME_SUPPLY.encode())], HTTP_X_CSRFTOKEN=token)
    assert (status, body["documents"][0]["status"]) == (200, "ingested")
    response = browser.post(
        URL.format(corpus.pk),
        {"csrfmiddlewaretoken": token, "files": [SimpleUploadedFile("b.txt", INITECH_LICENSE.encode())]},
    )
    assert (response.status_code, response.json()["documents"][0]["status"]) == (200, "ingested")
    assert Document.objects.count() == 2


def test_uploads_past_the_rate_are_refused_with_retry_after(upload, other_upload, user, corpus, settings):
    # given a rate of 3 files an hour
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "uploads": "3/h"}
    # when
    first, _, _ = upload(corpus.pk, [("a.md", ACME_SUPPLY.encode()), ("b.txt", INITECH_LICENSE.encode())])
    status, body, response = upload(corpus.pk, [("c.pdf", PDF), ("d.md", b"# D\n\nMore text.")])
    # then
    assert first == 200
    assert status == 429
    retry_after = int(response["Retry-After"])
    assert 1 <= retry_after <= 3600
    assert body == {
        "errors": [
            {
                "code": "rate_limited",
                "message": f"too many requests; try again in {retry_after} s",
                "retry_after": retry_after,
            }
        ]
    }
    assert Document.objects.count() == 2
    # the count is the user's, whichever token or session: Bob has his own
    own = corpus_create(creator=get_user_model().objects.get(username="bob"), name="Bob's")
    assert other_upload(own.pk, [("c.pdf", PDF)])[0] == 200


def test_refusals_are_json_with_a_code(upload, corpus, settings):
    url = URL.format(corpus.pk)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {upload.token}"}
    response = upload.client.get(url, **auth)
    assert (response.status_code, response.json(), response["Allow"]) == (
        405,
        {"errors": [{"code": "method_not_allowed", "message": "POST the files as multipart/form-data"}]},
        "POST",
    )
    response = upload.client.post(url, {"files": "x"}, content_type="application/json", **auth)
    assert (response.status_code, response.json()) == refusal(
        415, "unsupported_media_type", "send the files as multipart/form-data"
    )
    response = upload.client.post(url, {"other": "x"}, **auth)
    assert (response.status_code, response.json()) == refusal(
        400, "no_files", "send one or more files in the 'files' field"
    )
    # a body cut short, and a part with no file name: Django's parser keeps no file of either
    for body in (
        b'--x\r\nContent-Disposition: form-data; name="files"; filename="a.md"\r\n\r\nabc',
        b'--x\r\nContent-Disposition: form-data; name="files"; filename=""\r\n\r\nabc\r\n--x--\r\n',
    ):
        response = upload.client.post(url, body, content_type="multipart/form-data; boundary=x", **auth)
        assert (response.status_code, response.json()) == refusal(
            400, "no_files", "send one or more files in the 'files' field"
        )
    response = upload.client.post(url, b"garbage", content_type="multipart/form-data", **auth)
    assert (response.status_code, response.json()) == refusal(
        400, "invalid_body", "the request body could not be read as multipart/form-data"
    )
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 2
    status, body, _ = upload(corpus.pk, [("a.md", b"# A"), ("b.md", b"# B"), ("c.md", b"# C")])
    assert (status, body) == refusal(400, "too_many_files", "at most 2 files per request")
    assert Document.objects.count() == 0


def multipart(files: list[tuple[str, bytes]]) -> bytes:
    """A multipart body with the file names exactly as given (the test client keeps only a
    name's last path component)."""
    body = b""
    for name, content in files:
        body += (
            b'--B\r\nContent-Disposition: form-data; name="files"; filename="'
            + name.encode("utf-8", "surrogatepass")
            + b'"\r\nContent-Type: application/octet-stream\r\n\r\n'
            + content
            + b"\r\n"
        )
    return body + b"--B--\r\n"


def test_untrusted_file_names_lose_their_paths_and_control_characters(upload, corpus):
    # when
    files = [
        ("../../etc/acme.md", ACME_SUPPLY.encode()),
        ("C:\\Users\\eve\\initech.txt", INITECH_LICENSE.encode()),
        ("dp\ta\x07.pdf", PDF),
        ("x" * 400 + ".md", b"# Long\n\nA file whose name is far too long to keep."),
    ]
    response = upload.client.post(
        URL.format(corpus.pk),
        multipart(files),
        content_type="multipart/form-data; boundary=B",
        HTTP_AUTHORIZATION=f"Bearer {upload.token}",
    )
    # then
    names = [d["filename"] for d in response.json()["documents"]]
    assert response.status_code == 200
    assert names[:3] == ["acme.md", "initech.txt", "dpa.pdf"]
    assert len(names[3]) == 255 and names[3].endswith(".md")
    stored = sorted(Document.objects.values_list("source_name", flat=True))
    assert stored == sorted(names)


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("report.md", "report.md"),
        ("../../etc/passwd.txt", "passwd.txt"),
        ("C:\\Users\\eve\\notes.md", "notes.md"),
        ("a\x00b\x1f.md", "ab.md"),
        ("line\nbreak .md", "linebreak .md"),
        ("  spaced   out .txt ", "spaced out .txt"),
        ("..", ""),
        ("dir/", ""),
        (None, ""),
        ("y" * 300 + ".markdown", "y" * (255 - 9) + ".markdown"),
        ("z" * 300 + "." + "s" * 40, "z" * 255),
    ],
)
def test_upload_filename_clean(raw, clean):
    assert upload_filename_clean(raw) == clean


@pytest.mark.django_db(transaction=True)
def test_an_upload_queues_its_embedding_for_the_worker(user, settings):
    # given an embedding endpoint and no broker: the process's own embedding worker
    with EmbeddingServer() as server:
        settings.EMBEDDING_BACKEND = "openai"
        settings.EMBEDDING_URL = server.url
        settings.EMBEDDING_MODEL = "bag-of-words"
        settings.EMBEDDING_API_KEY = "sk-test"
        corpus = corpus_create(creator=user, name="Embedded")
        upload = Uploader(Client(), token=api_token_create(user=user, name="uploads").secret)
        # when
        status, body, _ = upload(corpus.pk, [("acme.md", ACME_SUPPLY.encode()), ("dpa.pdf", PDF)])
        in_process_worker.join()
        # then
        assert status == 200 and [d["status"] for d in body["documents"]] == ["ingested", "ingested"]
        passages = Passage.objects.filter(corpus=corpus)
        assert passages.count() > 0
        assert set(passages.values_list("embedding_model", flat=True)) == {"openai:bag-of-words"}
        assert passage_search(corpus=corpus, query="data breach notification", mode="dense")


suffixes = st.sampled_from([".md", ".txt", ".pdf", ".docx", ".html", ".exe", "", ".MD", ".tar.gz"])
names = st.builds(lambda stem, suffix: stem + suffix, st.text(max_size=30), suffixes)


@hypothesis_settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    files=st.lists(st.tuples(names, st.binary(max_size=300)), max_size=3),
    raw=st.one_of(st.none(), st.binary(max_size=300)),
    content_type=st.sampled_from(
        ["multipart/form-data; boundary=B", "multipart/form-data", "text/plain", ""]
    ),
)
def test_no_upload_answers_500_or_anything_but_json(upload, corpus, files, raw, content_type):
    # given hostile names (quotes, line breaks, lone surrogates) sent as they are, or junk bodies
    body = raw if raw is not None else multipart(files)
    # when
    response = upload.client.generic(
        "POST", URL.format(corpus.pk), data=body, content_type=content_type,
        HTTP_AUTHORIZATION=f"Bearer {upload.token}",
    )  # fmt: skip
    # then
    assert response.status_code != 500, response.content[:500]
    answer = response.json()
    if response.status_code == 200:
        assert {d["status"] for d in answer["documents"]} <= {"ingested", "duplicate", "failed"}
    else:
        assert [set(e) for e in answer["errors"]] == [{"code", "message"}]

"""`deepcite upload` and corpora named by name, as users run them: the CLI in a subprocess,
multipart over HTTP to a live server, documents ingested there."""

import json

import pytest

from accounts.services import api_token_create
from corpora.models import Document
from corpora.services import corpus_create, corpus_share
from tests.cli.test_cli import deepcite
from tests.documents import pdf_bytes
from tests.factories import ACME_SUPPLY, ingest_samples

pytestmark = pytest.mark.django_db(transaction=True)

PDF = pdf_bytes([["The licensee shall pay the annual licence fee within thirty days of the invoice."]])


@pytest.fixture
def token(user) -> str:
    return api_token_create(user=user, name="cli").secret


@pytest.fixture
def files(tmp_path):
    (tmp_path / "acme supply.md").write_text(ACME_SUPPLY)
    (tmp_path / "licence.pdf").write_bytes(PDF)
    (tmp_path / "notes.exe").write_bytes(b"MZ\x90\x00")
    return tmp_path


def test_upload_by_corpus_name_ingests_each_file_and_says_which_failed(live_server, token, user, files):
    corpus = corpus_create(creator=user, name="Supplier contracts")
    result = deepcite(
        "upload", str(files / "acme supply.md"), str(files / "licence.pdf"), str(files / "notes.exe"),
        "--corpus", "Supplier contracts", "--json", url=live_server.url, token=token,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr  # one file failed
    outcomes = {r["filename"]: r for r in json.loads(result.stdout)}
    assert outcomes["acme supply.md"]["status"] == "ingested" and outcomes["acme supply.md"]["passages"] > 0
    assert outcomes["licence.pdf"]["status"] == "ingested"
    assert outcomes["notes.exe"]["status"] == "failed" and outcomes["notes.exe"]["code"]
    assert sorted(Document.objects.filter(corpus=corpus).values_list("source_name", flat=True)) == [
        "acme supply.md",
        "licence.pdf",
    ]
    # The same files again are duplicates, not new documents; the table names them
    again = deepcite(
        "upload", str(files / "licence.pdf"), "--corpus", str(corpus.pk), url=live_server.url, token=token
    )
    assert again.returncode == 0, again.stderr
    assert "licence.pdf" in again.stdout and "duplicate" in again.stdout
    assert Document.objects.filter(corpus=corpus).count() == 2


def test_a_directory_uploads_its_documents_in_batches_the_server_takes(
    live_server, token, user, tmp_path, settings
):
    # given a folder of 25 notes in two levels, with a hidden file and an image beside them,
    # and a server that takes at most 20 files a request
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 20
    corpus = corpus_create(creator=user, name="Notes")
    (tmp_path / "2024").mkdir()
    for n in range(25):
        folder = tmp_path / "2024" if n % 2 else tmp_path
        (folder / f"note-{n:02}.md").write_text(f"# Note {n}\n\nMeeting {n} agreed on item {n * 7}.\n")
    (tmp_path / ".DS_Store").write_bytes(b"\x00\x01")
    (tmp_path / "chart.png").write_bytes(b"\x89PNG\r\n")
    result = deepcite(
        "upload", str(tmp_path), "--corpus", "Notes", "--json", url=live_server.url, token=token
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "25 files" in result.stderr
    outcomes = json.loads(result.stdout)
    assert len(outcomes) == 25 and {o["status"] for o in outcomes} == {"ingested"}
    assert Document.objects.filter(corpus=corpus).count() == 25
    assert not Document.objects.filter(source_name__in=[".DS_Store", "chart.png"]).exists()


def test_a_directory_with_no_documents_is_a_usage_error(live_server, token, user, tmp_path):
    corpus_create(creator=user, name="Notes")
    (tmp_path / "chart.png").write_bytes(b"\x89PNG\r\n")
    result = deepcite("upload", str(tmp_path), "--corpus", "Notes", url=live_server.url, token=token)
    assert result.returncode == 2 and "[no_files]" in result.stderr
    assert not Document.objects.exists()


def test_research_takes_the_corpus_by_name(live_server, token, user):
    corpus = corpus_create(creator=user, name="Samples")
    ingest_samples(corpus)
    result = deepcite(
        "research", "What limits the liability of the supplier?", "--corpus", "Samples", "--json",
        url=live_server.url, token=token,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["status"] == "COMPLETED"


def test_an_unknown_name_is_not_found_and_an_ambiguous_one_a_usage_error(
    live_server, token, user, other_user, files
):
    # not found exits 1 as it does for an id; the same name for two corpora needs the id instead
    result = deepcite(
        "upload", str(files / "licence.pdf"), "--corpus", "Nope", url=live_server.url, token=token
    )
    assert result.returncode == 1 and "[corpus_not_found]" in result.stderr
    # one's own "Shared" and another user's "Shared", shared with one: the name does not say which
    corpus_create(creator=user, name="Shared")
    corpus_share(user=other_user, corpus=corpus_create(creator=other_user, name="Shared"), username="alice")
    result = deepcite(
        "upload", str(files / "licence.pdf"), "--corpus", "Shared", url=live_server.url, token=token
    )
    assert result.returncode == 2 and "[corpus_ambiguous] 2 corpora are named 'Shared'" in result.stderr
    assert not Document.objects.exists()


def test_uploading_into_someone_elses_corpus_is_refused(live_server, token, other_user, files):
    theirs = corpus_create(creator=other_user, name="Bob's")
    result = deepcite(
        "upload", str(files / "licence.pdf"), "--corpus", str(theirs.pk), url=live_server.url, token=token
    )
    assert result.returncode == 1 and "[corpus_not_found]" in result.stderr
    assert not Document.objects.exists()


def test_a_missing_file_is_a_usage_error_before_anything_is_sent(live_server, token, user, files):
    corpus_create(creator=user, name="Samples")
    result = deepcite(
        "upload", str(files / "absent.md"), "--corpus", "Samples", url=live_server.url, token=token
    )
    assert result.returncode == 2 and "[file_unreadable]" in result.stderr

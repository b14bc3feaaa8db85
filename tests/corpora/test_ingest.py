import hashlib

import pytest
from guardian.shortcuts import assign_perm
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corpora.exceptions import (
    CorpusNameInvalid,
    CorpusNameTaken,
    CorruptFile,
    FileTooLarge,
    IngestError,
    UnsupportedFileType,
)
from corpora.models import Corpus, Document, Passage
from corpora.selectors import corpus_get_for_user, corpus_list, corpus_stats
from corpora.services import corpus_create, document_ingest
from tests.documents import docx_bytes, pdf_bytes
from tests.factories import ACME_SUPPLY, ingest_text, refuse_second_passage_inserts


def test_creator_gets_every_permission_and_others_none(user, other_user):
    corpus = corpus_create(creator=user, name="  Mine   now ")

    assert corpus.name == "Mine now"
    assert user.has_perm("corpora.view_corpus", corpus)
    assert user.has_perm("corpora.change_corpus", corpus)
    assert user.has_perm("corpora.delete_corpus", corpus)
    assert not other_user.has_perm("corpora.view_corpus", corpus)
    assert list(corpus_list(user=other_user)) == []


def test_a_grant_lets_another_user_read(user, other_user, corpus):
    assign_perm("view_corpus", other_user, corpus)

    assert corpus_get_for_user(user=other_user, corpus_id=corpus.pk) == corpus


def test_hidden_and_missing_corpora_give_the_same_error(user, other_user, corpus):
    with pytest.raises(Exception) as hidden:
        corpus_get_for_user(user=other_user, corpus_id=corpus.pk)
    with pytest.raises(Exception) as missing:
        corpus_get_for_user(user=other_user, corpus_id=corpus.pk + 1000)

    assert hidden.value.code == missing.value.code == "corpus_not_found"


def test_corpus_names_are_unique_per_creator_only(user, other_user, corpus):
    with pytest.raises(CorpusNameTaken):
        corpus_create(creator=user, name="Contracts")

    assert corpus_create(creator=other_user, name="Contracts").name == "Contracts"


@pytest.mark.parametrize("name", ["", "   ", "x" * 201])
def test_corpus_name_must_be_one_to_two_hundred_characters(user, name):
    with pytest.raises(CorpusNameInvalid):
        corpus_create(creator=user, name=name)

    assert Corpus.objects.count() == 0


def test_ingest_stores_document_and_exact_passages(corpus):
    result = ingest_text(corpus, "acme-supply.md", ACME_SUPPLY)

    document = result.document
    assert result.created
    assert document.title == "acme-supply"
    assert document.source_name == "acme-supply.md"
    assert document.file_type == "md"
    assert document.content_hash == hashlib.sha256(ACME_SUPPLY.encode()).hexdigest()
    passages = list(document.passages.order_by("ordinal"))
    assert len(passages) == result.passages > 0
    assert [p.ordinal for p in passages] == list(range(len(passages)))
    for passage in passages:
        assert document.text[passage.start : passage.end] == passage.text
    assert any(p.heading_path[-1:] == ["Governing Law"] for p in passages)


def test_reingesting_the_same_content_is_a_noop_that_says_so(corpus):
    first = ingest_text(corpus, "acme-supply.md", ACME_SUPPLY)

    second = ingest_text(corpus, "renamed-copy.md", ACME_SUPPLY)

    assert not second.created
    assert second.document == first.document
    assert "already ingested" in second.message
    assert Document.objects.count() == 1
    assert Passage.objects.count() == first.passages


def test_same_content_in_another_corpus_is_a_new_document(user, corpus):
    other = corpus_create(creator=user, name="Other")
    ingest_text(corpus, "a.md", ACME_SUPPLY)

    assert ingest_text(other, "a.md", ACME_SUPPLY).created


def test_ingest_from_a_path(corpus, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("Payment is due in thirty days.", encoding="utf-8")

    result = document_ingest(corpus=corpus, path=path)

    assert result.document.source_name == "notes.txt"
    assert result.document.text == "Payment is due in thirty days."


def test_pdf_passages_keep_their_page(corpus):
    content = pdf_bytes([["Fees are payable monthly in arrears."], ["Either party may terminate."]])

    result = document_ingest(corpus=corpus, content=content, filename="terms.pdf")

    assert result.document.page_count == 2
    pages = {p.text: p.page for p in result.document.passages.all()}
    assert pages == {"Fees are payable monthly in arrears.": 1, "Either party may terminate.": 2}


def test_docx_is_ingested_with_heading_path(corpus):
    content = docx_bytes([("Heading 1", "Confidentiality"), ("Normal", "Keep it secret.")])

    result = document_ingest(corpus=corpus, content=content, filename="nda.docx")

    [passage] = result.document.passages.all()
    assert passage.text == "Confidentiality\n\nKeep it secret."
    assert passage.heading_path == ["Confidentiality"]


@pytest.mark.parametrize(
    ("filename", "content", "error"),
    [
        ("photo.png", b"\x89PNG....", UnsupportedFileType),
        ("fake.pdf", b"%PDF-1.4 garbage", CorruptFile),
        ("fake.docx", b"not a zip", CorruptFile),
        ("binary.txt", b"\x00\x01\x02" * 100, CorruptFile),
    ],
)
def test_bad_files_raise_a_coded_error_and_leave_nothing(corpus, filename, content, error):
    with pytest.raises(error) as raised:
        document_ingest(corpus=corpus, content=content, filename=filename)

    assert raised.value.code
    assert Document.objects.count() == 0
    assert Passage.objects.count() == 0


def test_oversized_files_are_refused_before_extraction(corpus, settings):
    settings.INGEST_MAX_FILE_BYTES = 10

    with pytest.raises(FileTooLarge):
        document_ingest(corpus=corpus, content=b"x" * 11, filename="big.txt")


def test_path_and_content_together_are_refused(corpus, tmp_path):
    with pytest.raises(IngestError) as error:
        document_ingest(corpus=corpus, path=tmp_path / "a.txt", content=b"x", filename="a.txt")

    assert error.value.code == "invalid_arguments"


def test_a_failure_mid_write_leaves_no_half_document(corpus):
    refuse_second_passage_inserts("refused")

    with pytest.raises(Exception, match="refused"):
        ingest_text(corpus, "acme.md", ACME_SUPPLY)

    assert Document.objects.count() == 0
    assert Passage.objects.count() == 0
    corpus.refresh_from_db()
    assert corpus.index_version == 0


def test_corpus_stats_count_documents_and_embedded_passages(corpus):
    result = ingest_text(corpus, "acme.md", ACME_SUPPLY)

    stats = corpus_stats(corpus=corpus)

    assert stats["documents"] == 1
    assert stats["passages"] == result.passages
    assert stats["embedded_passages"] == 0
    assert stats["embedding_model"] is None


PROSE = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=2000
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=PROSE, suffix=st.sampled_from(["txt", "md"]), crlf=st.booleans())
def test_stored_passages_are_exact_slices_of_the_stored_text(corpus, text, suffix, crlf):
    if crlf:
        text = text.replace("\n", "\r\n")
    try:
        result = document_ingest(corpus=corpus, content=text.encode("utf-8"), filename=f"doc.{suffix}")
    except IngestError as error:
        assert error.code in {"empty_document", "corrupt_file"}
        return

    document = Document.objects.get(pk=result.document.pk)
    for passage in document.passages.all():
        assert document.text[passage.start : passage.end] == passage.text
    document.delete()


@pytest.mark.parametrize("name", ["missing.txt", "a-folder.txt"])
def test_unreadable_paths_are_an_ingest_error(corpus, tmp_path, name):
    (tmp_path / "a-folder.txt").mkdir()

    with pytest.raises(IngestError) as error:
        document_ingest(corpus=corpus, path=tmp_path / name)

    assert error.value.code == "unreadable_file"
    assert Document.objects.count() == 0


@pytest.mark.django_db
def test_the_ingest_message_counts_one_passage_in_the_singular(corpus):
    one = document_ingest(corpus=corpus, content=b"A short note.\n", filename="note.txt")
    assert (one.passages, one.message) == (1, "ingested 'note.txt': 1 passage")

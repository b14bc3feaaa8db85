"""Retrieval scoped to each of many documents at once ranks each document's passages as a hybrid
search scoped to that one document does, and keeps the raw scores behind the ranks."""

import pytest

from corpora.models import Passage
from corpora.retrieval.term_index import term_indexes
from corpora.selectors import passage_search, passage_search_by_document
from corpora.services import passage_embed_pending
from tests.factories import ingest_text

CLAUSES = [
    "The Supplier shall maintain general liability insurance of five million dollars.",
    "Either party may terminate this agreement for convenience on sixty days notice.",
    "The Supplier's liability is capped at the fees paid in the preceding year.",
    "Insurance certificates are delivered to the Buyer every year on request.",
    "Payment is due within thirty days of the invoice date.",
]


def _documents(corpus) -> list[int]:
    """Six documents of four sections each, in two passages or more each."""
    ids = []
    for i in range(6):
        sections = [CLAUSES[(i + k) % len(CLAUSES)] for k in range(3)]
        sections.append(f"Document {i} is governed by the laws of state {i}.")
        paragraphs = [
            f"## Section {k + 1}\n\n"
            + " ".join([text] + [f"Clause {k}.{n} of document {i} restates it." for n in range(8)])
            for k, text in enumerate(sections)
        ]
        ids.append(ingest_text(corpus, f"contract-{i}.txt", "\n\n".join(paragraphs) + "\n").document.pk)
    return ids


@pytest.mark.parametrize("term_index_bound", [0, 5], ids=["term-index", "full-text-index"])
def test_each_documents_hits_are_its_scoped_hybrid_search(
    corpus, embedding_server, settings, term_index_bound
):
    # given six documents with embedded passages, ranked lexically by the in-memory term index
    # or, for a corpus over SEARCH_TERM_INDEX_MAX_PASSAGES, by the database's full-text index
    settings.SEARCH_TERM_INDEX_MAX_PASSAGES = term_index_bound
    documents = _documents(corpus)
    assert passage_embed_pending(corpus=corpus) > 0
    query = "Which contracts require insurance?"
    # when every document is searched at once
    evidence, best = passage_search_by_document(
        corpus=corpus, query=query, document_ids=documents, per_document=2
    )
    # then each document's hits are what a hybrid search scoped to it returns, in order
    assert [e.document_id for e in evidence] == documents
    for document in evidence:
        scoped = passage_search(corpus=corpus, query=query, top_k=2, document_ids=[document.document_id])
        assert [p.pk for p, _ in document.hits] == [h.passage.pk for h in scoped]
        assert all(p.document_id == document.document_id for p, _ in document.hits)
    # and the best scores are those of the whole corpus
    every = [hit for document in evidence for _, hit in document.hits]
    assert best.lexical == pytest.approx(max(hit.lexical for hit in every)) and best.lexical > 0
    assert best.dense == max(hit.dense for hit in every) > 0
    assert (term_indexes._items.get(corpus.pk) is None) == bool(term_index_bound)


def test_without_embeddings_each_document_is_ranked_by_bm25_alone(corpus):
    documents = _documents(corpus)
    evidence, best = passage_search_by_document(
        corpus=corpus, query="insurance certificates", document_ids=documents, per_document=3
    )
    assert best.dense is None
    for document in evidence:
        scores = [hit.lexical for _, hit in document.hits]
        assert scores == sorted(scores, reverse=True) and scores[0] > 0
        assert all(hit.dense is None for _, hit in document.hits)
        assert "nsurance" in document.hits[0][0].text


def test_documents_with_nothing_matching_are_left_out_and_the_scope_sets_the_best(corpus):
    documents = _documents(corpus)
    unrelated = ingest_text(corpus, "zebras.txt", "Zebras migrate across the savanna in herds.\n").document.pk
    evidence, best = passage_search_by_document(
        corpus=corpus, query="insurance", document_ids=[*documents, unrelated], per_document=1
    )
    assert unrelated not in [e.document_id for e in evidence]
    # a scope without the insurance clauses has a lower best than the corpus
    _, scoped = passage_search_by_document(
        corpus=corpus, query="insurance", document_ids=documents, per_document=1, scope=[unrelated]
    )
    assert scoped.lexical == 0.0 < best.lexical


def test_the_documents_have_several_passages_each(corpus):
    # the premise of the tests above: a document's passages are ranked among themselves
    documents = _documents(corpus)
    for document in documents:
        assert Passage.objects.filter(document_id=document, is_heading=False).count() >= 2


def test_ignored_words_are_left_out_of_the_bm25_ranking(corpus):
    # given one document that says "contracts" often and another that holds the clause asked about
    loud = ingest_text(
        corpus, "loud.txt", "Contracts, contracts and more contracts are listed here.\n"
    ).document.pk
    quiet = ingest_text(corpus, "quiet.txt", "The supplier shall maintain liability insurance.\n").document.pk
    query = "Which contracts require insurance?"
    # when the words naming the documents are ignored
    plain, _ = passage_search_by_document(corpus=corpus, query=query, document_ids=[loud, quiet])
    ignored, _ = passage_search_by_document(
        corpus=corpus, query=query, document_ids=[loud, quiet], ignore_words=["contracts"]
    )
    # then only the document holding the clause is found by the question's other words
    assert {e.document_id for e in plain} == {loud, quiet}
    assert [e.document_id for e in ignored] == [quiet]

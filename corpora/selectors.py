"""Reads of corpora, documents and passages; every entry point applies visibility or takes
a corpus the caller already resolved through corpus_get_for_user."""

import functools
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Count, Q, QuerySet, Value
from guardian.shortcuts import get_objects_for_user, get_users_with_perms

from corpora.constants import (
    FUSION_CANDIDATES_MIN,
    NEIGHBOURS_MAX_WINDOW,
    SEARCH_MAX_QUERY_CHARS,
    SEARCH_MAX_TOP_K,
    SEARCH_MODE_DENSE,
    SEARCH_MODE_HYBRID,
    SEARCH_MODE_LEXICAL,
    SEARCH_MODES,
)
from corpora.embedding import embed_query_async, get_embedder_or_none
from corpora.exceptions import (
    CorpusAmbiguous,
    CorpusNotFound,
    CorpusPermissionDenied,
    DenseSearchUnavailable,
    DocumentNotFound,
    EmbeddingUnavailable,
    InvalidSearchMode,
    InvalidTopK,
    PassageNotFound,
    QueryTooLong,
)
from corpora.models import Corpus, Document, Passage
from corpora.retrieval.by_document import DocumentHit, ScopeBest, rank_by_document
from corpora.retrieval.fusion import weighted_rrf
from corpora.retrieval.lexical import (
    document_frequencies,
    lexical_by_document,
    lexical_ranking,
    phrase_candidates,
)
from corpora.retrieval.query import ParsedQuery, parse_query, words
from corpora.retrieval.spelling import Correction, corrections
from corpora.retrieval.term_index import HIT_DOCUMENT_FIELDS, HIT_PASSAGE_FIELDS, TermIndex, term_indexes
from corpora.retrieval.vector_store import vector_store
from corpora.retrieval.versions import index_versions

logger = logging.getLogger(__name__)

TERM_FREQUENCY_WORDS_MAX = 200

VIEW_CORPUS = "corpora.view_corpus"

User = AbstractBaseUser | AnonymousUser


# --- Users ----------------------------------------------------------------------------------
def cli_user_get(*, username: str) -> AbstractBaseUser:
    """The account a read-only command acts as; unknown names get the not-found error that a
    hidden corpus gets, so a command never tells which accounts exist."""
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise CorpusNotFound(f"no corpus visible to {username!r}")
    return user


def user_get_active(*, username: str) -> AbstractBaseUser | None:
    """The active account with exactly this username (a corpus is shared with it by name)."""
    if not username:
        return None
    return get_user_model().objects.filter(username=username, is_active=True).first()


# --- Corpora --------------------------------------------------------------------------------
def corpus_list(*, user: User) -> QuerySet[Corpus]:
    if not user.is_authenticated:
        return Corpus.objects.none()
    return get_objects_for_user(user, VIEW_CORPUS, klass=Corpus, accept_global_perms=False)


def corpus_get_for_user(*, user: User, corpus_id: int | None = None, name: str | None = None) -> Corpus:
    """One corpus the user may read, by id or by name; the same error for missing and hidden."""
    queryset = corpus_list(user=user)
    if corpus_id is not None:
        corpus = queryset.filter(pk=corpus_id).first()
        if corpus is None:
            raise CorpusNotFound(f"corpus {corpus_id} not found")
        return corpus
    matches = list(queryset.filter(name=name)[:2]) if name else []
    if not matches:
        raise CorpusNotFound(f"corpus {name!r} not found")
    if len(matches) > 1:
        owned = [c for c in matches if c.creator_id == user.pk]
        if len(owned) == 1:
            return owned[0]
        raise CorpusAmbiguous(f"more than one corpus named {name!r}; use its id")
    return matches[0]


def corpus_get_for_creator(*, user: User, corpus_id: int) -> Corpus:
    """A corpus the user may manage: corpus_not_found when they cannot see it (missing or
    hidden alike), permission_denied when it is only shared with them."""
    try:
        corpus = corpus_get_for_user(user=user, corpus_id=corpus_id)
    except CorpusNotFound as exc:
        raise CorpusNotFound("corpus not found", field="id") from exc
    if corpus.creator_id != user.pk:
        raise CorpusPermissionDenied("only the corpus's creator can do that", field="id")
    return corpus


def corpus_shared_with(*, corpus: Corpus) -> list[str]:
    """The usernames the corpus is shared with (view_corpus granted to them), its creator aside."""
    users = get_users_with_perms(
        corpus, with_group_users=False, with_superusers=False, only_with_perms_in=["view_corpus"]
    )
    return sorted(u.get_username() for u in users if u.pk != corpus.creator_id)


def document_get_for_user(*, user: User, document_id: int) -> Document:
    """A document of a corpus the user may read; the same error for missing and hidden."""
    document = (
        Document.objects.filter(pk=document_id, corpus__in=corpus_list(user=user)).defer("text").first()
    )
    if document is None:
        raise DocumentNotFound("document not found", field="id")
    return document


def document_list_with_counts(*, corpus: Corpus) -> QuerySet[Document]:
    """A corpus's documents by title, each with `passage_count` and `embedded_count` (passages
    embedded by the configured model, as corpus_stats counts them)."""
    embedder = get_embedder_or_none()
    embedded = Count("passages", filter=Q(passages__embedding_model=embedder.name)) if embedder else Value(0)
    return document_list(corpus=corpus).annotate(passage_count=Count("passages"), embedded_count=embedded)


def embedded_passage_count(*, corpus: Corpus) -> int:
    """The corpus's passages embedded by the configured model (0 without one)."""
    embedder = get_embedder_or_none()
    return Passage.objects.filter(corpus=corpus, embedding_model=embedder.name).count() if embedder else 0


def corpus_stats(*, corpus: Corpus) -> dict[str, Any]:
    """Counts a user sees for a corpus, including how far background embedding has got."""
    embedder = get_embedder_or_none()
    embedded = embedded_passage_count(corpus=corpus)
    total = Passage.objects.filter(corpus=corpus).count()
    return {
        "corpus_id": corpus.pk,
        "name": corpus.name,
        "documents": Document.objects.filter(corpus=corpus).count(),
        "passages": total,
        "embedded_passages": embedded,
        "embedding_model": embedder.name if embedder else None,
        "embedding_complete": bool(embedder) and embedded == total,
    }


def document_get_by_hash(*, corpus: Corpus, content_hash: str) -> Document | None:
    return Document.objects.filter(corpus=corpus, content_hash=content_hash).first()


# --- Passage search -------------------------------------------------------------------------
@dataclass(frozen=True)
class PassageHit:
    passage: Passage
    score: float

    def as_dict(self) -> dict[str, Any]:
        p = self.passage
        return {
            "passage_id": p.pk,
            "document_id": p.document_id,
            "document_title": p.document.title,
            "source_name": p.document.source_name,
            "page": p.page,
            "start": p.start,
            "end": p.end,
            "text": p.text,
            "score": round(self.score, 6),
        }


def _validate(query: str, top_k: int, mode: str) -> None:
    if mode not in SEARCH_MODES:
        raise InvalidSearchMode(
            f"unknown search mode {mode!r}; use one of {', '.join(SEARCH_MODES)}", field="mode"
        )
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= SEARCH_MAX_TOP_K:
        raise InvalidTopK(f"top_k must be between 1 and {SEARCH_MAX_TOP_K}", field="top_k")
    if len(query) > SEARCH_MAX_QUERY_CHARS:
        raise QueryTooLong(
            f"query is {len(query)} characters; the limit is {SEARCH_MAX_QUERY_CHARS}", field="query"
        )


def passage_search(
    *,
    corpus: Corpus,
    query: str,
    top_k: int = 10,
    document_ids: Sequence[int] | None = None,
    mode: str = SEARCH_MODE_HYBRID,
) -> list[PassageHit]:
    _validate(query, top_k, mode)
    parsed = parse_query(query)
    if parsed.is_empty:
        return []
    ranked, held = _rank(corpus=corpus, parsed=parsed, top_k=top_k, document_ids=document_ids, mode=mode)
    return _hydrate(ranked[:top_k], held=held)


Ranked = list[tuple[int, float]]


def _rank(
    *, corpus: Corpus, parsed: ParsedQuery, top_k: int, document_ids, mode: str
) -> tuple[Ranked, TermIndex | None]:
    """The ranking, best first, and the term index whose passages the hits are built from
    (None: they are read from the database)."""
    embedder = None if mode == SEARCH_MODE_LEXICAL else get_embedder_or_none()
    if mode == SEARCH_MODE_DENSE and embedder is None:
        raise DenseSearchUnavailable("dense search is off (EMBEDDING_BACKEND=none)", field="mode")
    # Read once per search: the lexical statistics and the in-memory indexes are cached by it.
    version = _index_version(corpus.pk)

    def lexical_alone() -> tuple[Ranked, TermIndex | None]:
        ranked = lexical_ranking(
            corpus_id=corpus.pk, version=version, query=parsed, limit=top_k, document_ids=document_ids
        )
        return ranked, None

    if embedder is None:
        return lexical_alone()
    index = vector_store().dense(corpus_id=corpus.pk, model=embedder.name, version=version)
    if index.is_empty:  # nothing embedded yet: hybrid is the lexical search
        return ([], None) if mode == SEARCH_MODE_DENSE else lexical_alone()
    terms = _term_index(corpus.pk, version)
    # The query embedding is the slow part on CPU. The dense scores (in memory) are computed
    # where the vector was (the model's inference thread, all cores), and this thread ranks
    # lexically meanwhile.
    pending = embed_query_async(embedder, parsed.text, then=index.prepare)
    # Each ranker looks deeper than the answer so that passages both rank fairly well surface.
    depth = max(FUSION_CANDIDATES_MIN, 2 * top_k)
    if mode == SEARCH_MODE_HYBRID:
        lexical = (
            # Quoted phrases need the full-text index's word positions, and a corpus too
            # large for a term index has only the full-text index.
            lexical_ranking(
                corpus_id=corpus.pk, version=version, query=parsed, limit=depth, document_ids=document_ids
            )
            if parsed.phrases or terms is None
            # The term index answers in a fraction of a millisecond, the full-text query in
            # several (tens on PostgreSQL).
            else terms.rank(parsed.terms, limit=depth, document_ids=document_ids)
        )
    try:
        prepared = pending.result()
    except EmbeddingUnavailable:
        if mode == SEARCH_MODE_DENSE:
            raise
        # Hybrid degrades to lexical rather than failing the search.
        logger.warning("query embedding failed; hybrid search falls back to lexical", exc_info=True)
        return lexical_alone()
    if mode == SEARCH_MODE_DENSE:
        return index.top(prepared, limit=top_k, document_ids=document_ids), terms
    dense = index.top(prepared, limit=depth, document_ids=document_ids)
    if not dense:
        return lexical_alone()
    dense_weight = (
        settings.SEARCH_FUSION_DENSE_WEIGHT_QUESTION
        if parsed.is_question
        else settings.SEARCH_FUSION_DENSE_WEIGHT_KEYWORDS
    )
    fused = weighted_rrf(
        lexical,
        dense,
        lexical_weight=settings.SEARCH_FUSION_LEXICAL_WEIGHT,
        dense_weight=dense_weight,
        limit=top_k,
    )
    return [(hit.passage_id, hit.score) for hit in fused], terms


def _term_index(corpus_id: int, version: int) -> TermIndex | None:
    """The corpus's in-memory term index, or None for a corpus of more passages than
    SEARCH_TERM_INDEX_MAX_PASSAGES: its lexical rankings come from the database."""
    return term_indexes.get_or_none(
        corpus_id=corpus_id, version=version, max_passages=settings.SEARCH_TERM_INDEX_MAX_PASSAGES
    )


def term_frequencies(*, corpus: Corpus, words: Sequence[str]) -> tuple[dict[str, int], int]:
    """({word: passages of the corpus that use it}, passages in the corpus), from the term
    index (the full-text index for a corpus too large for one)."""
    version = _index_version(corpus.pk)
    words = list(words[:TERM_FREQUENCY_WORDS_MAX])
    terms = _term_index(corpus.pk, version)
    if terms is None:
        return document_frequencies(corpus_id=corpus.pk, version=version, words=words)
    return terms.frequencies(words), len(terms.passage_ids)


def spelling_corrections(*, corpus: Corpus, text: str, request_words: Sequence[str]) -> list[Correction]:
    """`text`'s misspelt words corrected to the corpus's words (corpora.retrieval.spelling);
    none for a corpus too large for a term index (SEARCH_TERM_INDEX_MAX_PASSAGES), whose
    words no process holds."""
    terms = _term_index(corpus.pk, _index_version(corpus.pk))
    if terms is None:
        return []
    return corrections(text, vocabulary=terms.vocabulary, request_words=request_words)


# A place and the word for its people or its law ("Swiss law" is the law of Switzerland), where
# neither begins with the other's first NAME_STEM_LETTERS letters ("German" and "Germany" do).
DEMONYMS = {
    "swiss": ["switzerland"],
    "french": ["france"],
    "dutch": ["netherlands", "holland"],
    "spanish": ["spain"],
    "irish": ["ireland"],
    "welsh": ["wales"],
    "danish": ["denmark"],
    "finnish": ["finland"],
    "greek": ["greece"],
    "turkish": ["turkey"],
    "polish": ["poland"],
    "british": ["britain", "england", "scotland", "wales"],
    "belgian": ["belgium"],
    "portuguese": ["portugal"],
    "texan": ["texas"],
    "peruvian": ["peru"],
}
NAME_STEM_LETTERS = 5


def documents_naming(
    *, corpus: Corpus, names: Sequence[str], document_ids: Sequence[int] | None = None
) -> dict[str, set[int]] | None:
    """{name: the documents (of `document_ids`, else the corpus) that name it}: a word of
    theirs is the name, begins with its first NAME_STEM_LETTERS letters ("Japanese" names
    "Japan", "Germany" "German"), or is its place (DEMONYMS: "Switzerland" names "Swiss"). None
    for a corpus too large for a term index (SEARCH_TERM_INDEX_MAX_PASSAGES)."""
    terms = _term_index(corpus.pk, _index_version(corpus.pk))
    if terms is None:
        return None
    scope = None if document_ids is None else set(document_ids)
    found = {}
    for name in names:
        lower = name.lower()
        stem = lower[:NAME_STEM_LETTERS] if len(lower) >= NAME_STEM_LETTERS else None

        def names_it(word: str, lower: str = lower, stem: str | None = stem) -> bool:
            if stem is not None and word.startswith(stem):
                return True
            return len(word) >= NAME_STEM_LETTERS and lower.startswith(word)

        forms = {lower, *DEMONYMS.get(lower, []), *filter(names_it, terms.vocabulary)}
        held = terms.documents_holding(forms)
        found[name] = held if scope is None else held & scope
    return found


@dataclass(frozen=True)
class DocumentEvidence:
    """One document's best passages for a query (corpora.retrieval.by_document)."""

    document_id: int
    hits: list[tuple[Passage, DocumentHit]]


# A name held by at most this many documents names them (a request or a chat question naming
# "the Cheetah Mobile agreement" is asked of it); a name's passages are read this deep.
NAMED_DOCUMENTS_MAX = 2
NAMED_SEARCH_DEPTH = 200


def documents_named(
    *, corpus: Corpus, names: Sequence[str], document_ids: Sequence[int] | None = None
) -> list[int]:
    """The documents `names` name: those holding a name that at most NAMED_DOCUMENTS_MAX
    documents (of `document_ids`, else the corpus) hold ("Cheetah", not "Mobile" nor
    "Agreement"), when they are that few in all; else none."""
    named: set[int] = set()
    for name in dict.fromkeys(names):
        hits = passage_search(
            corpus=corpus, query=name, top_k=NAMED_SEARCH_DEPTH, document_ids=document_ids, mode="lexical"
        )
        holding = {hit.passage.document_id for hit in hits}
        if 0 < len(holding) <= NAMED_DOCUMENTS_MAX:
            named |= holding
    return sorted(named) if len(named) <= NAMED_DOCUMENTS_MAX else []


def passage_search_by_document(
    *,
    corpus: Corpus,
    query: str,
    document_ids: Sequence[int],
    per_document: int = 3,
    scope: Sequence[int] | None = None,
    ignore_words: Sequence[str] = (),
) -> tuple[list[DocumentEvidence], ScopeBest]:
    """Each document's own best passages for `query`, as a hybrid search scoped to that document
    ranks them (lexical alone without embeddings), with their raw scores and the best scores
    over `scope` (None: the corpus). Documents with nothing matching are left out.
    `ignore_words` are left out of the lexical ranking (words that name the documents
    themselves, "which contracts ...", say nothing of what a document holds)."""
    _validate(query, max(1, per_document), SEARCH_MODE_HYBRID)
    parsed = parse_query(query)
    if parsed.is_empty or not document_ids:
        return [], ScopeBest(lexical=0.0, dense=None)
    version = _index_version(corpus.pk)
    terms = _term_index(corpus.pk, version)
    embedder = get_embedder_or_none()
    dense = None
    if embedder is not None:
        index = vector_store().dense(corpus_id=corpus.pk, model=embedder.name, version=version)
        if not index.is_empty:
            try:
                prepared = embed_query_async(embedder, parsed.text, then=index.prepare).result()
            except EmbeddingUnavailable:
                logger.warning("query embedding failed; the document search is lexical", exc_info=True)
            else:
                dense = index.by_document(prepared, document_ids=document_ids, scope=scope)
    ignored = {w.lower() for w in ignore_words}
    query_terms = [t for t in parsed.terms if t not in ignored] or list(parsed.terms)
    lexical = (
        lexical_by_document(
            corpus_id=corpus.pk,
            version=version,
            query=replace(parsed, terms=tuple(query_terms), phrases=()),
            document_ids=document_ids,
            scope=scope,
        )
        if terms is None
        else terms.by_document(query_terms, document_ids=document_ids, scope=scope)
    )
    ranked, best = rank_by_document(
        lexical=lexical,
        dense=dense,
        document_ids=document_ids,
        per_document=per_document,
        lexical_weight=settings.SEARCH_FUSION_LEXICAL_WEIGHT,
        dense_weight=(
            settings.SEARCH_FUSION_DENSE_WEIGHT_QUESTION
            if parsed.is_question
            else settings.SEARCH_FUSION_DENSE_WEIGHT_KEYWORDS
        ),
    )
    wanted = [h.passage_id for hits in ranked.values() for h in hits]
    passages = terms.passages(wanted) if terms is not None else {}
    missing = [h.passage_id for hits in ranked.values() for h in hits if h.passage_id not in passages]
    if missing:
        passages.update(_passages_by_id(missing))
    evidence = [
        DocumentEvidence(document, [(passages[h.passage_id], h) for h in hits if h.passage_id in passages])
        for document, hits in ranked.items()
    ]
    return evidence, best


@functools.cache
def _index_version_sql(vendor: str) -> str:
    """The statement's text; names come from the model, quoted and with the driver's own
    placeholder for `vendor` (it goes to the driver, not through Django's cursor)."""
    quote = connections[DEFAULT_DB_ALIAS].ops.quote_name
    column = Corpus._meta.get_field("index_version").column
    placeholder = "?" if vendor == "sqlite" else "%s"
    return f"SELECT {quote(column)} FROM {quote(Corpus._meta.db_table)} WHERE {quote('id')} = {placeholder}"  # noqa: S608


def _index_version(corpus_id: int) -> int:
    """The corpus's index_version: on PostgreSQL as this process last read it, until a change
    is notified (corpora.retrieval.versions); otherwise read now."""
    return index_versions.get(corpus_id, functools.partial(_read_index_version, corpus_id))


def _read_index_version(corpus_id: int) -> int:
    """Every search reads the version just before its query embedding, where Django's cursor
    wrapper (placeholder rewriting, wrappers, a cursor per statement) took 0.31 ms on SQLite;
    the driver's connection answers in 0.11. Errors still become Django's; the statement does
    not appear in Django's query log."""
    db = connections[DEFAULT_DB_ALIAS]
    db.ensure_connection()
    with db.wrap_database_errors:
        row = db.connection.execute(_index_version_sql(db.vendor), (corpus_id,)).fetchone()
    return row[0] if row else 0


def _hydrate(ranked: Ranked, *, held: TermIndex | None = None) -> list[PassageHit]:
    """Hits for the ranking: passages the term index holds from memory, the rest (all of
    them without one) read now."""
    ids = [pid for pid, _ in ranked]
    passages = held.passages(ids) if held is not None else {}
    if len(passages) < len(ids):
        passages.update(_passages_by_id([pid for pid in ids if pid not in passages]))
    return [PassageHit(passages[pid], score) for pid, score in ranked if pid in passages]


@functools.cache
def _hit_columns() -> tuple[list[str], list[Any]]:
    # The fields a hit from memory has (corpora.retrieval.term_index), so that hits look the
    # same wherever they come from.
    passage_fields = [Passage._meta.get_field(name) for name in HIT_PASSAGE_FIELDS]
    document_fields = [Document._meta.get_field(name) for name in HIT_DOCUMENT_FIELDS]
    return (
        [f.attname for f in passage_fields],
        [f.get_col("p") for f in passage_fields] + [f.get_col("d") for f in document_fields],
    )


@functools.cache
def _hit_sql(vendor: str) -> str:
    """The statement up to its id list; names come from the models, quoted for `vendor`."""
    quote = connections[DEFAULT_DB_ALIAS].ops.quote_name
    select = ", ".join(f"{quote(col.alias)}.{quote(col.target.column)}" for col in _hit_columns()[1])
    return (
        f"SELECT {select} FROM {quote(Passage._meta.db_table)} p "  # noqa: S608
        f"JOIN {quote(Document._meta.db_table)} d ON d.{quote('id')} = p.{quote('document_id')} "
        f"WHERE p.{quote('id')} IN"
    )


def _passages_by_id(ids: list[int]) -> dict[int, Passage]:
    """Passages with their documents, in one statement (lexical hits, and any hit a term
    index does not hold). The equivalent `select_related().defer().in_bulk()` spent ~1.2 ms
    of Python compiling its SQL and ordering by the model's Meta.ordering, and RawQuerySet
    ~0.8 ms; this takes a third of that. Values pass through the fields' database converters
    (JSON, booleans on SQLite) as the ORM's do; the ids are bound parameters."""
    if not ids:
        return {}
    db = connections[DEFAULT_DB_ALIAS]
    passage_names, columns = _hit_columns()
    with db.cursor() as cursor:
        cursor.execute(f"{_hit_sql(db.vendor)} ({', '.join(['%s'] * len(ids))})", ids)
        rows = cursor.fetchall()
    compiler = Passage.objects.none().query.get_compiler(connection=db)
    converters = compiler.get_converters(columns)
    if converters:
        rows = compiler.apply_converters(rows, converters)
    split, alias, document_names = len(passage_names), db.alias, list(HIT_DOCUMENT_FIELDS)
    passages: dict[int, Passage] = {}
    for row in rows:
        passage = Passage.from_db(alias, passage_names, row[:split])
        passage.document = Document.from_db(alias, document_names, row[split:])
        passages[passage.pk] = passage
    return passages


# --- Exact phrase and neighbourhood ---------------------------------------------------------
_QUOTES = str.maketrans(
    {"\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2018": "'", "\u2019": "'", "\u00a0": " "}
)
_SPACES = re.compile(r"\s+")


def normalize_for_match(text: str) -> str:
    """Case, whitespace and typographic quotes do not make two quotations differ."""
    return _SPACES.sub(" ", text.translate(_QUOTES)).strip().casefold()


def passage_exact_search(
    *, corpus: Corpus, phrase: str, top_k: int = 20, document_ids: Sequence[int] | None = None
) -> list[PassageHit]:
    """Passages that contain the phrase literally (modulo case, spacing, quote style)."""
    _validate(phrase, top_k, SEARCH_MODE_LEXICAL)
    needle = normalize_for_match(phrase)
    tokens = words(phrase)
    if not needle or not tokens:
        return []
    candidates = phrase_candidates(
        corpus_id=corpus.pk, tokens=tokens, limit=max(top_k * 10, 200), document_ids=document_ids
    )
    hits = [h for h in _hydrate(candidates) if needle in normalize_for_match(h.passage.text)]
    return hits[:top_k]


def passage_neighbours(*, corpus: Corpus, passage_id: int, before: int = 1, after: int = 1) -> list[Passage]:
    """The passage and its neighbours in document order, for reading context."""
    before = max(0, min(int(before), NEIGHBOURS_MAX_WINDOW))
    after = max(0, min(int(after), NEIGHBOURS_MAX_WINDOW))
    anchor = Passage.objects.filter(corpus=corpus, pk=passage_id).values("document_id", "ordinal").first()
    if anchor is None:
        raise PassageNotFound(f"passage {passage_id} not found in this corpus", field="passage_id")
    return list(
        Passage.objects.filter(
            document_id=anchor["document_id"],
            ordinal__gte=anchor["ordinal"] - before,
            ordinal__lte=anchor["ordinal"] + after,
        )
        .select_related("document")
        .defer("embedding", "document__text")
        .order_by("ordinal")
    )


def document_passages(*, document: Document) -> QuerySet[Passage]:
    """A document's passages in reading order (they tile its text without overlap)."""
    return Passage.objects.filter(document=document).defer("embedding").order_by("ordinal")


def document_list(*, corpus: Corpus, document_ids: Sequence[int] | None = None) -> QuerySet[Document]:
    """A corpus's documents by title, optionally only those among `document_ids`."""
    queryset = Document.objects.filter(corpus=corpus).defer("text").order_by("title", "pk")
    if document_ids is not None:
        queryset = queryset.filter(pk__in=list(document_ids))
    return queryset

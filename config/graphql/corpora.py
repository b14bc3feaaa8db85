"""Resolving the corpus a mutation names, the same way for every mutation."""

from django.contrib.auth.models import AbstractBaseUser

from config.graphql.ids import decode_id
from corpora.exceptions import CorpusNotFound
from corpora.models import Corpus
from corpora.selectors import corpus_get_for_user


def readable_corpus(*, user: AbstractBaseUser, corpus_id: str) -> Corpus:
    """The corpus behind a global id if the user may read it; otherwise corpus_not_found on the
    corpusId field, the same for a missing corpus and someone else's."""
    try:
        return corpus_get_for_user(user=user, corpus_id=decode_id(corpus_id, "Corpus", field="corpus_id"))
    except CorpusNotFound as exc:
        raise CorpusNotFound("corpus not found", field="corpus_id") from exc

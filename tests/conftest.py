import pytest
from django.contrib.auth import get_user_model
from pydantic_ai import models as pydantic_ai_models

from corpora.retrieval.dense import dense_indexes
from corpora.retrieval.lexical import term_statistics
from corpora.services import corpus_create


@pytest.fixture(autouse=True)
def _fresh_process_caches():
    # Tests reuse primary keys across rolled-back transactions; process caches must not.
    dense_indexes.clear()
    term_statistics.clear()
    yield
    dense_indexes.clear()
    term_statistics.clear()


@pytest.fixture
def user(db):
    return get_user_model().objects.create_user(username="alice", password="pw-alice-123")


@pytest.fixture
def other_user(db):
    return get_user_model().objects.create_user(username="bob", password="pw-bob-123")


@pytest.fixture
def corpus(user):
    return corpus_create(creator=user, name="Contracts")


# No test may reach a real LLM: models are FunctionModels or TestModels.
pydantic_ai_models.ALLOW_MODEL_REQUESTS = False

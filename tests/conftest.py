import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from pydantic_ai import models as pydantic_ai_models

from corpora.retrieval.dense import dense_indexes
from corpora.retrieval.lexical import term_statistics
from corpora.retrieval.term_index import term_indexes
from corpora.retrieval.versions import index_versions
from corpora.services import corpus_create
from research.runloop import run_loop
from tests.embedding_server import EmbeddingServer


@pytest.fixture(scope="session", autouse=True)
def _run_loop_connections_closed(django_db_setup):
    """The run loop's database threads keep their connections between runs; they are closed
    before the test database is dropped (torn down before django_db_setup)."""
    yield
    run_loop.close_database_connections()
    index_versions.stop()  # its LISTEN connection would keep the test database from dropping


@pytest.fixture(autouse=True)
def _fresh_process_caches():
    # Tests reuse primary keys across rolled-back transactions; process caches must not.
    cache.clear()  # rate-limit counts, keyed by user id
    dense_indexes.clear()
    term_statistics.clear()
    term_indexes.clear()
    index_versions.clear()
    yield
    dense_indexes.clear()
    term_statistics.clear()
    term_indexes.clear()
    index_versions.clear()


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


@pytest.fixture(autouse=True)
def _finalized_reports_keep_the_citation_graph_closed(request):
    """After every test that used the database: each report it finalized cites only passages its
    run retrieved, with every quote verbatim at its offsets (0 fabricated citations suite-wide)."""
    marker = request.node.get_closest_marker("django_db")
    if "transactional_db" in request.fixturenames or (marker and marker.kwargs.get("transaction")):
        request.getfixturevalue("transactional_db")
    elif "db" in request.fixturenames or marker:
        request.getfixturevalue("db")
    else:
        yield
        return
    yield
    from tests.research.checks import assert_every_finalized_report_is_closed

    assert_every_finalized_report_is_closed()


@pytest.fixture
def embedding_server(settings):
    """A real OpenAI-compatible /v1/embeddings server (bag-of-words vectors) as the embedder."""
    with EmbeddingServer() as server:
        settings.EMBEDDING_BACKEND = "openai"
        settings.EMBEDDING_URL = server.url
        settings.EMBEDDING_MODEL = "bag-of-words"
        settings.EMBEDDING_API_KEY = "sk-test"
        yield server

import pytest

from tests.embedding_server import EmbeddingServer


@pytest.fixture
def embedding_server(settings):
    """A real OpenAI-compatible /v1/embeddings server (bag-of-words vectors) as the embedder."""
    with EmbeddingServer() as server:
        settings.EMBEDDING_BACKEND = "openai"
        settings.EMBEDDING_URL = server.url
        settings.EMBEDDING_MODEL = "bag-of-words"
        settings.EMBEDDING_API_KEY = "sk-test"
        yield server

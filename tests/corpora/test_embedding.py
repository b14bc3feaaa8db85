import os
import threading
import time

import numpy as np
import pytest

from corpora.embedding import (
    BATCH_PRIORITY,
    MINILM_DIM,
    MINILM_NAME,
    QUERY_PRIORITY,
    URGENT_PRIORITY,
    InferenceThread,
    MiniLMEmbedder,
    OpenAICompatibleEmbedder,
    get_embedder,
)
from corpora.exceptions import EmbeddingUnavailable
from corpora.models import Passage
from corpora.selectors import corpus_stats, passage_search
from corpora.services import passage_embed_pending
from tasks.embeddings import embed_corpus, embed_pending_sweep, in_process_worker
from tests.factories import ingest_samples, ingest_text


@pytest.fixture
def minilm(settings):
    # The torch runtime: these tests hold its query encoder to encode(); the ONNX runtime's
    # are in test_onnx_embedding.py.
    settings.EMBEDDING_BACKEND = "minilm"
    settings.EMBEDDING_MINILM_RUNTIME = "torch"
    return get_embedder()


def test_openai_compatible_embedder_posts_batches_and_orders_by_index(embedding_server):
    embedder = OpenAICompatibleEmbedder(base_url=embedding_server.url, model="m", api_key="k", batch_size=2)

    vectors = embedder.embed_documents(["alpha beta", "gamma", "alpha beta"])

    assert vectors.shape == (3, 64)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert np.allclose(vectors[0], vectors[2])
    assert [len(r["body"]["input"]) for r in embedding_server.requests] == [2, 1]
    assert embedding_server.requests[0]["path"] == "/v1/embeddings"
    assert embedding_server.requests[0]["auth"] == "Bearer k"


def test_endpoint_errors_become_embedding_unavailable(embedding_server):
    embedding_server.fail_with = 503
    embedder = OpenAICompatibleEmbedder(base_url=embedding_server.url, model="m")

    with pytest.raises(EmbeddingUnavailable, match="HTTP 503") as error:
        embedder.embed_query("x")

    assert error.value.code == "embedding_unavailable"


def test_unreachable_endpoint_becomes_embedding_unavailable():
    embedder = OpenAICompatibleEmbedder(base_url="http://127.0.0.1:9/v1", model="m", timeout=2)

    with pytest.raises(EmbeddingUnavailable, match="unreachable"):
        embedder.embed_query("x")


def test_embedding_is_incremental_and_dense_search_uses_what_is_embedded(corpus, embedding_server):
    ingest_samples(corpus, schedule_embedding=False)
    total = Passage.objects.filter(corpus=corpus).count()

    first = passage_embed_pending(corpus=corpus, limit=1)
    partial = passage_search(corpus=corpus, query="software licence", top_k=10, mode="dense")
    rest = passage_embed_pending(corpus=corpus)
    full = passage_search(corpus=corpus, query="software licence", top_k=10, mode="dense")

    assert first == 1
    assert len(partial) == 1
    assert rest == total - 1
    assert len(full) == total
    assert corpus_stats(corpus=corpus)["embedded_passages"] == total
    assert corpus_stats(corpus=corpus)["embedding_complete"]
    assert passage_embed_pending(corpus=corpus) == 0


def test_dense_ranks_by_vector_similarity(corpus, embedding_server):
    ingest_samples(corpus, schedule_embedding=False)
    passage_embed_pending(corpus=corpus)

    [hit] = passage_search(
        corpus=corpus, query="sublicense the Software licence Licensee", top_k=1, mode="dense"
    )

    assert "non-transferable licence" in hit.passage.text


def test_hybrid_falls_back_to_lexical_when_the_endpoint_is_down(corpus, embedding_server):
    ingest_samples(corpus, schedule_embedding=False)
    passage_embed_pending(corpus=corpus)
    embedding_server.fail_with = 500

    hybrid = passage_search(corpus=corpus, query="Delaware", top_k=3)
    lexical = passage_search(corpus=corpus, query="Delaware", top_k=3, mode="lexical")

    assert [h.passage.pk for h in hybrid] == [h.passage.pk for h in lexical]
    with pytest.raises(EmbeddingUnavailable):
        passage_search(corpus=corpus, query="Delaware", top_k=3, mode="dense")


def test_a_new_model_re_embeds_and_never_mixes_vectors(corpus, embedding_server, settings):
    ingest_samples(corpus, schedule_embedding=False)
    passage_embed_pending(corpus=corpus)
    settings.EMBEDDING_MODEL = "bag-of-words-v2"

    assert corpus_stats(corpus=corpus)["embedded_passages"] == 0
    assert passage_search(corpus=corpus, query="Delaware", top_k=3, mode="dense") == []
    assert passage_embed_pending(corpus=corpus) == Passage.objects.filter(corpus=corpus).count()


@pytest.mark.django_db(transaction=True)
def test_ingest_schedules_background_embedding_in_process_without_a_broker(user, embedding_server):
    from corpora.services import corpus_create

    corpus = corpus_create(creator=user, name="Background")

    result = ingest_text(corpus, "initech.txt", "The Licensee shall not sublicense the Software.")
    in_process_worker.join()

    passage = result.document.passages.get()
    assert passage.embedding_model == "openai:bag-of-words"
    assert len(bytes(passage.embedding)) == 64 * 4


@pytest.mark.django_db(transaction=True)
def test_sweep_finds_corpora_with_pending_passages(user, embedding_server, settings):
    from corpora.services import corpus_create

    settings.CELERY_TASK_ALWAYS_EAGER = True
    corpus = corpus_create(creator=user, name="Sweep")
    ingest_text(corpus, "a.txt", "Pending passage text.", schedule_embedding=False)

    assert embed_pending_sweep.apply().get() == 1
    assert corpus_stats(corpus=corpus)["embedding_complete"]


@pytest.mark.django_db(transaction=True)
def test_a_task_embeds_a_slice_and_queues_the_rest(user, embedding_server, settings):
    from django.core.cache import cache

    from corpora.services import corpus_create

    # given a corpus of 5 passages and tasks of 2 (eager: each queued task runs at once)
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EMBEDDING_TASK_MAX_PASSAGES = 2
    corpus = corpus_create(creator=user, name="Slices")
    for n in range(5):
        ingest_text(corpus, f"{n}.txt", f"Passage number {n} of the slices.", schedule_embedding=False)

    # a task embeds its slice (a worker told to stop waits for 2, not 5), the tasks it queued the rest
    assert embed_corpus.apply(args=[corpus.pk]).get() == 2
    assert corpus_stats(corpus=corpus)["embedding_complete"]

    # while a slice of a corpus runs, a task queued for it again (the beat sweep) leaves it be
    ingest_text(corpus, "late.txt", "A passage added later.", schedule_embedding=False)
    cache.add(f"embedding:corpus:{corpus.pk}", True)
    try:
        assert embed_corpus.apply(args=[corpus.pk]).get() == 0
    finally:
        cache.delete(f"embedding:corpus:{corpus.pk}")
    assert embed_corpus.apply(args=[corpus.pk]).get() == 1


@pytest.mark.embedding
def test_minilm_loads_from_the_package_and_ranks_questions(corpus, minilm):
    ingest_samples(corpus, schedule_embedding=False)

    passage_embed_pending(corpus=corpus)
    [dense] = passage_search(
        corpus=corpus, query="Which state's law applies to the contract?", top_k=1, mode="dense"
    )
    hybrid = passage_search(corpus=corpus, query="Which state's law applies to the contract?", top_k=3)

    assert minilm.name == MINILM_NAME
    assert minilm.embed_query("x").shape == (MINILM_DIM,)
    assert "Delaware" in dense.passage.text
    assert "Delaware" in hybrid[0].passage.text


# The query path is a traced copy of the encode() pipeline: its vectors must be encode()'s, or
# query vectors would drift away from the stored passage vectors.
QUERY_TEXTS = [
    "cap on liability",
    "Which contracts limit the amount of damages a party can recover?",
    "x",
    "",
    "Ünïcödé — “curly quotes”, 日本語 and an emoji 😀",
    "line one\r\nline two\ttabbed",
    "word " * 400,  # past the 256-token window: truncated as encode() truncates
]


@pytest.mark.embedding
def test_minilm_query_vectors_equal_the_encode_pipeline(minilm):
    from corpora.query_encoder import TracedQueryEncoder

    model = minilm._load()
    encoder = minilm._query_encoder()

    assert isinstance(encoder, TracedQueryEncoder)
    for text in QUERY_TEXTS:
        assert encoder.token_ids(text) == model.tokenize([text])["input_ids"][0].tolist()
        expected = minilm.embed_documents([text])[0]
        got = minilm.embed_query(text)
        assert got.dtype == np.float32 and got.shape == (MINILM_DIM,)
        assert np.abs(got - expected).max() < 1e-5, text


@pytest.mark.embedding
def test_minilm_query_embedding_is_safe_from_many_threads(minilm):
    from concurrent.futures import ThreadPoolExecutor

    texts = QUERY_TEXTS * 4
    sequential = [minilm.embed_query(t) for t in texts]
    with ThreadPoolExecutor(max_workers=4) as pool:
        concurrent = list(pool.map(minilm.embed_query, texts))

    for a, b in zip(sequential, concurrent, strict=True):
        assert np.abs(a - b).max() < 1e-6


@pytest.mark.embedding
def test_minilm_keeps_encode_for_a_pipeline_it_cannot_trace(minilm, caplog):
    from sentence_transformers import SentenceTransformer

    from corpora.embedding import MiniLMEmbedder
    from corpora.query_encoder import TracedQueryEncoder

    full = minilm._load()
    unnormalised = SentenceTransformer(modules=[full[0], full[1]], device="cpu")
    with pytest.raises(TypeError, match="no traced encoder"):
        TracedQueryEncoder(unnormalised)

    embedder = MiniLMEmbedder()
    embedder._model = unnormalised
    vector = embedder.embed_query("governing law")

    assert embedder._query_encoder() is None
    assert "could not be traced" in caplog.text
    expected = unnormalised.encode(["governing law"], normalize_embeddings=True, convert_to_numpy=True)[0]
    assert np.allclose(vector, expected, atol=1e-6)


# --- The inference thread ----------------------------------------------------------------------
def _thread_name() -> str:
    return threading.current_thread().name


def _busy(inference: InferenceThread) -> threading.Event:
    """Keeps the inference thread busy with a batch until the returned event is set."""
    started, release = threading.Event(), threading.Event()

    def hold() -> None:
        started.set()
        release.wait(10)

    inference.submit(hold, priority=BATCH_PRIORITY)
    assert started.wait(10)
    return release


def test_queued_queries_overtake_queued_document_batches():
    inference = InferenceThread(threads=1, name="test-inference")
    ran: list[str] = []

    # given a job running and a batch queued before a query
    release = _busy(inference)
    batch = inference.submit(ran.append, "batch", priority=BATCH_PRIORITY)
    query = inference.submit(ran.append, "query", priority=QUERY_PRIORITY)

    # when the running job ends
    release.set()
    batch.result(10), query.result(10)

    # then the query ran first, on the inference thread
    assert ran == ["query", "batch"]
    assert inference.submit(_thread_name, priority=QUERY_PRIORITY).result(10) == "test-inference"


def test_a_runs_texts_overtake_an_ingestions_queued_batches_and_queries_overtake_both():
    # given a batch running, then an ingestion's two batches, a run's texts and a query queued
    inference = InferenceThread(threads=1, name="test-inference")
    ran: list[str] = []
    release = _busy(inference)
    queued = [
        inference.submit(ran.append, name, priority=priority)
        for name, priority in [
            ("ingestion 1", BATCH_PRIORITY),
            ("ingestion 2", BATCH_PRIORITY),
            ("run", URGENT_PRIORITY),
            ("query", QUERY_PRIORITY),
        ]
    ]
    # when the running batch ends
    release.set()
    for future in queued:
        future.result(10)
    # then the query, then the run's texts, then the ingestion's batches in their order
    assert ran == ["query", "run", "ingestion 1", "ingestion 2"]


@pytest.mark.embedding
def test_a_runs_embedding_finishes_before_an_ingestion_queued_ahead_of_it():
    # given the model's inference thread busy, and an ingestion's three batches queued before a
    # research run's one
    embedder = MiniLMEmbedder(batch_size=2)
    embedder.embed_documents(["warm the model up"])
    release = _busy(embedder._inference)
    done: dict[str, float] = {}

    def embed(name: str, texts: list[str], urgent: bool) -> None:
        embedder.embed_documents(texts, urgent=urgent)
        done[name] = time.perf_counter()

    ingestion = threading.Thread(target=embed, args=("ingestion", [f"clause {i}" for i in range(6)], False))
    ingestion.start()
    while embedder._inference._jobs().qsize() < 3:
        time.sleep(0.01)
    run = threading.Thread(target=embed, args=("run", ["the supplier shall maintain insurance"], True))
    run.start()
    while embedder._inference._jobs().qsize() < 4:
        time.sleep(0.01)
    # when the thread is free again
    release.set()
    ingestion.join(60), run.join(60)
    # then the run's texts were embedded first
    assert done["run"] < done["ingestion"]


def test_a_failing_job_reaches_its_caller_and_the_thread_serves_on():
    inference = InferenceThread(threads=1)

    failed = inference.submit(int, "not a number", priority=QUERY_PRIORITY)

    with pytest.raises(ValueError):
        failed.result(10)
    assert inference.submit(int, "42", priority=QUERY_PRIORITY).result(10) == 42


def test_the_thread_runs_torch_on_the_configured_threads():
    import torch

    assert InferenceThread(threads=1).submit(torch.get_num_threads, priority=0).result(10) == 1
    default = InferenceThread(threads=0).submit(torch.get_num_threads, priority=0).result(10)
    assert default == len(os.sched_getaffinity(0))


def _child_submits(inference: InferenceThread, answer) -> None:
    name = inference.submit(_thread_name, priority=QUERY_PRIORITY).result(10)
    answer.put(name)


def test_a_forked_child_gets_a_thread_of_its_own():
    import multiprocessing

    inference = InferenceThread(threads=1, name="forked-inference")
    assert inference.submit(_thread_name, priority=0).result(10) == "forked-inference"
    context = multiprocessing.get_context("fork")
    answer = context.Queue()

    child = context.Process(target=_child_submits, args=(inference, answer))
    child.start()
    child.join(30)

    assert child.exitcode == 0
    assert answer.get(timeout=5) == "forked-inference"


def test_a_job_submitted_from_the_inference_thread_runs_inline():
    inference = InferenceThread(threads=1)

    def outer() -> str:
        return inference.submit(_thread_name, priority=BATCH_PRIORITY).result(1)

    assert inference.submit(outer, priority=QUERY_PRIORITY).result(10) == inference.name


@pytest.mark.embedding
def test_minilm_then_runs_on_the_inference_thread_with_the_vector(minilm):
    name, shape = minilm.embed_query_async(
        "governing law", then=lambda vector: (_thread_name(), vector.shape)
    ).result(60)

    assert name == "deepcite-inference"
    assert shape == (MINILM_DIM,)


def test_a_remote_embedders_then_gets_the_vector(embedding_server):
    embedder = OpenAICompatibleEmbedder(base_url=embedding_server.url, model="m")

    norm = embedder.embed_query_async("alpha beta", then=lambda v: float(np.linalg.norm(v))).result(10)

    assert norm == pytest.approx(1.0)

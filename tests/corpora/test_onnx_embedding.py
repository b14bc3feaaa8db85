"""The bundled model's ONNX runtimes (int8; float32 at the end): the export (once per test
session, into a folder of its own), agreement with torch, the runtime setting and its
fallback, and re-embedding a corpus whose passages hold the torch runtime's vectors."""

import json
import logging
import sys
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from corpora.embedding import MINILM_DIM, MINILM_NAME, MINILM_ONNX_NAME, MiniLMEmbedder, get_embedder
from corpora.exceptions import EmbeddingUnavailable
from corpora.models import Passage
from corpora.onnx_embedding import OnnxMiniLMEmbedder, onnx_model_ensure
from corpora.selectors import corpus_stats, passage_search
from corpora.services import passage_embed_pending
from tests.factories import ACME_SUPPLY, INITECH_LICENSE, ingest_samples

SAMPLE_TEXTS = [
    *(paragraph for paragraph in (ACME_SUPPLY + "\n\n" + INITECH_LICENSE).split("\n\n") if paragraph.strip()),
    "This Agreement shall be governed by and construed in accordance with the laws of the State "
    "of New York, without regard to its conflict of laws principles. " * 3,
    "cap on liability",
    "Which contracts require a party to maintain insurance?",
]


@pytest.fixture(scope="session")
def onnx_export(tmp_path_factory) -> tuple[Path, Path, bool]:
    """The int8 model exported once for the session: (folder, file, exported by this call)."""
    folder = tmp_path_factory.mktemp("onnx")
    path, exported = onnx_model_ensure(folder)
    return folder, path, exported


@pytest.fixture
def onnx_minilm(settings, onnx_export):
    settings.EMBEDDING_BACKEND = "minilm"
    settings.EMBEDDING_MINILM_RUNTIME = "onnx"
    settings.EMBEDDING_ONNX_DIR = onnx_export[0]
    return get_embedder()


@pytest.fixture
def torch_minilm(settings):
    settings.EMBEDDING_BACKEND = "minilm"
    settings.EMBEDDING_MINILM_RUNTIME = "torch"
    return get_embedder()


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1)


GOVERNING_LAW_QUERY = "Which state's law applies to the contract?"


def _embedded_by_torch(corpus, settings) -> int:
    """The samples ingested into `corpus` and embedded by the torch runtime: their passages."""
    ingest_samples(corpus, schedule_embedding=False)
    settings.EMBEDDING_BACKEND = "minilm"
    settings.EMBEDDING_MINILM_RUNTIME = "torch"
    return passage_embed_pending(corpus=corpus)


@pytest.mark.embedding
def test_the_export_is_written_once_and_reused(onnx_export):
    folder, path, exported = onnx_export
    written = path.stat().st_mtime_ns

    # when the model is asked for again, as a second process would
    again, exported_again = onnx_model_ensure(folder)

    # then the same file is used, not exported again, and no temporary file is left beside it
    assert exported is True
    assert (again, exported_again) == (path, False)
    assert path.stat().st_mtime_ns == written
    assert [p.name for p in folder.iterdir()] == [path.name]


@pytest.mark.embedding
def test_onnx_vectors_agree_with_torch(onnx_minilm, torch_minilm):
    onnx_vectors = onnx_minilm.embed_documents(SAMPLE_TEXTS)
    torch_vectors = torch_minilm.embed_documents(SAMPLE_TEXTS)

    assert onnx_vectors.shape == (len(SAMPLE_TEXTS), MINILM_DIM)
    assert onnx_vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(onnx_vectors, axis=1), 1.0, atol=1e-5)
    assert _cosines(onnx_vectors, torch_vectors).min() >= 0.99


@pytest.mark.embedding
def test_queries_and_documents_come_from_the_same_runtime(onnx_minilm):
    # Activations are quantized per batch (one scale per matrix), so a text's vector moves a
    # little with its batchmates (0.990 at worst here); the query path is the same model.
    documents = onnx_minilm.embed_documents(SAMPLE_TEXTS)
    queries = np.vstack([onnx_minilm.embed_query(text) for text in SAMPLE_TEXTS])

    assert isinstance(onnx_minilm, OnnxMiniLMEmbedder)
    assert onnx_minilm.name == MINILM_ONNX_NAME
    assert _cosines(queries, documents).min() >= 0.985
    # and the documents come back in the order given, whatever the batches sorted by length
    assert np.allclose(onnx_minilm.embed_documents(SAMPLE_TEXTS[::-1])[::-1], documents, atol=0.02)


def test_the_torch_runtime_setting_keeps_sentence_transformers(torch_minilm):
    assert isinstance(torch_minilm, MiniLMEmbedder)
    assert torch_minilm.name == MINILM_NAME


def test_auto_uses_torch_when_onnxruntime_is_not_installed(settings, tmp_path, monkeypatch, caplog):
    # given no onnxruntime to import (a package outside the project, absent)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    settings.EMBEDDING_BACKEND = "minilm"
    settings.EMBEDDING_MINILM_RUNTIME = "auto"
    settings.EMBEDDING_ONNX_DIR = tmp_path / "no-onnxruntime"

    embedder = get_embedder()

    assert isinstance(embedder, MiniLMEmbedder)
    assert embedder.name == MINILM_NAME
    assert "the bundled model runs on torch: no ONNX model" in caplog.text
    assert not (tmp_path / "no-onnxruntime").exists()


def test_auto_uses_torch_when_the_export_cannot_be_written_and_onnx_refuses(settings, tmp_path, caplog):
    # given an export folder that cannot be created (a file stands where its parent should be)
    (tmp_path / "taken").write_text("not a folder")
    settings.EMBEDDING_BACKEND = "minilm"
    settings.EMBEDDING_ONNX_DIR = tmp_path / "taken" / "onnx"

    settings.EMBEDDING_MINILM_RUNTIME = "auto"
    with caplog.at_level(logging.WARNING):
        fallback = get_embedder()
    settings.EMBEDDING_MINILM_RUNTIME = "onnx"
    with pytest.raises(EmbeddingUnavailable, match="ONNX runtime is unavailable") as error:
        get_embedder()

    assert fallback.name == MINILM_NAME
    assert caplog.text.count("the bundled model runs on torch") == 1
    assert error.value.code == "embedding_unavailable"


def test_an_unknown_runtime_is_refused(settings):
    settings.EMBEDDING_BACKEND = "minilm"
    settings.EMBEDDING_MINILM_RUNTIME = "tensorflow"

    with pytest.raises(EmbeddingUnavailable, match="unknown EMBEDDING_MINILM_RUNTIME 'tensorflow'"):
        get_embedder()


@pytest.mark.embedding
def test_the_embed_command_re_embeds_another_runtimes_passages(corpus, settings, onnx_export):
    # given a corpus embedded by the torch runtime
    total = _embedded_by_torch(corpus, settings)
    query = GOVERNING_LAW_QUERY
    assert "Delaware" in passage_search(corpus=corpus, query=query, top_k=1, mode="dense")[0].passage.text

    # when the deployment moves to the ONNX runtime
    settings.EMBEDDING_MINILM_RUNTIME = "onnx"
    settings.EMBEDDING_ONNX_DIR = onnx_export[0]
    before = corpus_stats(corpus=corpus)
    partly = passage_embed_pending(corpus=corpus, limit=1)
    half = passage_search(corpus=corpus, query=query, top_k=10, mode="dense")
    out = StringIO()
    call_command("embed", "--corpus", corpus.name, "--user", corpus.creator.username, stdout=out)

    # then torch's vectors no longer count, the search sees only what was re-embedded, and
    # the command re-embeds the rest
    assert before["embedded_passages"] == 0 and not before["embedding_complete"]
    assert before["embedding_model"] == MINILM_ONNX_NAME
    assert partly == 1 and len(half) == 1
    stats = json.loads(out.getvalue())
    assert stats["embedded_now"] == total - 1
    assert stats["embedded_passages"] == stats["passages"] == total
    assert stats["embedding_complete"]
    assert set(Passage.objects.filter(corpus=corpus).values_list("embedding_model", flat=True)) == {
        MINILM_ONNX_NAME
    }
    [hit] = passage_search(corpus=corpus, query=query, top_k=1, mode="dense")
    assert "Delaware" in hit.passage.text


@pytest.mark.embedding
def test_embed_all_finds_every_corpus_with_passages_to_embed(corpus, user, settings, onnx_export):
    from corpora.services import corpus_create

    other = corpus_create(creator=user, name="Other")
    ingest_samples(corpus, schedule_embedding=False)
    ingest_samples(other, schedule_embedding=False)
    settings.EMBEDDING_BACKEND = "minilm"
    settings.EMBEDDING_MINILM_RUNTIME = "onnx"
    settings.EMBEDDING_ONNX_DIR = onnx_export[0]
    passage_embed_pending(corpus=corpus)

    out = StringIO()
    call_command("embed", "--all", stdout=out)

    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["name"] for line in lines] == ["Other"]
    assert lines[0]["embedding_complete"] and lines[0]["embedded_now"] == lines[0]["passages"]
    # run again, with nothing left to embed, it says so rather than nothing at all
    out, err = StringIO(), StringIO()
    call_command("embed", "--all", stdout=out, stderr=err)
    assert out.getvalue() == "" and "nothing to do" in err.getvalue()


@pytest.fixture(scope="session")
def fp32_export(tmp_path_factory) -> tuple[Path, Path]:
    """The float32 model exported once for the session: (folder, file)."""
    folder = tmp_path_factory.mktemp("onnx-fp32")
    path, exported = onnx_model_ensure(folder, "fp32")
    assert exported
    return folder, path


@pytest.mark.embedding
def test_the_fp32_runtime_computes_torchs_vectors_under_torchs_name(settings, fp32_export, torch_minilm):
    settings.EMBEDDING_MINILM_RUNTIME = "onnx-fp32"
    settings.EMBEDDING_ONNX_DIR = fp32_export[0]
    fp32 = get_embedder()

    documents = fp32.embed_documents(SAMPLE_TEXTS)
    queries = np.vstack([fp32.embed_query(text) for text in SAMPLE_TEXTS])

    # the same vectors as torch's, documents and queries alike, in the order given whatever
    # the batches sorted by length: stored under torch's name, nothing to re-embed
    assert isinstance(fp32, OnnxMiniLMEmbedder) and fp32.name == MINILM_NAME == torch_minilm.name
    assert fp32.path.name.startswith(f"{MINILM_NAME}-onnx-fp32-")
    assert _cosines(documents, torch_minilm.embed_documents(SAMPLE_TEXTS)).min() >= 0.9999
    assert _cosines(queries, documents).min() >= 0.9999
    assert np.allclose(fp32.embed_documents(SAMPLE_TEXTS[::-1])[::-1], documents, atol=1e-4)


@pytest.mark.embedding
def test_a_corpus_embedded_by_torch_is_searched_by_the_fp32_runtime_as_it_is(corpus, settings, fp32_export):
    # given a corpus embedded by the torch runtime
    total = _embedded_by_torch(corpus, settings)
    query = GOVERNING_LAW_QUERY
    by_torch = passage_search(corpus=corpus, query=query, top_k=3, mode="dense")

    # when the deployment moves to the float32 ONNX runtime
    settings.EMBEDDING_MINILM_RUNTIME = "onnx-fp32"
    settings.EMBEDDING_ONNX_DIR = fp32_export[0]

    # then every passage still counts as embedded, and a dense search ranks as before
    stats = corpus_stats(corpus=corpus)
    assert stats["embedded_passages"] == total and stats["embedding_complete"]
    assert passage_embed_pending(corpus=corpus) == 0
    by_fp32 = passage_search(corpus=corpus, query=query, top_k=3, mode="dense")
    assert [hit.passage.pk for hit in by_fp32] == [hit.passage.pk for hit in by_torch]
    assert "Delaware" in by_fp32[0].passage.text


def test_the_fp32_runtime_refuses_rather_than_falling_back(settings, tmp_path):
    (tmp_path / "taken").write_text("not a folder")
    settings.EMBEDDING_BACKEND = "minilm"
    settings.EMBEDDING_ONNX_DIR = tmp_path / "taken" / "onnx"
    settings.EMBEDDING_MINILM_RUNTIME = "onnx-fp32"

    with pytest.raises(EmbeddingUnavailable, match="ONNX runtime is unavailable"):
        get_embedder()


@pytest.mark.embedding
def test_auto_runs_the_fp32_export(settings, fp32_export):
    # given the default runtime and a folder holding the float32 export
    settings.EMBEDDING_BACKEND = "minilm"
    settings.EMBEDDING_MINILM_RUNTIME = "auto"
    settings.EMBEDDING_ONNX_DIR = fp32_export[0]

    embedder = get_embedder()

    # then onnxruntime runs it, and its vectors are stored as torch's would be
    assert isinstance(embedder, OnnxMiniLMEmbedder)
    assert embedder.path == fp32_export[1]
    assert embedder.name == MINILM_NAME
    assert embedder.embed_documents(["cap on liability"]).shape == (1, MINILM_DIM)


def _holding(folder: Path, *exports: Path) -> Path:
    """`folder`, made, holding copies of the session's exports."""
    folder.mkdir()
    for export in exports:
        (folder / export.name).write_bytes(export.read_bytes())
    return folder


@pytest.mark.parametrize(
    ("runtime", "arguments", "expected"),
    [
        ("auto", [], ["fp32"]),
        ("onnx", [], ["int8"]),
        ("torch", ["--precision", "fp32"], ["fp32"]),
        ("auto", ["--precision", "all"], ["fp32", "int8"]),
    ],
)
def test_the_export_command_finds_the_exports_the_runtime_needs(
    settings, tmp_path, onnx_export, fp32_export, runtime, arguments, expected
):
    # given a folder holding both exports already (copied from the session's)
    folder = _holding(tmp_path / "onnx", fp32_export[1], onnx_export[1])
    settings.EMBEDDING_ONNX_DIR = folder
    settings.EMBEDDING_MINILM_RUNTIME = runtime

    out = StringIO()
    call_command("embedding_export", *arguments, stdout=out)

    # then the one the runtime runs (or each one asked for) is found there, not exported again
    files = {"fp32": fp32_export[1].name, "int8": onnx_export[1].name}
    results = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(r["precision"], r["path"], r["exported"]) for r in results] == [
        (precision, str(folder / files[precision]), False) for precision in expected
    ]


def test_the_export_command_says_why_it_exported_nothing(settings, tmp_path):
    (tmp_path / "taken").write_text("not a folder")
    settings.EMBEDDING_ONNX_DIR = tmp_path / "taken" / "onnx"

    out = StringIO()
    call_command("embedding_export", "--if-available", stdout=out)
    with pytest.raises(CommandError, match=r"^\[embedding_export_failed\]"):
        call_command("embedding_export", stdout=StringIO())

    [result] = [json.loads(line) for line in out.getvalue().splitlines()]
    assert result["precision"] == "fp32" and result["path"] is None and not result["exported"]
    assert result["reason"]

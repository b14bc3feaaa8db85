import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from corpora.models import Corpus, Document, Passage
from tests.documents import pdf_bytes
from tests.embedding_server import EmbeddingServer
from tests.factories import ACME_SUPPLY, INITECH_LICENSE, SEARCH_HIT_FIELDS, refuse_second_passage_inserts


def run(*args, status: int = 0) -> tuple[str, str]:
    """The command's stdout and stderr; it must end with exit status `status`."""
    out, err = StringIO(), StringIO()
    try:
        call_command(*args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    assert code == status, err.getvalue()
    return out.getvalue(), err.getvalue()


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "acme.md").write_text(ACME_SUPPLY, encoding="utf-8")
    nested = tmp_path / "nested"
    nested.mkdir()
    (nested / "initech.txt").write_text(INITECH_LICENSE, encoding="utf-8")
    (nested / "terms.pdf").write_bytes(pdf_bytes([["Payment within thirty days."]]))
    (nested / "broken.pdf").write_bytes(b"%PDF-1.7 this is not a pdf")
    (nested / "binary.txt").write_bytes(bytes(range(256)) * 8)
    (tmp_path / ".hidden.txt").write_text("ignored", encoding="utf-8")
    return tmp_path


@pytest.mark.django_db
def test_ingest_folder_reports_each_bad_file_and_ends_with_a_json_summary(folder):
    # the exit status says that some files failed; the summary says which and why
    out, err = run("ingest", str(folder), "--corpus", "Legal", status=1)

    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["added"] == 3
    assert summary["skipped"] == 0
    assert summary["failed"] == 2
    assert summary["passages"] == Passage.objects.count() > 0
    assert summary["embedding"] == "off"
    assert summary["seconds"] >= 0
    assert {f["code"] for f in summary["failures"]} == {"corrupt_file"}
    assert "broken.pdf" in err and "binary.txt" in err
    assert "created corpus 'Legal'" in err
    corpus = Corpus.objects.get(name="Legal")
    assert corpus.creator.username == "deepcite"
    assert Document.objects.filter(corpus=corpus).count() == 3


@pytest.mark.django_db
def test_ingest_twice_skips_what_is_already_there(folder):
    run("ingest", str(folder), "--corpus", "Legal", status=1)

    out, _ = run(
        "ingest", str(folder / "acme.md"), str(folder / "missing.txt"), "--corpus", "Legal", status=1
    )

    summary = json.loads(out.strip().splitlines()[-1])
    assert (summary["added"], summary["skipped"], summary["failed"]) == (0, 1, 1)
    assert summary["failures"][0]["code"] == "file_not_found"
    assert Document.objects.count() == 3


@pytest.mark.django_db
def test_search_prints_a_json_array_of_passages(folder):
    run("ingest", str(folder), "--corpus", "Legal", status=1)

    out, _ = run(
        "search", "--corpus", "Legal", "governing law", "--top-k", "2", "--mode", "lexical", "--json"
    )

    hits = json.loads(out)
    assert 1 <= len(hits) <= 2
    assert set(hits[0]) == SEARCH_HIT_FIELDS
    assert hits[0]["source_name"] == "acme.md"
    document = Document.objects.get(pk=hits[0]["document_id"])
    assert document.text[hits[0]["start"] : hits[0]["end"]] == hits[0]["text"]


@pytest.mark.django_db
def test_search_queries_file_prints_one_array_per_line(folder, tmp_path):
    run("ingest", str(folder), "--corpus", "Legal", status=1)
    queries = tmp_path / "queries.txt"
    queries.write_text('Delaware\n\nnon-compete\n"*:AND\n', encoding="utf-8")

    out, _ = run("search", "--corpus", "Legal", "--queries", str(queries), "--top-k", "3")

    lines = [json.loads(line) for line in out.strip().splitlines()]
    assert len(lines) == 3
    assert "Delaware" in lines[0][0]["text"]
    assert "compet" in lines[1][0]["text"]
    assert isinstance(lines[2], list)


@pytest.mark.django_db
def test_search_errors_are_one_line_with_a_code(folder):
    run("ingest", str(folder), "--corpus", "Legal", status=1)

    with pytest.raises(CommandError, match=r"\[corpus_not_found\]"):
        run("search", "--corpus", "Nope", "x")
    with pytest.raises(CommandError, match=r"\[invalid_top_k\]"):
        run("search", "--corpus", "Legal", "x", "--top-k", "0")
    with pytest.raises(CommandError, match=r"\[dense_search_unavailable\]"):
        run("search", "--corpus", "Legal", "x", "--mode", "dense")
    with pytest.raises(CommandError, match=r"\[invalid_arguments\] give a query to search for"):
        run("search", "--corpus", "Legal")
    with pytest.raises(CommandError, match=r"\[invalid_arguments\] give a query to search for"):
        run("search", "--corpus", "Legal", "  ")
    queries = folder / "queries.txt"
    queries.write_text("x\n")
    with pytest.raises(CommandError, match=r"\[invalid_arguments\] .*not both"):
        run("search", "--corpus", "Legal", "x", "--queries", str(queries))


@pytest.mark.django_db
def test_another_users_corpus_is_not_found_by_name(folder):
    run("ingest", str(folder), "--corpus", "Legal", "--user", "alice", status=1)

    with pytest.raises(CommandError) as error:
        run("search", "--corpus", "Legal", "Delaware", "--user", "mallory")
    # and the error says for whom, and how to name the owner (a corpus made on the site is theirs)
    assert str(error.value) == (
        "[corpus_not_found] corpus 'Legal' not found for user 'mallory'; "
        "name the account that owns or reads it with --user NAME"
    )


@pytest.mark.django_db
def test_ingest_without_broker_embeds_before_returning(folder, settings):
    with EmbeddingServer() as server:
        settings.EMBEDDING_BACKEND = "openai"
        settings.EMBEDDING_URL = server.url
        out, _ = run("ingest", str(folder), "--corpus", "Legal", status=1)
        dense, _ = run("search", "--corpus", "Legal", "Delaware law", "--mode", "dense", "--json")
        deferred, _ = run("ingest", str(folder / "acme.md"), "--corpus", "Other", "--no-embed")
        embedded, _ = run("embed", "--corpus", "Other")

    assert json.loads(out.splitlines()[-1])["embedding"] == "complete"
    assert len(json.loads(dense)) == Passage.objects.filter(corpus__name="Legal").count()
    assert json.loads(deferred.splitlines()[-1])["embedding"] == "deferred"
    stats = json.loads(embedded)
    assert stats["embedded_now"] == stats["passages"] == stats["embedded_passages"]


@pytest.mark.django_db
def test_an_unexpected_database_failure_skips_that_file_only(tmp_path):
    (tmp_path / "short.txt").write_text("One short passage.", encoding="utf-8")
    (tmp_path / "long.md").write_text(ACME_SUPPLY, encoding="utf-8")  # several passages
    refuse_second_passage_inserts("disk on fire")

    out, _ = run("ingest", str(tmp_path), "--corpus", "Legal", status=1)

    summary = json.loads(out.strip().splitlines()[-1])
    assert (summary["added"], summary["failed"]) == (1, 1)
    [failure] = summary["failures"]
    assert failure["code"] == "ingest_failed"
    assert "disk on fire" in failure["message"]
    assert list(Document.objects.values_list("source_name", flat=True)) == ["short.txt"]


@pytest.mark.django_db
def test_ingest_exits_0_when_every_file_was_stored_or_already_there(folder):
    run("ingest", str(folder / "acme.md"), "--corpus", "Legal")
    out, _ = run(
        "ingest", str(folder / "acme.md"), str(folder / "nested" / "initech.txt"), "--corpus", "Legal"
    )
    summary = json.loads(out.strip().splitlines()[-1])
    assert (summary["added"], summary["skipped"], summary["failed"]) == (1, 1, 0)


@pytest.mark.embedding
def test_commands_with_the_bundled_model_print_no_library_noise(tmp_path):
    # given a command that loads the bundled model, in a process of its own as a user runs it
    root = Path(__file__).resolve().parents[2]
    (tmp_path / "acme.md").write_text(ACME_SUPPLY, encoding="utf-8")
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "EMBEDDING_BACKEND": "minilm",
    }
    manage = [sys.executable, str(root / "manage.py")]
    subprocess.run([*manage, "migrate", "-v", "0"], env=env, check=True, timeout=120)
    # when it ingests (embedding in-process) and searches
    ingest = subprocess.run(
        [*manage, "ingest", str(tmp_path / "acme.md"), "--corpus", "C"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    # then stderr holds our lines only, not the library's notes about its config
    assert ingest.returncode == 0, ingest.stderr
    assert "loss_type" not in ingest.stderr and "transformers" not in ingest.stderr
    assert json.loads(ingest.stdout.splitlines()[-1])["embedding"] == "complete"


@pytest.mark.django_db
def test_ingest_of_nothing_that_exists_creates_no_corpus(tmp_path):
    with pytest.raises(CommandError) as error:
        call_command("ingest", str(tmp_path / "typo.txt"), "--corpus", "QA ingest")
    assert str(error.value) == f"[file_not_found] no such file or folder: {tmp_path / 'typo.txt'}"
    assert not Corpus.objects.filter(name="QA ingest").exists()

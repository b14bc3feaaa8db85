import json

import pytest
from django.core.management import CommandError, call_command

from corpora.models import Document
from research.management.commands.research import progress_line
from research.models import ReportStatus, ResearchReport
from tests.factories import ingest_samples

CLI_USER = "deepcite"


@pytest.fixture
def cli_corpus(transactional_db):
    from corpora.services import cli_user_ensure, corpus_create

    owner = cli_user_ensure(username=CLI_USER)
    corpus = corpus_create(creator=owner, name="Samples")
    ingest_samples(corpus)
    return corpus


def _research(capsys, *args) -> tuple[int, str]:
    try:
        call_command("research", *args)
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    return code, capsys.readouterr().out


def test_research_json_runs_in_process_and_prints_a_verifiable_report(cli_corpus, capsys):
    code, out = _research(
        capsys,
        "--corpus",
        "Samples",
        "--json",
        "--timeout",
        "120",
        "--depth",
        "shallow",
        "Research liability caps and governing law",
    )
    assert code == 0
    report = json.loads(out)
    assert set(report) >= {
        "report_id",
        "status",
        "depth",
        "content",
        "citations",
        "warnings",
        "duration_seconds",
        "retry_count",
    }
    assert report["status"] == ReportStatus.COMPLETED
    assert report["depth"] == "shallow"
    assert report["retry_count"] == 0
    assert report["duration_seconds"] >= 0
    assert report["citations"]
    for citation in report["citations"]:
        document = Document.objects.get(pk=citation["document_id"])
        assert citation["document_title"] == document.title
        assert citation["source_name"] == document.source_name
        assert document.text[citation["start"] : citation["end"]] == citation["quote"]
    assert ResearchReport.objects.get(pk=report["report_id"]).status == ReportStatus.COMPLETED


def test_research_text_output_ends_with_the_status_line(cli_corpus, capsys):
    code, out = _research(
        capsys, "--corpus", "Samples", "--timeout", "120", "What is the notice period for termination?"
    )
    assert code == 0
    assert "## Sources" in out
    assert out.rstrip().splitlines()[-1].endswith(": COMPLETED")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--corpus", "Nope", "x"], "[corpus_not_found]"),
        (["--corpus", "Samples", "   "], "[prompt_invalid]"),
        (["--corpus", "Samples", "--max-steps", "0", "x"], "[max_steps_invalid]"),
        (["--corpus", "Samples", "--max-steps", "-5", "x"], "[max_steps_invalid]"),
        (["--corpus", "Samples", "--no-wait", "x"], "[no_broker]"),
        (["--corpus", "Samples", "--documents", "a,b", "x"], "[document_scope_invalid]"),
    ],
)
def test_research_errors_are_one_line_with_a_code(cli_corpus, args, message):
    with pytest.raises(CommandError) as error:
        call_command("research", *args)
    assert str(error.value).startswith(message)
    assert ResearchReport.objects.count() == 0


def test_research_shows_its_progress_on_stderr_while_it_waits(cli_corpus, capsys):
    # given a question about the collection, asked with per-request breadth and time limit
    call_command(
        "research",
        "--corpus",
        "Samples",
        "--json",
        "--breadth",
        "2",
        "--time-limit",
        "120",
        "Which of these agreements limit liability, and which can be terminated for convenience?",
    )
    out, err = capsys.readouterr()
    # then the JSON carries the strategy and the last progress, and stderr showed the stages
    report = json.loads(out)
    assert report["strategy"] == "deep"
    assert report["progress"]["phase"] == "completed"
    stored = ResearchReport.objects.get(pk=report["report_id"])
    assert (stored.breadth, stored.time_limit_seconds, len(stored.plan)) == (2, 120, 2)
    lines = [line for line in err.splitlines() if line.startswith(f"report {stored.pk}: ")]
    assert lines[-1].startswith(f"report {stored.pk}: completed")
    assert lines[0].startswith((f"report {stored.pk}: queued", f"report {stored.pk}: running"))
    assert len(lines) == len({line.rsplit(" · ", 1)[0] for line in lines})  # a line per stage, no repeats
    # and the answers per sub-question: every document the sweep judged, with the footnotes citing it
    assert [a["question"] for a in report["answers"]] == [step["question"] for step in stored.plan]
    footnotes = {c["footnote"]: c["document_id"] for c in report["citations"]}
    for answer in report["answers"]:
        assert answer["swept"] and answer["documents_examined"] == 2 and answer["asked"] is None
        for document in answer["documents"]:
            assert document["title"] == Document.objects.get(pk=document["document_id"]).title
            assert all(footnotes[n] == document["document_id"] for n in document["footnotes"])
            assert document["addresses"] or not document["footnotes"]
    assert any(d["footnotes"] for a in report["answers"] for d in a["documents"])


def test_the_progress_line_counts_the_documents_swept_and_read_again(cli_corpus):
    report = ResearchReport(
        status=ReportStatus.RUNNING,
        progress={"phase": "rereading", "documents_swept": 61, "documents_total": 61, "documents_reread": 3},
        findings=[{"id": 1}, {"id": 2}],
    )
    line = progress_line(report, 9.2)
    assert line == "running · rereading · 61/61 documents · 3 read again · 2 findings · 9s"


def test_research_refuses_a_model_this_server_does_not_offer(cli_corpus):
    with pytest.raises(CommandError) as error:
        call_command("research", "--corpus", "Samples", "--model", "openai:gpt-5-pro", "x")
    assert str(error.value).startswith("[model_not_allowed]")
    assert ResearchReport.objects.count() == 0

"""The `deepcite` CLI as users run it: a real subprocess talking HTTP to a live server that runs
research in its own thread pool, on the test database."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from accounts.services import api_token_create
from config.graphql.ids import decode_id, encode_id
from corpora.models import Corpus, Document, Passage
from corpora.services import corpus_create
from research.models import ReportStatus, ResearchReport
from tasks.research import in_process_pool
from tests.factories import ingest_samples, queued_report

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parents[2]
PROMPT = "What limits the liability of the supplier?\nWhen can the licence agreement be terminated?"
REPORT_JSON_FIELDS = {
    "task_id",
    "status",
    "depth",
    "strategy",
    "result",
    "duration_seconds",
    "retry_count",
    "citations",
    "answers",
    "conjunctions",
}
CITATION_FIELDS = {
    "footnote",
    "passage_id",
    "document_id",
    "document_title",
    "source_name",
    "page",
    "quote",
    "start",
    "end",
}


@pytest.fixture(autouse=True)
def _research_threads_end(transactional_db):
    # Runs the CLI started go on in this process's pool after the CLI exits: let them end before
    # the database is flushed under them.
    yield
    assert in_process_pool.wait(timeout=60)


@pytest.fixture
def token(user) -> str:
    return api_token_create(user=user, name="cli").secret


@pytest.fixture
def samples(user):
    corpus = corpus_create(creator=user, name="Samples")
    ingest_samples(corpus)
    return corpus


def deepcite(*args: str, url: str | None, token: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DEEPCITE_URL", "DEEPCITE_TOKEN")}
    if url is not None:
        env["DEEPCITE_URL"] = url
    if token is not None:
        env["DEEPCITE_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=90,
        check=False,
    )


def test_corpora_json_lists_the_users_corpora(live_server, token, samples):
    result = deepcite("corpora", "--json", url=live_server.url, token=token)

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [
        {
            "id": encode_id("Corpus", samples.pk),
            "name": "Samples",
            "documents": 2,
            "passages": Passage.objects.filter(corpus=samples).count(),
        }
    ]


def test_corpora_table_shows_each_corpus(live_server, token, samples):
    result = deepcite("corpora", url=live_server.url, token=token)

    assert result.returncode == 0, result.stderr
    assert encode_id("Corpus", samples.pk) in result.stdout
    assert "Samples" in result.stdout


def test_research_json_waits_for_the_cited_report_and_resume_prints_it_again(
    live_server, token, samples, tmp_path
):
    output_file = tmp_path / "report.md"

    result = deepcite(
        "research",
        PROMPT,
        "--corpus",
        encode_id("Corpus", samples.pk),
        "--depth",
        "shallow",
        "--json",
        "--poll",
        "0.2",
        "--output",
        str(output_file),
        url=live_server.url,
        token=token,
    )

    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert set(body) == REPORT_JSON_FIELDS
    report = ResearchReport.objects.get(pk=decode_id(body["task_id"], "ResearchReport"))
    assert report.status == ReportStatus.COMPLETED
    assert (body["status"], body["depth"], body["retry_count"]) == ("COMPLETED", "shallow", 0)
    assert body["result"] == report.content
    assert isinstance(body["duration_seconds"], float)
    assert len(body["citations"]) == len(report.citations) > 0
    for citation in body["citations"]:
        assert set(citation) == CITATION_FIELDS
        document = Document.objects.get(pk=decode_id(citation["document_id"], "Document"))
        assert document.text[citation["start"] : citation["end"]] == citation["quote"]
    assert output_file.read_text(encoding="utf-8") == report.content
    assert [a["question"] for a in body["answers"]] == [step["question"] for step in report.plan]
    cited = {c["footnote"]: c["document_id"] for c in body["citations"]}
    answered = [d for a in body["answers"] for d in a["documents"]]
    assert answered and all(cited[n] == d["document_id"] for d in answered for n in d["footnotes"])

    # Resuming a report that has ended prints it at once, as research did.
    resumed = deepcite("resume", body["task_id"], "--json", url=live_server.url, token=token)

    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == body


def test_task_id_only_prints_the_id_without_waiting_and_resume_waits_for_the_end(live_server, token, samples):
    started = deepcite(
        "research", PROMPT, "--corpus", str(samples.pk), "--task-id-only", url=live_server.url, token=token
    )

    assert started.returncode == 0, started.stderr
    # Only the id on stdout, and no progress at all on stderr: it did not wait.
    assert started.stderr == ""
    task_id = started.stdout.removesuffix("\n")
    assert "\n" not in task_id
    report_pk = decode_id(task_id, "ResearchReport")
    assert ResearchReport.objects.filter(pk=report_pk, corpus=samples).exists()

    resumed = deepcite("resume", task_id, "--json", "--poll", "0.2", url=live_server.url, token=token)

    assert resumed.returncode == 0, resumed.stderr
    body = json.loads(resumed.stdout)
    assert (body["task_id"], body["status"]) == (task_id, "COMPLETED")
    assert body["result"] == ResearchReport.objects.get(pk=report_pk).content


def test_research_timeout_exits_3_with_a_resume_hint_and_the_run_goes_on(live_server, token, samples):
    # The client's 1 ms budget is spent by the start request itself, so the report it gets back is
    # still QUEUED when the deadline is checked.
    result = deepcite(
        "research",
        PROMPT,
        "--corpus",
        str(samples.pk),
        "--timeout",
        "0.001",
        "--json",
        url=live_server.url,
        token=token,
    )

    assert result.returncode == 3, result.stderr
    body = json.loads(result.stdout)
    assert set(body) == REPORT_JSON_FIELDS
    assert body["status"] == "QUEUED"
    assert (body["result"], body["citations"], body["answers"], body["conjunctions"]) == ("", [], [], [])
    assert "[timeout]" in result.stderr
    assert f"deepcite resume {body['task_id']}" in result.stderr
    # The client's timeout does not stop the server's run.
    assert in_process_pool.wait(timeout=60)
    report = ResearchReport.objects.get(pk=decode_id(body["task_id"], "ResearchReport"))
    assert report.status == ReportStatus.COMPLETED


def test_resume_times_out_on_a_report_no_worker_has_taken(live_server, token, user, samples):
    report = queued_report(user, samples)
    task_id = encode_id("ResearchReport", report.pk)

    result = deepcite(
        "resume", task_id, "--timeout", "0.5", "--poll", "0.1", url=live_server.url, token=token
    )

    assert result.returncode == 3
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == (
        f"deepcite: [timeout] stopped waiting after 0.5 s; report {task_id} was still queued and keeps "
        f"running on the server; resume waiting with: deepcite resume {task_id}"
    )
    report.refresh_from_db()
    assert report.status == ReportStatus.QUEUED


def test_cancel_ends_a_queued_report_and_a_second_cancel_is_refused(live_server, token, user, samples):
    report = queued_report(user, samples)
    task_id = encode_id("ResearchReport", report.pk)

    result = deepcite("cancel", task_id, "--json", url=live_server.url, token=token)

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"task_id": task_id, "status": "CANCELLED"}
    report.refresh_from_db()
    assert report.status == ReportStatus.CANCELLED

    again = deepcite("cancel", str(report.pk), url=live_server.url, token=token)

    assert again.returncode == 1
    assert again.stderr == "deepcite: [report_not_cancellable] the report is already cancelled (id)\n"


def test_resume_restarts_a_cancelled_report_which_then_completes(live_server, token, user, samples):
    report = queued_report(user, samples)
    assert deepcite("cancel", str(report.pk), url=live_server.url, token=token).returncode == 0

    result = deepcite("resume", str(report.pk), "--json", "--timeout", "60", url=live_server.url, token=token)

    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert printed["task_id"] == encode_id("ResearchReport", report.pk)
    assert printed["status"] == "COMPLETED"
    assert "resumed report" in result.stderr
    report.refresh_from_db()
    assert report.status == ReportStatus.COMPLETED and "resumed" in report.warnings


def test_list_json_prints_the_latest_n_reports(live_server, token, user, samples):
    oldest = queued_report(user, samples, title="First")
    ResearchReport.objects.filter(pk=oldest.pk).update(status=ReportStatus.CANCELLED)
    middle = queued_report(user, samples, title="Second")
    ResearchReport.objects.filter(pk=middle.pk).update(status=ReportStatus.CANCELLED)
    newest = queued_report(user, samples, title="Third")

    result = deepcite("list", "2", "--json", url=live_server.url, token=token)

    assert result.returncode == 0, result.stderr
    reports = json.loads(result.stdout)
    assert [(r["task_id"], r["status"], r["title"]) for r in reports] == [
        (encode_id("ResearchReport", newest.pk), "QUEUED", "Third"),
        (encode_id("ResearchReport", middle.pk), "CANCELLED", "Second"),
    ]
    assert set(reports[0]) == {
        "task_id",
        "status",
        "depth",
        "title",
        "created",
        "duration_seconds",
        "corpus_id",
    }
    assert reports[0]["corpus_id"] == encode_id("Corpus", samples.pk)


def test_list_table_shows_the_reports(live_server, token, user, samples):
    report = queued_report(user, samples, title="Third")

    result = deepcite("list", url=live_server.url, token=token)

    assert result.returncode == 0, result.stderr
    assert encode_id("ResearchReport", report.pk) in result.stdout
    assert "queued" in result.stdout


def test_names_and_titles_holding_markup_are_printed_as_written(live_server, token, user):
    # given a corpus and a report whose names hold what Rich would read as markup
    corpus = corpus_create(creator=user, name="[bold red]Rich[/bold red] [/] name")
    queued_report(user, corpus, title="What does [/] mean?")

    # when both tables are printed
    corpora = deepcite("corpora", url=live_server.url, token=token)
    reports = deepcite("list", url=live_server.url, token=token)

    # then each is printed as written, with no traceback
    assert (corpora.returncode, reports.returncode) == (0, 0), corpora.stderr + reports.stderr
    assert "[bold red]Rich[/bold red] [/] name" in corpora.stdout
    assert "What does [/]" in reports.stdout and "mean?" in reports.stdout  # the title column folds


def test_a_bad_token_exits_1_with_invalid_token(live_server, token, samples):
    result = deepcite("corpora", url=live_server.url, token="dc_not-a-real-token")

    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (
        "deepcite: [invalid_token] the API token is missing, unknown, expired or revoked\n"
    )


def test_the_token_flag_overrides_the_environment(live_server, token, samples):
    result = deepcite("--token", token, "corpora", "--json", url=live_server.url, token="dc_wrong")

    assert result.returncode == 0, result.stderr
    assert [c["name"] for c in json.loads(result.stdout)] == ["Samples"]


def test_a_missing_token_is_a_usage_error(live_server, samples):
    result = deepcite("corpora", url=live_server.url, token=None)

    assert result.returncode == 2
    assert result.stderr.startswith("deepcite: [missing_token] ")


def test_a_missing_url_is_a_usage_error(token):
    result = deepcite("corpora", url=None, token=token)

    assert result.returncode == 2
    assert result.stderr.startswith("deepcite: [missing_url] ")


def test_bad_arguments_are_a_usage_error(live_server, token):
    result = deepcite("research", "no corpus given", url=live_server.url, token=token)

    assert result.returncode == 2
    assert "--corpus" in result.stderr


@pytest.mark.parametrize("corpus", ["999999", "No such corpus"])
def test_an_unknown_corpus_exits_1_with_corpus_not_found(live_server, token, samples, corpus):
    # by id the server says so, by name the client: the same code and exit either way
    result = deepcite("research", PROMPT, "--corpus", corpus, url=live_server.url, token=token)

    assert result.returncode == 1
    assert result.stderr.startswith("deepcite: [corpus_not_found] ")
    assert result.stderr.count("\n") == 1
    assert not ResearchReport.objects.exists()


def test_resume_of_an_unknown_report_exits_1(live_server, token, samples):
    result = deepcite("resume", encode_id("ResearchReport", 999999), url=live_server.url, token=token)

    assert result.returncode == 1
    assert result.stderr.startswith("deepcite: [report_not_found] ")


def test_an_unreachable_server_exits_1_with_connection_failed(token):
    result = deepcite("corpora", url="http://127.0.0.1:9", token=token)

    assert result.returncode == 1
    assert result.stderr.startswith("deepcite: [connection_failed] cannot reach http://127.0.0.1:9/graphql")


def test_research_takes_per_request_breadth_and_time_limit_and_shows_the_stages(live_server, token, samples):
    result = deepcite(
        "research",
        "Research liability caps, governing law and termination",
        "--corpus",
        str(samples.pk),
        "--breadth",
        "2",
        "--time-limit",
        "120",
        "--json",
        "--poll",
        "0.1",
        url=live_server.url,
        token=token,
    )

    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    report = ResearchReport.objects.get(pk=decode_id(body["task_id"], "ResearchReport"))
    assert (report.breadth, report.time_limit_seconds, len(report.plan)) == (2, 120, 2)
    assert body["strategy"] == "deep"
    # the last progress line on stderr is the ending, with the run's findings
    lines = [line for line in result.stderr.splitlines() if line.startswith(body["task_id"])]
    assert lines[-1].startswith(f"{body['task_id']}: completed")
    assert f"{len(report.findings)} finding" in lines[-1]


def test_research_refuses_a_model_the_server_does_not_offer(live_server, token, samples):
    result = deepcite(
        "research",
        "x",
        "--corpus",
        str(samples.pk),
        "--model",
        "openai:gpt-5-pro",
        url=live_server.url,
        token=token,
    )
    assert result.returncode == 1
    assert "[model_not_allowed]" in result.stderr
    assert ResearchReport.objects.count() == 0


def test_the_progress_text_counts_the_documents_swept_and_read_again():
    from cli.output import progress_text

    report = {
        "status": "RUNNING",
        "progress": {
            "phase": "rereading",
            "documentsSwept": 61,
            "documentsTotal": 61,
            "documentsReread": 3,
            "findingsCount": 2,
            "sourcesCount": 1,
        },
    }
    text = progress_text(report, 9.2)
    assert text == "running · rereading · 61/61 documents · 3 read again · 2 findings · 1 source · 9s"


def test_control_characters_stored_in_names_never_reach_the_terminal(live_server, token, user):
    # given rows stored before names were cleaned, holding escape sequences and a bidi override
    corpus = corpus_create(creator=user, name="Team docs")
    Corpus.objects.filter(pk=corpus.pk).update(name="Team docs\x1b]0;owned\x07\x1b[2J")
    report = queued_report(user, corpus, title="Q3")
    ResearchReport.objects.filter(pk=report.pk).update(title="Q3 \u202eslx.exe\x9b2J")

    # when the tables and the JSON are printed
    printed = [
        deepcite("corpora", url=live_server.url, token=token),
        deepcite("list", url=live_server.url, token=token),
        deepcite("corpora", "--json", url=live_server.url, token=token),
        deepcite("list", "--json", url=live_server.url, token=token),
    ]

    # then each control character is shown as U+FFFD, and the JSON escapes them, same values
    assert [r.returncode for r in printed] == [0, 0, 0, 0], [r.stderr for r in printed]
    corpora, reports, corpora_json, reports_json = (r.stdout for r in printed)
    for stdout in (corpora, reports, corpora_json, reports_json):
        assert not set(stdout) & {"\x1b", "\x07", "\x9b", "\u202e"}
    assert "Team docs\ufffd]0;owned\ufffd\ufffd[2J" in corpora
    assert "Q3 \ufffdslx.exe\ufffd2J" in reports
    assert json.loads(corpora_json)[0]["name"] == "Team docs\x1b]0;owned\x07\x1b[2J"
    assert json.loads(reports_json)[0]["title"] == "Q3 \u202eslx.exe\x9b2J"

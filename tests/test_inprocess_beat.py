"""Without a broker, the web process runs the beat's jobs itself on the back of its requests
(tasks.inprocess): a run left RUNNING by a stopped server is resumed, and passages left
unembedded are embedded."""

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from corpora.embedding import get_embedder
from corpora.models import Passage
from research.models import ReportStatus, ResearchReport
from research.services import report_start
from tasks.embeddings import in_process_worker
from tasks.inprocess import beat
from tasks.research import in_process_pool
from tests.factories import ingest_samples

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def ticking(settings):
    settings.INPROCESS_BEAT = True
    beat.reset()
    yield
    beat.reset()


def _left_running_by_a_stopped_server(user, corpus) -> tuple[ResearchReport, list[dict]]:
    """A run its server stopped under before it wrote its report: RUNNING, its findings and
    checkpoint kept, no progress for an hour."""
    report = report_start(user=user, corpus=corpus, prompt="What limits the liability of the supplier?")
    assert in_process_pool.wait(timeout=120)
    findings = ResearchReport.objects.get(pk=report.pk).findings
    past = timezone.now() - timedelta(hours=1)
    ResearchReport.objects.filter(pk=report.pk).update(
        status=ReportStatus.RUNNING,
        content="",
        citations=[],
        completed_at=None,
        finalized_at=None,
        lease_token="gone-with-its-server",
        lease_expires_at=past,
        last_progress_at=past,
        updated=past,
    )
    report.cited_passages.clear()
    report.cited_documents.clear()
    return report, findings


def test_a_run_a_stopped_server_left_running_is_resumed_on_the_next_request(user, corpus, ticking):
    ingest_samples(corpus)
    report, findings = _left_running_by_a_stopped_server(user, corpus)
    assert findings
    browser = Client()
    browser.force_login(user)
    # when the user opens the report page (any request would do)
    assert browser.get(reverse("research:report-detail", args=[report.slug])).status_code == 200
    # then the reaper has resumed it, and it ends with the findings from before the stop
    assert in_process_pool.wait(timeout=120)
    stored = ResearchReport.objects.get(pk=report.pk)
    assert (stored.status, stored.retry_count) == (ReportStatus.COMPLETED, 1)
    assert [f["id"] for f in findings] == [f["id"] for f in stored.findings[: len(findings)]]
    assert stored.citations
    # and a new run on the corpus is no longer refused as one in progress
    report_start(user=user, corpus=corpus, prompt="When can the licence agreement be terminated?")
    assert in_process_pool.wait(timeout=120)


def test_the_beat_runs_each_job_once_per_interval_and_never_with_a_broker(user, corpus, ticking, settings):
    ingest_samples(corpus)
    report, _findings = _left_running_by_a_stopped_server(user, corpus)
    ResearchReport.objects.filter(pk=report.pk).update(status=ReportStatus.CANCELLING)
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/15"
    assert beat.tick() == {}  # a broker's beat runs them
    settings.CELERY_BROKER_URL = ""
    first = beat.tick()
    assert first["reap_stalled"] == {"resumed": 0, "failed": 0, "cancelled": 1, "requeued": 0}
    assert ResearchReport.objects.get(pk=report.pk).status == ReportStatus.CANCELLED
    assert beat.tick() == {}  # not due again within its interval


def test_passages_left_unembedded_are_embedded_on_the_next_request(user, corpus, ticking, settings):
    # given passages ingested while no embedder ran (a server stopped mid-upload)
    ingest_samples(corpus, schedule_embedding=False)
    settings.EMBEDDING_BACKEND = "minilm"
    embedder = get_embedder()
    assert Passage.objects.filter(corpus=corpus).exclude(embedding_model=embedder.name).exists()
    browser = Client()
    browser.force_login(user)
    # when any page is requested
    browser.get(reverse("home"))
    in_process_worker.join()
    # then they are embedded
    assert not Passage.objects.filter(corpus=corpus).exclude(embedding_model=embedder.name).exists()

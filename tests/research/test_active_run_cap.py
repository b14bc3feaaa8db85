"""RESEARCH_MAX_ACTIVE_RUNS_PER_USER: one user's queued and running research across corpora is
capped; another user, a finished run and a cancelled one do not count; resuming counts."""

import pytest
from django.db import connection

from corpora.services import corpus_create
from research.exceptions import TooManyActiveRuns
from research.models import ReportStatus, ResearchReport
from research.services import report_cancel, report_resume, report_start
from tasks.research import in_process_pool
from tests.research.races import starts_at_once


@pytest.fixture
def corpora(user):
    return [corpus_create(creator=user, name=f"Room {i}") for i in range(4)]


def test_a_user_at_the_cap_cannot_start_another_run_on_any_corpus(user, corpora, settings):
    settings.RESEARCH_MAX_ACTIVE_RUNS_PER_USER = 2
    report_start(user=user, corpus=corpora[0], prompt="Research liability caps")
    report_start(user=user, corpus=corpora[1], prompt="Research liability caps")
    with pytest.raises(TooManyActiveRuns) as refused:
        report_start(user=user, corpus=corpora[2], prompt="Research liability caps")
    assert (refused.value.code, refused.value.field) == ("too_many_active_runs", "corpus_id")
    assert "2 research runs in progress" in refused.value.message
    assert ResearchReport.objects.filter(creator=user).count() == 2


def test_another_users_runs_do_not_count(user, other_user, corpora, settings):
    settings.RESEARCH_MAX_ACTIVE_RUNS_PER_USER = 1
    theirs = corpus_create(creator=other_user, name="Theirs")
    report_start(user=other_user, corpus=theirs, prompt="Research liability caps")
    assert report_start(user=user, corpus=corpora[0], prompt="Research liability caps").status == "QUEUED"


def test_a_cancelled_run_frees_its_place(user, corpora, settings):
    settings.RESEARCH_MAX_ACTIVE_RUNS_PER_USER = 1
    first = report_start(user=user, corpus=corpora[0], prompt="Research liability caps")
    with pytest.raises(TooManyActiveRuns):
        report_start(user=user, corpus=corpora[1], prompt="Research liability caps")
    assert report_cancel(user=user, report_id=first.pk).status == ReportStatus.CANCELLED
    assert report_start(user=user, corpus=corpora[1], prompt="Research liability caps").status == "QUEUED"


def test_resuming_counts_towards_the_cap(user, corpora, settings):
    settings.RESEARCH_MAX_ACTIVE_RUNS_PER_USER = 1
    first = report_start(user=user, corpus=corpora[0], prompt="Research liability caps")
    report_cancel(user=user, report_id=first.pk)
    report_start(user=user, corpus=corpora[1], prompt="Research liability caps")
    with pytest.raises(TooManyActiveRuns) as refused:
        report_resume(user=user, report_id=first.pk)
    assert refused.value.field == "id"
    assert ResearchReport.objects.get(pk=first.pk).status == ReportStatus.CANCELLED


def test_a_cap_of_zero_is_no_cap(user, corpora, settings):
    settings.RESEARCH_MAX_ACTIVE_RUNS_PER_USER = 0
    for corpus in corpora:
        report_start(user=user, corpus=corpus, prompt="Research liability caps")
    assert ResearchReport.objects.filter(creator=user, status=ReportStatus.QUEUED).count() == len(corpora)


@pytest.mark.django_db(transaction=True)
def test_simultaneous_starts_on_different_corpora_respect_the_cap(user, settings):
    if connection.vendor != "postgresql":
        pytest.skip("the race is checked on PostgreSQL, where starts really run in parallel")
    settings.RESEARCH_MAX_ACTIVE_RUNS_PER_USER = 2
    settings.RESEARCH_MODEL = "offline"
    rooms = [corpus_create(creator=user, name=f"Race {i}") for i in range(8)]
    outcomes = starts_at_once(
        [{"user": user, "corpus": room, "prompt": "Research liability caps"} for room in rooms],
        {TooManyActiveRuns: "capped"},
    )
    assert in_process_pool.wait(timeout=60)
    assert sorted(outcomes) == ["capped"] * 6 + ["created"] * 2

import itertools

import pytest

from research.exceptions import TransitionLost, TransitionNotAllowed
from research.lifecycle import ALLOWED_TRANSITIONS, report_transition
from research.models import ReportStatus, ResearchReport

ALL_EDGES = list(itertools.product(ReportStatus.values, repeat=2))
ALLOWED = [(a, b) for a, b in ALL_EDGES if b in ALLOWED_TRANSITIONS[a]]
FORBIDDEN = [(a, b) for a, b in ALL_EDGES if b not in ALLOWED_TRANSITIONS[a]]


def _at(report: ResearchReport, status: str) -> ResearchReport:
    ResearchReport.objects.filter(pk=report.pk).update(status=status)
    report.refresh_from_db()
    return report


def test_the_table_names_every_status_and_only_resume_leaves_a_terminal_state():
    assert set(ALLOWED_TRANSITIONS) == set(ReportStatus.values)
    assert ALLOWED_TRANSITIONS[ReportStatus.COMPLETED] == frozenset()
    assert ALLOWED_TRANSITIONS[ReportStatus.FAILED] == {ReportStatus.QUEUED}
    assert ALLOWED_TRANSITIONS[ReportStatus.CANCELLED] == {ReportStatus.QUEUED}
    assert len(ALLOWED) == 12


@pytest.mark.parametrize(("from_", "to"), ALLOWED)
def test_allowed_transition_changes_status_and_stamps_times(report, from_, to):
    # given a report in `from_`
    report = _at(report, from_)
    # when
    report_transition(report=report, to=to)
    # then
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == to
    if to == ReportStatus.RUNNING:
        assert stored.started_at is not None and stored.last_progress_at is not None
    if to in (ReportStatus.COMPLETED, ReportStatus.FAILED, ReportStatus.CANCELLED):
        assert stored.completed_at is not None


@pytest.mark.parametrize(("from_", "to"), FORBIDDEN)
def test_forbidden_transition_raises_and_changes_nothing(report, from_, to):
    report = _at(report, from_)
    with pytest.raises(TransitionNotAllowed) as error:
        report_transition(report=report, to=to)
    assert error.value.code == "transition_not_allowed"
    stored = ResearchReport.objects.get(pk=report.pk)
    assert stored.status == from_
    assert stored.completed_at is None


def test_a_stale_status_loses_the_compare_and_set(report):
    # given two copies of a QUEUED report, one of which starts it
    stale = ResearchReport.objects.get(pk=report.pk)
    report_transition(report=report, to=ReportStatus.RUNNING)
    # when the stale copy tries to cancel from QUEUED
    with pytest.raises(TransitionLost) as error:
        report_transition(report=stale, to=ReportStatus.CANCELLED)
    # then the first writer's status stands
    assert error.value.code == "transition_lost"
    assert ResearchReport.objects.get(pk=report.pk).status == ReportStatus.RUNNING

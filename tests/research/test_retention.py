"""Retention: finished reports older than REPORT_RETENTION_DAYS go with their logs and
notifications, read notifications as old go, and nothing else: not a recent report, not a run
still active however old, not an unread notification. `manage.py purge --dry-run` lists and
deletes nothing; the daily beat task does nothing while retention is off."""

from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from notifications.models import Notification, NotificationKind
from research.models import ReportStatus, ResearchReport
from research.retention import reports_purge
from tasks.research import purge_expired_reports
from tasks.schedule import BEAT_SCHEDULE
from tests.factories import queued_report


def aged(report: ResearchReport, *, days: int, status: str, ended: bool = True) -> ResearchReport:
    then = timezone.now() - timedelta(days=days)
    ResearchReport.objects.filter(pk=report.pk).update(
        status=status, created=then, completed_at=then if ended else None, tool_call_log=[{"tool": "search"}]
    )
    return ResearchReport.objects.get(pk=report.pk)


def notify(user, report=None, *, read_days_ago: int | None = None) -> Notification:
    notification = Notification.objects.create(
        recipient=user, kind=NotificationKind.RESEARCH_REPORT_COMPLETED, report=report
    )
    if read_days_ago is not None:
        Notification.objects.filter(pk=notification.pk).update(
            read_at=timezone.now() - timedelta(days=read_days_ago)
        )
    return notification


@pytest.fixture
def reports(user, corpus):
    make = lambda title: queued_report(user, corpus, title)  # noqa: E731
    return {
        "old_done": aged(make("Old done"), days=40, status=ReportStatus.COMPLETED),
        "old_failed_unstarted": aged(make("Old failed"), days=40, status=ReportStatus.FAILED, ended=False),
        "recent_done": aged(make("Recent done"), days=5, status=ReportStatus.COMPLETED),
        "old_running": aged(make("Old running"), days=40, status=ReportStatus.RUNNING, ended=False),
    }


def test_old_finished_reports_go_with_their_notifications_and_nothing_else(user, reports):
    on_old = notify(user, reports["old_done"])
    unread = notify(user)
    old_read = notify(user, read_days_ago=31)
    recent_read = notify(user, read_days_ago=3)

    result = reports_purge(days=30)

    left = set(ResearchReport.objects.values_list("title", flat=True))
    assert left == {"Recent done", "Old running"}
    assert sorted(title for _, title in result.reports) == ["Old done", "Old failed"]
    remaining = set(Notification.objects.values_list("pk", flat=True))
    assert remaining == {unread.pk, recent_read.pk}
    assert on_old.pk not in remaining and old_read.pk not in remaining
    assert result.notifications == 1  # the old read one; the report's went with the report


def test_batches_of_one_take_every_expired_report(user, corpus):
    for i in range(3):
        aged(queued_report(user, corpus, f"Old {i}"), days=90, status=ReportStatus.CANCELLED)
    result = reports_purge(days=30, batch_size=1)
    assert len(result.reports) == 3 and not ResearchReport.objects.exists()


def test_a_report_resumed_after_it_ended_is_not_expired(user, corpus):
    # an old failed report resumed (queued again) keeps its old completion time for a while
    report = aged(queued_report(user, corpus, "Resumed"), days=90, status=ReportStatus.QUEUED)
    assert report.completed_at is not None
    assert reports_purge(days=30).reports == []
    assert ResearchReport.objects.filter(pk=report.pk).exists()


def test_dry_run_lists_and_deletes_nothing(user, reports, capsys, settings):
    settings.REPORT_RETENTION_DAYS = 30
    call_command("purge", "--dry-run")
    out = capsys.readouterr().out
    assert out.startswith("Would delete 2 finished report(s) that ended before ")
    assert f"  {reports['old_done'].slug}  Old done" in out
    assert ResearchReport.objects.count() == 4
    call_command("purge")
    assert capsys.readouterr().out.startswith("Deleted 2 finished report(s)")
    assert ResearchReport.objects.count() == 2


def test_with_retention_off_the_command_and_the_beat_task_delete_nothing(reports, capsys, settings):
    settings.REPORT_RETENTION_DAYS = 0
    call_command("purge")
    assert "Retention is off" in capsys.readouterr().out
    assert purge_expired_reports() == {"reports": 0, "notifications": 0}
    assert ResearchReport.objects.count() == 4
    call_command("purge", "--days", "30")  # an explicit --days works with the setting off
    assert ResearchReport.objects.count() == 2


def test_the_beat_task_purges_daily_when_retention_is_on(reports, settings):
    assert BEAT_SCHEDULE["purge-expired-reports"] == {"task": "research.purge_expired", "schedule": 86400}
    settings.REPORT_RETENTION_DAYS = 30
    assert purge_expired_reports() == {"reports": 2, "notifications": 0}


@pytest.mark.parametrize(
    "arguments", [["--days", "0"], ["--days", "-3"], ["--days", "5", "--batch-size", "0"]]
)
def test_bad_arguments_are_clear_errors(db, arguments):
    with pytest.raises(CommandError, match=r"\[(days|batch_size)_invalid\]"):
        call_command("purge", *arguments)

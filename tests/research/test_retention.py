"""Retention: finished reports older than REPORT_RETENTION_DAYS go with their logs and
notifications, read notifications as old go, and nothing else: not a recent report, not a run
still active however old (nor one resumed between the selection and the delete), not an unread
notification. `manage.py purge --dry-run` lists and deletes nothing; the daily beat task does
nothing while retention is off."""

from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from config.celery_app import app
from notifications.models import Notification, NotificationKind
from research.models import ReportStatus, ResearchReport
from research.retention import reports_delete_finished, reports_expired, reports_purge
from tasks.research import purge_expired_reports
from tasks.schedule import BEAT_SCHEDULE
from tests.factories import queued_report


def aged(report: ResearchReport, *, days: int, status: str, ended: bool = True) -> ResearchReport:
    then = timezone.now() - timedelta(days=days)
    ResearchReport.objects.filter(pk=report.pk).update(
        status=status,
        created=then,
        completed_at=then if ended else None,
        findings=[{"id": 1}, {"id": 2}],
        citations=[{"footnote": 1}],
        tool_call_log=[{"tool": "search"}] * 3,
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
    on_old_read = notify(user, reports["old_done"], read_days_ago=35)
    on_running = notify(user, reports["old_running"], read_days_ago=2)
    unread = notify(user)
    old_read = notify(user, read_days_ago=31)
    recent_read = notify(user, read_days_ago=3)

    result = reports_purge(days=30)

    left = set(ResearchReport.objects.values_list("title", flat=True))
    assert left == {"Recent done", "Old running"}
    assert sorted(title for _, title in result.reports) == ["Old done", "Old failed"]
    remaining = set(Notification.objects.values_list("pk", flat=True))
    assert remaining == {unread.pk, recent_read.pk, on_running.pk}
    assert {on_old.pk, on_old_read.pk, old_read.pk}.isdisjoint(remaining)
    assert (result.report_notifications, result.read_notifications) == (2, 1)
    assert result.contents == {"findings": 4, "citations": 2, "tool_calls": 6}  # in the two rows gone


def test_batches_of_one_take_every_expired_report(user, corpus):
    for i in range(3):
        aged(queued_report(user, corpus, f"Old {i}"), days=90, status=ReportStatus.CANCELLED)
    with CaptureQueriesContext(connection) as queries:
        result = reports_purge(days=30, batch_size=1)
    assert len(result.reports) == 3 and not ResearchReport.objects.exists()
    assert result.contents == {"findings": 6, "citations": 3, "tool_calls": 9}
    deletes = [q["sql"] for q in queries if q["sql"].startswith('DELETE FROM "research_researchreport"')]
    assert len(deletes) == 3  # one batch, one report, per statement


def test_a_report_resumed_between_selection_and_delete_stays(user, corpus):
    report = aged(queued_report(user, corpus, "Resumed"), days=90, status=ReportStatus.FAILED)
    selected = list(reports_expired(cutoff=timezone.now()).values_list("pk", flat=True))
    assert selected == [report.pk]
    # resumed (as report_resume does) after the purge chose it, before it deletes
    ResearchReport.objects.filter(pk=report.pk).update(status=ReportStatus.QUEUED)
    deleted = reports_delete_finished(report_ids=selected)
    assert deleted.reports == [] and deleted.notifications == 0
    assert ResearchReport.objects.get(pk=report.pk).status == ReportStatus.QUEUED


def test_a_report_resumed_after_it_ended_is_not_expired(user, corpus):
    # an old failed report resumed (queued again) keeps its old completion time for a while
    report = aged(queued_report(user, corpus, "Resumed"), days=90, status=ReportStatus.QUEUED)
    assert report.completed_at is not None
    assert reports_purge(days=30).reports == []
    assert ResearchReport.objects.filter(pk=report.pk).exists()


def test_dry_run_lists_and_deletes_nothing(user, reports, capsys, settings):
    settings.REPORT_RETENTION_DAYS = 30
    notify(user, reports["old_done"], read_days_ago=35)
    notify(user, read_days_ago=31)
    notify(user)
    call_command("purge", "--dry-run")
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Would delete, ended or read before ")
    assert out[1:5] == [
        "  2 finished report(s)",
        "  4 finding(s), 2 citation(s) and 6 tool call(s) logged in those reports",
        "  1 notification(s) of those reports",
        "  1 other read notification(s)",
    ]
    assert sorted(out[5:]) == sorted(
        f"  - {reports[key].slug}  {reports[key].title}" for key in ("old_done", "old_failed_unstarted")
    )
    assert (ResearchReport.objects.count(), Notification.objects.count()) == (4, 3)

    call_command("purge")  # the same numbers, deleted
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Deleted, ended or read before ") and out[1:5] == [
        "  2 finished report(s)",
        "  4 finding(s), 2 citation(s) and 6 tool call(s) logged in those reports",
        "  1 notification(s) of those reports",
        "  1 other read notification(s)",
    ]
    assert (ResearchReport.objects.count(), Notification.objects.count()) == (2, 1)


def test_a_title_prints_on_its_own_line_without_control_characters(user, corpus, capsys):
    aged(queued_report(user, corpus, "Evil\x1b[2J\nDeleted 0"), days=40, status=ReportStatus.COMPLETED)
    call_command("purge", "--days", "30", "--dry-run")
    out = capsys.readouterr().out
    assert "\x1b" not in out and out.splitlines()[-1].endswith("  Evil [2J Deleted 0")


def test_with_retention_off_the_command_and_the_beat_task_delete_nothing(reports, capsys, settings):
    settings.REPORT_RETENTION_DAYS = 0
    call_command("purge")
    assert "Retention is off" in capsys.readouterr().out
    assert purge_expired_reports() == {"reports": 0, "report_notifications": 0, "read_notifications": 0}
    assert ResearchReport.objects.count() == 4
    call_command("purge", "--days", "30")  # an explicit --days works with the setting off
    assert ResearchReport.objects.count() == 2


def test_the_beat_task_purges_daily_when_retention_is_on(reports, settings):
    assert BEAT_SCHEDULE["purge-expired-reports"] == {"task": "research.purge_expired", "schedule": 86400}
    # what beat sends, a worker knows
    assert app.conf.beat_schedule["purge-expired-reports"]["task"] in app.tasks
    settings.REPORT_RETENTION_DAYS = 30
    assert purge_expired_reports() == {"reports": 2, "report_notifications": 0, "read_notifications": 0}
    assert set(ResearchReport.objects.values_list("title", flat=True)) == {"Recent done", "Old running"}


@pytest.mark.parametrize(
    "arguments", [["--days", "0"], ["--days", "-3"], ["--days", "5", "--batch-size", "0"]]
)
def test_bad_arguments_are_clear_errors(db, arguments):
    message = r"^\[retention_invalid\] the (number of days to keep|batch size) must be positive$"
    with pytest.raises(CommandError, match=message):
        call_command("purge", *arguments)

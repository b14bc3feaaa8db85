"""manage.py purge [--days N] [--dry-run] [--batch-size N]: delete finished research reports
older than the retention (REPORT_RETENTION_DAYS, or --days) with their logs and notifications,
and read notifications as old; --dry-run lists what would go and deletes nothing."""

from django.conf import settings
from django.core.management.base import BaseCommand

from corpora.management.commands._cli import fail
from research.exceptions import RetentionInvalid
from research.retention import DEFAULT_BATCH_SIZE, PurgeResult, reports_purge


class Command(BaseCommand):
    help = __doc__.split("\n\n")[0]

    def add_arguments(self, parser) -> None:
        parser.add_argument("--days", type=int, help="keep this many days (default: REPORT_RETENTION_DAYS)")
        parser.add_argument("--dry-run", action="store_true", help="list what would go; delete nothing")
        parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help="rows per transaction")

    def handle(self, *args, days, dry_run, batch_size, **options) -> None:
        if days is None and settings.REPORT_RETENTION_DAYS <= 0:
            self.stdout.write("Retention is off (REPORT_RETENTION_DAYS is 0): nothing deleted.")
            return
        try:
            result = reports_purge(
                days=settings.REPORT_RETENTION_DAYS if days is None else days,
                batch_size=batch_size,
                dry_run=dry_run,
            )
        except RetentionInvalid as error:
            raise fail(error) from error
        self.stdout.write(purge_summary(result, dry_run=dry_run))


def purge_summary(result: PurgeResult, *, dry_run: bool) -> str:
    verb = "Would delete" if dry_run else "Deleted"
    lines = [
        f"{verb}, ended or read before {result.cutoff:%Y-%m-%d %H:%M} UTC:",
        f"  {len(result.reports)} finished report(s)",
        f"  {result.contents['findings']} finding(s), {result.contents['citations']} citation(s) and "
        f"{result.contents['tool_calls']} tool call(s) logged in those reports",
        f"  {result.report_notifications} notification(s) of those reports",
        f"  {result.read_notifications} other read notification(s)",
    ]
    lines += [f"  - {slug}  {_printable(title)}" for slug, title in result.reports]
    return "\n".join(lines)


def _printable(text: str) -> str:
    # A title is anyone's text: no terminal escape sequence or line break of its own.
    return "".join(c if c.isprintable() else " " for c in text)

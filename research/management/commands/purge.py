"""manage.py purge [--days N] [--dry-run] [--batch-size N]: delete finished research reports
older than the retention (REPORT_RETENTION_DAYS, or --days) with their logs and notifications,
and read notifications as old; --dry-run lists what would go and deletes nothing."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from research.retention import DEFAULT_BATCH_SIZE, reports_purge


class Command(BaseCommand):
    help = __doc__.split("\n\n")[0]

    def add_arguments(self, parser) -> None:
        parser.add_argument("--days", type=int, help="keep this many days (default: REPORT_RETENTION_DAYS)")
        parser.add_argument("--dry-run", action="store_true", help="list what would go; delete nothing")
        parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help="rows per transaction")

    def handle(self, *args, days, dry_run, batch_size, **options) -> None:
        if days is None:
            days = settings.REPORT_RETENTION_DAYS
            if days <= 0:
                self.stdout.write("Retention is off (REPORT_RETENTION_DAYS is 0): nothing deleted.")
                return
        elif days <= 0:
            raise CommandError("[days_invalid] --days must be a positive number of days")
        if batch_size <= 0:
            raise CommandError("[batch_size_invalid] --batch-size must be positive")
        result = reports_purge(days=days, batch_size=batch_size, dry_run=dry_run)
        verb = "Would delete" if dry_run else "Deleted"
        self.stdout.write(
            f"{verb} {len(result.reports)} finished report(s) that ended before "
            f"{result.cutoff:%Y-%m-%d %H:%M} UTC, and {result.notifications} notification(s) "
            "read before then."
        )
        for slug, title in result.reports:
            self.stdout.write(f"  {slug}  {title}")

"""manage.py localaccount: for a first run on this machine (`make serve`), make sure the account
that owns what the command line creates (`--user`, default deepcite: the demo's corpus and
report) can sign in, and say how. A generated password is printed once."""

from django.conf import settings
from django.core.management.base import BaseCommand
from django.urls import reverse

from accounts.services import user_password_ensure
from research.models import ResearchReport


class Command(BaseCommand):
    help = "Give the command-line account a password if it has none, and print how to sign in."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--user", default=getattr(settings, "DEEPCITE_CLI_USER", "deepcite"))
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")

    def handle(self, *args, **options) -> None:
        username, base = options["user"], options["base_url"].rstrip("/")
        password = user_password_ensure(username=username)
        login = f"{base}{reverse('login')}"
        if password is None:
            self.stdout.write(f"Sign in at {login} as {username!r} with its password")
            self.stdout.write(f"  (forgotten? python manage.py changepassword {username})")
        else:
            self.stdout.write(f"Sign in at {login} as {username!r} with password {password}")
            self.stdout.write(f"  (shown once; change it with python manage.py changepassword {username})")
        latest = ResearchReport.objects.filter(creator__username=username).order_by("-created").first()
        if latest is not None:
            url = reverse("research:report-detail", kwargs={"slug": latest.slug})
            self.stdout.write(f"Your latest report: {base}{url}")

"""manage.py createapitoken USER: an API token for the GraphQL API and the `deepcite` client,
printed once (the database keeps its SHA-256 only)."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from accounts.services import TokenError, api_token_create

DEFAULT_NAME = "command line"


class Command(BaseCommand):
    help = "Create an API token for a user and print it once."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default=DEFAULT_NAME, help="what the token is for")
        parser.add_argument("--expires-days", type=int, metavar="N", help="stop working after N days")
        parser.add_argument("--read-only", action="store_true", help="queries only, no mutations")

    def handle(self, *args, **options) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"[user_not_found] no account {options['username']!r}")
        try:
            issued = api_token_create(
                user=user,
                name=options["name"],
                expires_in_days=options["expires_days"],
                read_only=options["read_only"],
            )
        except TokenError as error:
            raise CommandError(f"[{error.code}] {error.message}") from error
        self.stderr.write(
            f"token {issued.token.name!r} for {user.get_username()!r} (shown once; keep it secret):"
        )
        self.stdout.write(issued.secret)

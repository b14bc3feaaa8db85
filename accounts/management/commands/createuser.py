"""manage.py createuser USERNAME: a normal account that signs in with a password (not staff;
`createsuperuser` makes administrators). The password is asked twice, or read from the
environment variable --password-env names (for scripts)."""

import getpass
import os

from django.core.management.base import BaseCommand, CommandError

from accounts.services import AccountError, user_create


class Command(BaseCommand):
    help = "Create a normal account that signs in with a password."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--email", default="")
        parser.add_argument("--password-env", metavar="VAR", help="read the password from this variable")

    def handle(self, *args, **options) -> None:
        password = self._password(options["password_env"])
        try:
            user = user_create(username=options["username"], password=password, email=options["email"])
        except AccountError as error:
            raise CommandError(f"[{error.code}] {error.message}") from error
        self.stdout.write(f"created {user.get_username()!r}: sign in at /accounts/login/")

    def _password(self, variable: str | None) -> str:
        if variable:
            password = os.environ.get(variable, "")
            if not password:
                raise CommandError(f"[password_invalid] ${variable} is empty or not set")
            return password
        try:
            first = getpass.getpass("Password: ")
            again = getpass.getpass("Password (again): ")
        except EOFError as error:  # no terminal to ask on (a script, `docker compose run -T`)
            raise CommandError(
                "[password_invalid] no password given: run it in a terminal, or pass --password-env VAR"
            ) from error
        if first != again:
            raise CommandError("[password_invalid] the two passwords differ")
        return first

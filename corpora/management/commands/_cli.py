"""Shared pieces of the corpora management commands."""

import json
import sys

from django.conf import settings
from django.core.management.base import CommandError

from config.exceptions import ApplicationError
from corpora.exceptions import CorpusNotFound
from corpora.models import Corpus
from corpora.selectors import cli_user_get, corpus_get_for_user


def add_user_argument(parser) -> None:
    parser.add_argument(
        "--user",
        default=getattr(settings, "DEEPCITE_CLI_USER", "deepcite"),
        help="account that owns (or may read) the corpus (default: %(default)s)",
    )


def fail(error: ApplicationError) -> CommandError:
    """A clear one-line error with its code, never a traceback."""
    return CommandError(f"[{error.code}] {error.message}")


def dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def is_tty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def stderr_is_tty() -> bool:
    return is_tty(sys.stderr)


def corpus_for_cli(username: str, ref: str) -> Corpus:
    """The corpus a command names by name or numeric id, as the command's user may read it."""
    try:
        user = cli_user_get(username=username)
        if ref.isdigit():
            return corpus_get_for_user(user=user, corpus_id=int(ref))
        return corpus_get_for_user(user=user, name=ref)
    except CorpusNotFound as error:
        # A corpus made on the site is its user's: the commands act as --user (default deepcite).
        raise CommandError(
            f"[{error.code}] corpus {ref!r} not found for user {username!r}; "
            "name the account that owns or reads it with --user NAME"
        ) from error
    except ApplicationError as error:
        raise fail(error) from error

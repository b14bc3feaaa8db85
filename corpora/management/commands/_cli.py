"""Shared pieces of the corpora management commands."""

import json
import sys

from django.conf import settings
from django.core.management.base import CommandError

from config.exceptions import ApplicationError


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

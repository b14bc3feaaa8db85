"""The account commands a first run and an operator use: createuser, createapitoken, localaccount."""

import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command
from django.test import RequestFactory

from accounts.models import ApiToken
from accounts.services import api_token_authenticate
from corpora.services import cli_user_ensure

pytestmark = pytest.mark.django_db


def signs_in(username: str, password: str):
    """authenticate() as the sign-in page calls it (django-axes needs the request)."""
    return authenticate(RequestFactory().post("/accounts/login/"), username=username, password=password)


def test_createuser_makes_a_normal_account_that_signs_in(monkeypatch, capsys):
    monkeypatch.setenv("NEW_PASSWORD", "a long enough passphrase 42")
    call_command("createuser", "carol", "--email", "carol@example.org", "--password-env", "NEW_PASSWORD")
    user = get_user_model().objects.get(username="carol")
    assert (user.email, user.is_staff, user.is_superuser) == ("carol@example.org", False, False)
    assert signs_in("carol", "a long enough passphrase 42") == user
    assert "created 'carol'" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("password", "message"),
    [("", "[password_invalid] $NEW_PASSWORD is empty"), ("123", "[password_invalid]")],
    ids=["empty", "too-weak"],
)
def test_createuser_refuses_a_bad_password_and_creates_nothing(monkeypatch, password, message):
    monkeypatch.setenv("NEW_PASSWORD", password)
    with pytest.raises(CommandError) as error:
        call_command("createuser", "carol", "--password-env", "NEW_PASSWORD")
    assert str(error.value).startswith(message)
    assert not get_user_model().objects.filter(username="carol").exists()


def test_createuser_refuses_a_taken_username(user, monkeypatch):
    monkeypatch.setenv("NEW_PASSWORD", "a long enough passphrase 42")
    with pytest.raises(CommandError) as error:
        call_command("createuser", "alice", "--password-env", "NEW_PASSWORD")
    assert str(error.value).startswith("[user_exists]")


@pytest.mark.parametrize(
    ("username", "message"),
    [
        ("bad name!", "[username_invalid] Enter a valid username."),
        ("x" * 200, "[username_invalid] Ensure this value has at most 150 characters (it has 200)."),
        ("   ", "[username_invalid] This field cannot be blank."),
    ],
    ids=["characters", "too-long", "blank"],
)
def test_createuser_refuses_a_username_the_account_model_refuses(monkeypatch, username, message):
    monkeypatch.setenv("NEW_PASSWORD", "a long enough passphrase 42")
    with pytest.raises(CommandError) as error:
        call_command("createuser", username, "--password-env", "NEW_PASSWORD")
    assert str(error.value).startswith(message)
    assert not get_user_model().objects.exists()


def test_createuser_without_a_terminal_says_how_to_give_the_password():
    # a real process with nothing on stdin, as in a script or `docker compose run -T`
    done = subprocess.run(
        [sys.executable, "manage.py", "createuser", "carol"],
        cwd=settings.BASE_DIR,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"},
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().endswith(
        "CommandError: [password_invalid] no password given: run it in a terminal, or pass --password-env VAR"
    )


def test_createapitoken_prints_a_working_token_once(user, capsys):
    call_command("createapitoken", "alice", "--name", "laptop")
    out, err = capsys.readouterr()
    secret = out.strip()
    assert secret.startswith("dc_")
    assert "shown once" in err and secret not in err
    token = ApiToken.objects.get(user=user)
    assert token.name == "laptop" and secret not in (token.digest, token.prefix)
    assert api_token_authenticate(secret=secret) == user


def test_createapitoken_can_make_a_read_only_token_that_expires(user, capsys):
    call_command("createapitoken", "alice", "--name", "dashboard", "--read-only", "--expires-days", "7")
    secret = capsys.readouterr().out.strip()
    token = ApiToken.objects.get(user=user)
    assert token.read_only
    assert 6.9 < (token.expires_at - token.created).total_seconds() / 86400 <= 7
    assert api_token_authenticate(secret=secret) == user


def test_createapitoken_refuses_an_expiry_out_of_range(user):
    with pytest.raises(CommandError) as error:
        call_command("createapitoken", "alice", "--expires-days", "0")
    assert str(error.value).startswith("[token_expiry_invalid]")


def test_createapitoken_for_a_missing_user_is_one_line_with_a_code():
    with pytest.raises(CommandError) as error:
        call_command("createapitoken", "nobody")
    assert str(error.value) == "[user_not_found] no account 'nobody'"
    assert ApiToken.objects.count() == 0


def test_localaccount_gives_the_command_line_account_a_password_once(capsys):
    # given the account the command line made, with no password (as `make demo` leaves it)
    owner = cli_user_ensure(username="deepcite")
    assert not owner.has_usable_password()
    # when the first run's command runs twice
    call_command("localaccount")
    first = capsys.readouterr().out
    call_command("localaccount")
    second = capsys.readouterr().out
    # then a password was made and printed once, and it signs in
    password = first.split("with password ", 1)[1].split()[0]
    assert signs_in("deepcite", password) is not None
    assert "http://127.0.0.1:8000/accounts/login/" in first
    assert password not in second and "with its password" in second

"""Accounts and API tokens: accounts created with a validated password; tokens created (the
secret is returned once), checked, revoked."""

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.utils import timezone

from accounts.models import TOKEN_NAME_MAX_CHARS, ApiToken
from config.exceptions import ApplicationError
from config.text import name_clean

TOKEN_PREFIX = "dc_"  # noqa: S105 - a public marker, not a secret
TOKENS_PER_USER_MAX = 50
TOKEN_EXPIRY_MAX_DAYS = 3650
# last_used_at is refreshed at most this often, so a busy client does not write on every call.
LAST_USED_RESOLUTION_SECONDS = 60


class TokenError(ApplicationError):
    code = "token_error"


class TokenNameInvalid(TokenError):
    code = "token_name_invalid"


class TokenLimitReached(TokenError):
    code = "token_limit_reached"


class TokenNotFound(TokenError):
    code = "token_not_found"


class TokenExpiryInvalid(TokenError):
    code = "token_expiry_invalid"


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str  # shown once, never stored


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def api_token_create(
    *,
    user: AbstractBaseUser,
    name: str,
    expires_in_days: int | None = None,
    read_only: bool = False,
    issuer: ApiToken | None = None,
) -> IssuedToken:
    """A new token for `user`, expiring after `expires_in_days` (None: never); a read-only one
    can query but not run mutations. Made with a token (`issuer`, the request's bearer token),
    it expires no later than that token and is read-only if that one is: a short-lived or
    leaked token must not mint itself a stronger one."""
    # A NUL is refused, as at the API's door; other controls are dropped.
    refused = "\x00" in (name or "")
    name = name_clean(name)
    if refused or not name or len(name) > TOKEN_NAME_MAX_CHARS:
        raise TokenNameInvalid(f"a token name is 1 to {TOKEN_NAME_MAX_CHARS} characters", field="name")
    if expires_in_days is not None and (
        isinstance(expires_in_days, bool)
        or not isinstance(expires_in_days, int)
        or not 1 <= expires_in_days <= TOKEN_EXPIRY_MAX_DAYS
    ):
        raise TokenExpiryInvalid(
            f"a token expires in 1 to {TOKEN_EXPIRY_MAX_DAYS} days (or never)", field="expires_in_days"
        )
    live = ApiToken.objects.filter(user=user, revoked_at__isnull=True).filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now())
    )
    if live.count() >= TOKENS_PER_USER_MAX:
        raise TokenLimitReached(f"at most {TOKENS_PER_USER_MAX} active tokens; revoke one first")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    expires_at = None if expires_in_days is None else timezone.now() + timedelta(days=expires_in_days)
    if issuer is not None:
        read_only = read_only or issuer.read_only
        if issuer.expires_at is not None and (expires_at is None or expires_at > issuer.expires_at):
            expires_at = issuer.expires_at
    token = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=secret[:10],
        digest=_digest(secret),
        expires_at=expires_at,
        read_only=bool(read_only),
    )
    return IssuedToken(token=token, secret=secret)


def api_token_revoke(*, user: AbstractBaseUser, token_id: int) -> ApiToken:
    token = ApiToken.objects.filter(pk=token_id, user=user).first()
    if token is None:
        raise TokenNotFound("token not found", field="id")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def api_token_check(*, secret: str) -> ApiToken | None:
    """The live token a bearer secret is (not revoked, not expired, its user active), with its
    user loaded; None otherwise."""
    if not secret or not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
        return None
    now = timezone.now()
    token = (
        ApiToken.objects.select_related("user")
        .filter(digest=_digest(secret), revoked_at__isnull=True, user__is_active=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .first()
    )
    if token is None:
        return None
    if (
        token.last_used_at is None
        or (now - token.last_used_at).total_seconds() > LAST_USED_RESOLUTION_SECONDS
    ):
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


def api_token_authenticate(*, secret: str) -> AbstractBaseUser | None:
    """The active user a live bearer secret belongs to, or None."""
    token = api_token_check(secret=secret)
    return None if token is None else token.user


# --- Accounts ---------------------------------------------------------------------------------
class AccountError(ApplicationError):
    code = "account_error"


class UsernameTaken(AccountError):
    code = "user_exists"


class PasswordInvalid(AccountError):
    code = "password_invalid"


class UsernameInvalid(AccountError):
    code = "username_invalid"


class UserNotFound(AccountError):
    code = "user_not_found"


def user_create(*, username: str, password: str, email: str = "") -> AbstractBaseUser:
    """A normal account (not staff) that signs in with `password`, checked by the project's
    password validators."""
    user_model = get_user_model()
    username = (username or "").strip()
    candidate = user_model(username=username, email=email)
    try:
        # The model's own rules: at most 150 characters of letters, digits and @ . + - _.
        candidate.clean_fields(exclude=["password"])
    except ValidationError as error:
        problems = error.message_dict.get("username") or error.message_dict.get("email") or error.messages
        raise UsernameInvalid(" ".join(problems), field="username") from error
    if user_model.objects.filter(username=username).exists():
        raise UsernameTaken(f"the username {username!r} is taken", field="username")
    try:
        validate_password(password, user=candidate)
    except ValidationError as error:
        raise PasswordInvalid(" ".join(error.messages), field="password") from error
    return user_model.objects.create_user(username=username, email=email, password=password)


def user_password_ensure(*, username: str) -> str | None:
    """Give the account `username` (made if missing) a generated password if it has no usable
    one, and return it; None when it already has one. For a local first run only."""
    user, _ = get_user_model().objects.get_or_create(username=username)
    if user.has_usable_password():
        return None
    password = secrets.token_urlsafe(12)
    user.set_password(password)
    user.save(update_fields=["password"])
    return password

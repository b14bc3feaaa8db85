"""API tokens: created (the secret is returned once), checked, revoked."""

import hashlib
import secrets
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from accounts.models import TOKEN_NAME_MAX_CHARS, ApiToken
from config.exceptions import ApplicationError

TOKEN_PREFIX = "dc_"  # noqa: S105 - a public marker, not a secret
TOKENS_PER_USER_MAX = 50
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


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str  # shown once, never stored


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def api_token_create(*, user: AbstractBaseUser, name: str) -> IssuedToken:
    name = " ".join((name or "").split())
    if not name or len(name) > TOKEN_NAME_MAX_CHARS or "\x00" in name:
        raise TokenNameInvalid(f"a token name is 1 to {TOKEN_NAME_MAX_CHARS} characters", field="name")
    if ApiToken.objects.filter(user=user, revoked_at__isnull=True).count() >= TOKENS_PER_USER_MAX:
        raise TokenLimitReached(f"at most {TOKENS_PER_USER_MAX} active tokens; revoke one first")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name, prefix=secret[:10], digest=_digest(secret))
    return IssuedToken(token=token, secret=secret)


def api_token_revoke(*, user: AbstractBaseUser, token_id: int) -> ApiToken:
    token = ApiToken.objects.filter(pk=token_id, user=user).first()
    if token is None:
        raise TokenNotFound("token not found", field="id")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def api_token_authenticate(*, secret: str) -> AbstractBaseUser | None:
    """The active user a bearer secret belongs to, or None."""
    if not secret or not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
        return None
    token = (
        ApiToken.objects.select_related("user")
        .filter(digest=_digest(secret), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if token is None:
        return None
    now = timezone.now()
    if (
        token.last_used_at is None
        or (now - token.last_used_at).total_seconds() > LAST_USED_RESOLUTION_SECONDS
    ):
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user

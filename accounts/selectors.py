"""Reads of API tokens: a user sees only their own."""

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from accounts.models import ApiToken


def api_token_list(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[ApiToken]:
    if not user.is_authenticated:
        return ApiToken.objects.none()
    return ApiToken.objects.filter(user=user)

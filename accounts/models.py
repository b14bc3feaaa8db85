"""API tokens: per-user bearer credentials, stored only as a SHA-256 digest."""

from django.conf import settings
from django.db import models
from django.utils import timezone

TOKEN_NAME_MAX_CHARS = 100


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=TOKEN_NAME_MAX_CHARS)
    # The first characters of the token, shown in lists so a user can tell tokens apart.
    prefix = models.CharField(max_length=16)
    digest = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Null: never expires.
    expires_at = models.DateTimeField(null=True, blank=True)
    # A read-only token can query but not run mutations.
    read_only = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created", "-pk"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > timezone.now())

from django.contrib import admin

from accounts.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "prefix", "created", "last_used_at", "revoked_at")
    raw_id_fields = ("user",)
    # The digest is all that is stored; tokens are created through the API (shown once).
    readonly_fields = ("prefix", "digest", "created", "last_used_at")

    def has_add_permission(self, request) -> bool:
        return False

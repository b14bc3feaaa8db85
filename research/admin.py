from django.contrib import admin

from research.models import ResearchReport


@admin.register(ResearchReport)
class ResearchReportAdmin(admin.ModelAdmin):
    list_display = ("title", "corpus", "creator", "status", "depth", "step_count", "created", "completed_at")
    list_filter = ("status", "depth")
    search_fields = ("title", "slug", "prompt")
    raw_id_fields = ("corpus", "creator", "conversation", "origin_message")
    # Status and the run's record change only through the services (the lifecycle table).
    readonly_fields = (
        "status",
        "cancel_requested",
        "slug",
        "created",
        "updated",
        "started_at",
        "completed_at",
        "last_progress_at",
        "finalized_at",
        "step_count",
        "tool_call_count",
        "retry_count",
        "plan",
        "findings",
        "retrieved_passage_ids",
        "tool_call_log",
        "model_usage",
        "warnings",
        "error",
        "content",
        "citations",
    )
    exclude = ("cited_passages", "cited_documents")

    def has_add_permission(self, request) -> bool:
        return False

"""ResearchReport: one research run over a corpus, from the prompt to the cited report."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from corpora.models import Corpus, Document, Passage
from research.constants import DEFAULT_DEPTH, DEPTH_DEEP, DEPTH_SHALLOW, DEPTH_STANDARD, TITLE_MAX_CHARS


class ReportStatus(models.TextChoices):
    QUEUED = "QUEUED", "Queued"
    RUNNING = "RUNNING", "Running"
    CANCELLING = "CANCELLING", "Cancelling"
    COMPLETED = "COMPLETED", "Completed"
    FAILED = "FAILED", "Failed"
    CANCELLED = "CANCELLED", "Cancelled"


ACTIVE_STATUSES = (ReportStatus.QUEUED, ReportStatus.RUNNING, ReportStatus.CANCELLING)
TERMINAL_STATUSES = (ReportStatus.COMPLETED, ReportStatus.FAILED, ReportStatus.CANCELLED)


class ReportDepth(models.TextChoices):
    SHALLOW = DEPTH_SHALLOW, "Shallow"
    STANDARD = DEPTH_STANDARD, "Standard"
    DEEP = DEPTH_DEEP, "Deep"


class ReportStrategy(models.TextChoices):
    FAST = "fast", "Fast path"
    DEEP = "deep", "Deep research"


class ResearchReport(models.Model):
    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="research_reports")
    creator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="research_reports"
    )
    title = models.CharField(max_length=TITLE_MAX_CHARS)
    slug = models.SlugField(max_length=100, unique=True)
    prompt = models.TextField()
    depth = models.CharField(max_length=16, choices=ReportDepth.choices, default=DEFAULT_DEPTH)
    rubric = models.TextField(blank=True)
    rubric_iterations = models.PositiveSmallIntegerField(default=1)
    # Sub-questions researched at the first level: the depth preset's, or the request's own.
    breadth = models.PositiveSmallIntegerField(default=5)
    # The request's own model spec for this run (empty: RESEARCH_MODEL / RESEARCH_WORKER_MODEL).
    model = models.CharField(max_length=300, blank=True)
    # How the engine answers: "fast" (one retrieval round) or "deep" (plan, research, sweep,
    # write, review); set when the run starts.
    strategy = models.CharField(max_length=16, choices=ReportStrategy.choices, blank=True)
    # Ids of the documents the run may search; empty means the whole corpus.
    document_scope = models.JSONField(default=list, blank=True)

    status = models.CharField(max_length=16, choices=ReportStatus.choices, default=ReportStatus.QUEUED)
    cancel_requested = models.BooleanField(default=False)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    last_progress_at = models.DateTimeField(null=True, blank=True)

    # Budgets, fixed at start.
    max_steps = models.PositiveIntegerField()
    max_tool_calls = models.PositiveIntegerField()
    token_limit = models.PositiveIntegerField()
    time_limit_seconds = models.PositiveIntegerField()
    # Counters, bumped as the run progresses.
    step_count = models.PositiveIntegerField(default=0)
    tool_call_count = models.PositiveIntegerField(default=0)
    retry_count = models.PositiveIntegerField(default=0)

    # The run's scratchpad, written as it happens so nothing is lost on cancel or crash.
    plan = models.JSONField(default=list, blank=True)
    # What the run is doing now (phase, level, documents swept, findings, sources), for display.
    progress = models.JSONField(default=dict, blank=True)
    # The orchestration's checkpoint (levels done, next directions, documents judged, critic
    # rounds), so that a resumed run continues where the last attempt stopped.
    engine_state = models.JSONField(default=dict, blank=True)
    findings = models.JSONField(default=list, blank=True)
    retrieved_passage_ids = models.JSONField(default=list, blank=True)
    tool_call_log = models.JSONField(default=list, blank=True)
    model_usage = models.JSONField(default=dict, blank=True)
    warnings = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)

    # The rendered result, written once by report_finalize.
    content = models.TextField(blank=True)
    citations = models.JSONField(default=list, blank=True)
    cited_passages = models.ManyToManyField(Passage, blank=True, related_name="citing_reports")
    cited_documents = models.ManyToManyField(Document, blank=True, related_name="citing_reports")
    finalized_at = models.DateTimeField(null=True, blank=True)
    # The run that may write: a worker holds the lease while it runs and renews it with every
    # step; a second delivery of the task can take over only once the lease has expired.
    lease_token = models.CharField(max_length=32, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # Set when the run is queued again after a transient failure or a stall: not before then.
    not_before = models.DateTimeField(null=True, blank=True)

    conversation = models.ForeignKey(
        "conversations.Conversation", null=True, blank=True, on_delete=models.SET_NULL, related_name="reports"
    )
    origin_message = models.ForeignKey(
        "conversations.ChatMessage", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created", "-pk"]
        indexes = [
            models.Index(fields=["corpus", "status"], name="report_corpus_status"),
            models.Index(fields=["creator", "-created"], name="report_creator_created"),
            models.Index(fields=["status", "last_progress_at"], name="report_status_progress"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(max_steps__gt=0), name="report_max_steps_positive"),
            models.CheckConstraint(condition=Q(max_tool_calls__gt=0), name="report_max_tool_calls_positive"),
            # The concurrency guard: one active run per creator and corpus, enforced by the
            # database so that simultaneous starts cannot both pass a check.
            models.UniqueConstraint(
                fields=["creator", "corpus"],
                condition=Q(status__in=[s.value for s in ACTIVE_STATUSES]),
                name="report_one_active_per_creator_corpus",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.title} ({self.status})"

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATUSES

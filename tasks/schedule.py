"""The Celery beat schedule."""

EMBED_SWEEP_SECONDS = 300

BEAT_SCHEDULE = {
    "embed-pending-passages": {
        "task": "corpora.embed_pending_sweep",
        "schedule": EMBED_SWEEP_SECONDS,
    },
}

"""The Celery beat schedule."""

EMBED_SWEEP_SECONDS = 300
REAP_STALLED_SECONDS = 60
PURGE_EXPIRED_SECONDS = 24 * 60 * 60

BEAT_SCHEDULE = {
    "reap-stalled-research": {
        "task": "research.reap_stalled",
        "schedule": REAP_STALLED_SECONDS,
    },
    "embed-pending-passages": {
        "task": "corpora.embed_pending_sweep",
        "schedule": EMBED_SWEEP_SECONDS,
    },
    # A no-op unless REPORT_RETENTION_DAYS is set (research.retention).
    "purge-expired-reports": {
        "task": "research.purge_expired",
        "schedule": PURGE_EXPIRED_SECONDS,
    },
}

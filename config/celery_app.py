"""The Celery application. With no CELERY_BROKER_URL, tasks run in-process instead
(see tasks.research and tasks.embeddings)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("deepcite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.imports = ("tasks.embeddings", "tasks.research", "tasks.webhooks")

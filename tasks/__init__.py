"""Celery tasks (thin wrappers over services) and the beat schedule."""

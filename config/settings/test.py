"""Test settings: the same database engine the env names, fast hashing, no broker."""

from config.env import env_str
from config.settings.base import *  # noqa: F403

SECRET_KEY = env_str("SECRET_KEY", "test-only-not-secret")
DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_BROKER_URL = ""
# Dense retrieval is opted into by the tests that exercise it (it loads the model).
EMBEDDING_BACKEND = "none"

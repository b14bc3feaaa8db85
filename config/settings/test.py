"""Test settings: the same database engine the env names, fast hashing, no broker."""

from config.env import env_str
from config.settings.base import *  # noqa: F403

SECRET_KEY = env_str("SECRET_KEY", "test-only-not-secret")
DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_BROKER_URL = ""
# No in-process beat behind the test client's requests, unless a test turns it on: a reaper or
# embed sweep firing once a minute would act on other tests' rows.
INPROCESS_BEAT = False
# Dense retrieval is opted into by the tests that exercise it (it loads the model).
EMBEDDING_BACKEND = "none"

# SQLite tests use a file, as SQLite deployments do, not the shared-cache in-memory database:
# the latter locks whole tables, so a research thread writing while the test thread polls
# fails with "database table is locked" instead of waiting its turn as WAL allows.
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    import os
    import tempfile

    DATABASES["default"]["TEST"] = {  # noqa: F405
        "NAME": os.path.join(tempfile.gettempdir(), f"deepcite-test-{os.getpid()}.sqlite3")
    }

# Rate limits are off unless a test turns one on (the fuzz tests send thousands of mutations);
# the cache they count in is cleared before every test (tests/conftest.py).
RATE_LIMITS = dict.fromkeys(RATE_LIMITS, "")  # noqa: F405

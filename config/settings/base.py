"""Settings shared by every environment; everything deployment-specific comes from the env."""

from datetime import timedelta
from pathlib import Path

import dj_database_url
from kombu import Queue

from config.env import env_bool, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent.parent

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "guardian",
    "graphene_django",
    "axes",
    "accounts",
    "corpora",
    "conversations",
    "research",
    "llms",
    "notifications",
    "tasks",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # Before CSRF's check, which reads the body: an oversized one is refused from its headers.
    "config.form_input.RefuseOversizedBodyMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # After CSRF's check (which reads the form) and the user the 400 page shows.
    "config.form_input.RefuseNulMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "config.csp.ContentSecurityPolicyMiddleware",
    # Without a broker: the beat's stall reaper and embed sweep, on the back of requests.
    "tasks.inprocess.InProcessBeatMiddleware",
    # Last, as django-axes asks: answers a locked-out sign-in with 429.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
# A SQLite file is the zero-service default; DATABASE_URL=postgres://... in production.
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'deepcite.sqlite3'}")
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 60))}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        # WAL lets searches read while the embedding task writes; IMMEDIATE avoids
        # "database is locked" upgrades from read to write transactions.
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: a locked-out account is refused before any check
    "django.contrib.auth.backends.ModelBackend",
    "guardian.backends.ObjectPermissionBackend",
]
# No guardian "AnonymousUser" row: anonymous requests see nothing.
ANONYMOUS_USER_NAME = None

# Sign-in lockout (django-axes): LOGIN_FAILURE_LIMIT wrong passwords for one username from one
# address lock that pair out for LOGIN_LOCKOUT_MINUTES; a successful sign-in resets the count.
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_CLIENT_IP_CALLABLE = "config.ratelimit.client_address"
AXES_VERBOSE = False

# Proxies in front of the app that append to X-Forwarded-For (0: use the socket's address).
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)

# Rate limits (config/ratelimit.py): N/s, N/m, N/h or N/d; empty or 0 switches one off.
# Counted per user (all of a user's tokens and sessions together), per address when anonymous.
RATE_LIMITS = {
    "mutations": env_str("RATE_LIMIT_MUTATIONS", "120/m"),
    "research": env_str("RATE_LIMIT_RESEARCH", "10/m"),
    "chat": env_str("RATE_LIMIT_CHAT", "30/m"),
    # GraphQL `search` fields (each alias counts), per user.
    "search": env_str("RATE_LIMIT_SEARCH", "60/m"),
    "token_failures": env_str("RATE_LIMIT_TOKEN_FAILURES", "30/m"),
    # Files uploaded to POST /api/corpora/<id>/documents, per user (each file counts once).
    "uploads": env_str("RATE_LIMIT_UPLOADS", "200/h"),
}
# Where the counts live: Redis in production (e.g. redis://redis:6379/1), else process memory.
CACHE_URL = env_str("CACHE_URL")
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
        if CACHE_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "OPTIONS": {"MAX_ENTRIES": 10_000}}
    )
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# No inline script or style on any page, nothing from another origin (config/csp.py); empty: no
# header. GraphiQL's page adds its CDN only when its files were not fetched (config/graphql/assets.py).
CONTENT_SECURITY_POLICY = env_str(
    "CONTENT_SECURITY_POLICY",
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
)

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
# static/: the pages' own stylesheet and scripts; assets/: files fetched at install / image build
# time, not committed: GraphiQL's (config/graphql/assets.py).
STATICFILES_DIRS = [BASE_DIR / "static"] + ([BASE_DIR / "assets"] if (BASE_DIR / "assets").is_dir() else [])

# --- Celery ---------------------------------------------------------------------------------
# Unset broker = no services: tasks run in this process (tasks.research, tasks.embeddings),
# never silently dropped.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL")
# Without a broker, the web process runs the beat's stall reaper and embed sweep itself, on the
# back of its requests (tasks.inprocess); ignored with a broker, whose beat runs them.
INPROCESS_BEAT = env_bool("INPROCESS_BEAT", True)
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = TIME_ZONE
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Two queues, so research runs (waiting on the LLM: many threads) and embedding batches (CPU:
# few) can have workers of their own (`-Q research` / `-Q embedding`); a worker started without
# -Q takes both. The reaper goes with the research runs, the embedding sweep with the batches.
CELERY_TASK_QUEUES = (Queue("research"), Queue("embedding"))
CELERY_TASK_DEFAULT_QUEUE = "research"
CELERY_TASK_ROUTES = {
    "research.*": {"queue": "research"},
    "notifications.*": {"queue": "research"},
    "corpora.*": {"queue": "embedding"},
}
# Survives a broker restart with unacknowledged messages in hand (see tasks/worker.py).
CELERY_WORKER_CONSUMER = "tasks.worker:Consumer"
# A run in progress keeps running through a lost broker connection (its lease keeps it safe).
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# Redis hands an unacknowledged task to another worker after this long: longer than any run
# (the time limit plus grace), and a second delivery of a live run is refused by its lease.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 2 * 3600)}

# --- Retrieval ------------------------------------------------------------------------------
# "minilm" (bundled all-MiniLM-L6-v2, CPU), "openai" (an OpenAI-compatible /v1/embeddings
# endpoint) or "none" (lexical search only).
EMBEDDING_BACKEND = env_str("EMBEDDING_BACKEND", "minilm")
EMBEDDING_URL = env_str("EMBEDDING_URL")
EMBEDDING_MODEL = env_str("EMBEDDING_MODEL", "text-embedding-3-small")
EMBEDDING_API_KEY = env_str("EMBEDDING_API_KEY")
EMBEDDING_TIMEOUT_SECONDS = env_float("EMBEDDING_TIMEOUT_SECONDS", 60.0)
EMBEDDING_BATCH_SIZE = env_int("EMBEDDING_BATCH_SIZE", 256)
# Passages one embedding task embeds before it queues the rest as a new task (0: the whole
# corpus): a worker told to stop waits for one slice (512 passages, under a minute on a CPU),
# not a corpus of thousands (15 minutes and more), and corpora take turns.
EMBEDDING_TASK_MAX_PASSAGES = env_int("EMBEDDING_TASK_MAX_PASSAGES", 512)
# Threads under the bundled model, torch's or onnxruntime's (0: one per CPU the process may use).
# Every call into the model runs on one thread per process (corpora.embedding.InferenceThread),
# so this is all it uses.
EMBEDDING_THREADS = env_int("EMBEDDING_THREADS", 0)
# The bundled model's runtime: "auto" (the model exported to ONNX in float32 and run by
# onnxruntime when it is installed and the export works, else torch: the same vectors either
# way, ~2x torch's passages/s; corpora/onnx_embedding.py), "onnx-fp32" (that export, insisted
# on: a failure is embedding_unavailable), "torch" (sentence-transformers), or "onnx" (int8
# weights: faster again, but its vectors differ a little, are stored under a name of their own,
# and a change to or from it re-embeds every passage; its hybrid recall@10 on bench/retrieval.py
# is 0.02-0.03 below torch's, README, Embedding runtimes, so it is a deployment's choice).
EMBEDDING_MINILM_RUNTIME = env_str("EMBEDDING_MINILM_RUNTIME", "auto")
# Where the ONNX export is kept (made by `manage.py embedding_export`, or on first use when
# missing; a relative path is taken from the project folder).
EMBEDDING_ONNX_DIR = BASE_DIR / env_str(
    "EMBEDDING_ONNX_DIR",
    str(Path(env_str("XDG_CACHE_HOME") or Path.home() / ".cache") / "deepcite" / "onnx"),
)

# Where dense search finds its vectors (corpora/retrieval/vector_store.py): "memory" (a matrix
# per corpus in each process), "pgvector" (PostgreSQL with the vector extension: an HNSW index,
# searched in SQL) or "auto" (pgvector where the database has it, else memory).
SEARCH_VECTOR_BACKEND = env_str("SEARCH_VECTOR_BACKEND", "auto")
# pgvector without HNSW indexes: every dense search is an exact scan in SQL.
SEARCH_PGVECTOR_HNSW = env_bool("SEARCH_PGVECTOR_HNSW", True)
# The HNSW graph's build parameters (pgvector's defaults are 16, 64: at a million passages
# recall@50 was 0.68 with them and 0.92 with these at ef_search 400, README); an index keeps
# those it was built with until `manage.py vector_store_sync --reindex`.
SEARCH_PGVECTOR_HNSW_M = env_int("SEARCH_PGVECTOR_HNSW_M", 32)
SEARCH_PGVECTOR_HNSW_EF_CONSTRUCTION = env_int("SEARCH_PGVECTOR_HNSW_EF_CONSTRUCTION", 128)
# The candidate list an HNSW search keeps (hnsw.ef_search; at least the rows asked for, at most
# 1000): more is slower and finds more of the exact nearest (bench/scale.py, README).
SEARCH_PGVECTOR_EF_SEARCH = env_int("SEARCH_PGVECTOR_EF_SEARCH", 800)
# A corpus of more passages than this gets no in-memory term index (~540 MB of RSS per 100,000
# passages, their text included, in each searching process): hybrid's lexical leg, the
# document sweep and term frequencies then come from the database's full-text index. 0: no bound.
SEARCH_TERM_INDEX_MAX_PASSAGES = env_int("SEARCH_TERM_INDEX_MAX_PASSAGES", 100_000)

# PostgreSQL: each process keeps the corpora's index_version until a change is NOTIFYed
# (corpora.retrieval.versions), at most this many seconds. Switch off behind a pooler that
# drops LISTEN (PgBouncer in transaction mode): every search then reads the version.
SEARCH_INDEX_VERSION_LISTEN = env_bool("SEARCH_INDEX_VERSION_LISTEN", True)
SEARCH_INDEX_VERSION_MAX_AGE_SECONDS = env_float("SEARCH_INDEX_VERSION_MAX_AGE_SECONDS", 5.0)

# Fusion of the lexical and dense rankings (see corpora/retrieval/fusion.py for the tuning notes).
SEARCH_FUSION_LEXICAL_WEIGHT = env_float("SEARCH_FUSION_LEXICAL_WEIGHT", 1.0)
SEARCH_FUSION_DENSE_WEIGHT_KEYWORDS = env_float("SEARCH_FUSION_DENSE_WEIGHT_KEYWORDS", 0.3)
SEARCH_FUSION_DENSE_WEIGHT_QUESTION = env_float("SEARCH_FUSION_DENSE_WEIGHT_QUESTION", 0.8)

# Uploads larger than this are refused before extraction.
INGEST_MAX_FILE_BYTES = env_int("INGEST_MAX_FILE_BYTES", 50 * 1024 * 1024)
# A .docx whose parts unzip (by the sizes its zip declares) to more than this is refused before
# it is parsed: a few MB of zip can hold GBs of XML.
INGEST_MAX_UNZIPPED_BYTES = env_int("INGEST_MAX_UNZIPPED_BYTES", 200 * 1024 * 1024)
# Extraction stops and refuses the file past this much text, this many .docx paragraphs or
# table rows, or this many PDF pages (each costs time whatever its size in bytes).
INGEST_MAX_TEXT_CHARS = env_int("INGEST_MAX_TEXT_CHARS", 20_000_000)
INGEST_MAX_PARAGRAPHS = env_int("INGEST_MAX_PARAGRAPHS", 100_000)
INGEST_MAX_PDF_PAGES = env_int("INGEST_MAX_PDF_PAGES", 2_000)
# The upload endpoint refuses a request body (all its files together) larger than this from its
# Content-Length, before reading it; each file is also held to INGEST_MAX_FILE_BYTES.
UPLOAD_MAX_BYTES = env_int("UPLOAD_MAX_BYTES", 50 * 1024 * 1024)

# --- Research -------------------------------------------------------------------------------
# "offline" (the built-in extractive engine), a PydanticAI model string ("openai:gpt-4o-mini",
# "anthropic:claude-sonnet-4-5") or "openai-compatible:<model>" with LLM_BASE_URL.
RESEARCH_MODEL = env_str("RESEARCH_MODEL", "offline")
# The researchers' and the document judge's model (a cheaper one); empty = RESEARCH_MODEL's.
# Either may be a comma-separated fallback chain, tried in order on transient failures.
RESEARCH_WORKER_MODEL = env_str("RESEARCH_WORKER_MODEL")
# A run's spend in US dollars (PydanticAI's price data); 0 = no limit. Past it, the findings
# are salvaged into the report as with the other budgets.
# Models a request may choose for its run besides "offline" and the two above, separated by
# ";" (a model may itself be a comma-separated fallback chain).
RESEARCH_ALLOWED_MODELS = [m.strip() for m in env_str("RESEARCH_ALLOWED_MODELS").split(";") if m.strip()]
RESEARCH_COST_LIMIT_USD = env_float("RESEARCH_COST_LIMIT_USD", 0.0)
# The shallow fast path: a single question of at most this many words, with no collection or
# comparison markers, is answered in one retrieval round (research/engine/intent.py).
RESEARCH_FAST_PATH_MAX_WORDS = env_int("RESEARCH_FAST_PATH_MAX_WORDS", 12)
# A question put to at least this many documents is about the collection: every candidate
# document is swept for it (and it never takes the fast path).
RESEARCH_COLLECTION_MIN_DOCUMENTS = env_int("RESEARCH_COLLECTION_MIN_DOCUMENTS", 5)
# The chat agent's model; empty = the same as RESEARCH_MODEL.
CHAT_MODEL = env_str("CHAT_MODEL")
LLM_BASE_URL = env_str("LLM_BASE_URL")
LLM_API_KEY = env_str("LLM_API_KEY")
# A deadline over one model request and its in-line retries; past it the request is abandoned
# as a transient failure (retried from the run's checkpoint). 0: the provider SDK's own timeout.
LLM_REQUEST_TIMEOUT_SECONDS = env_float("LLM_REQUEST_TIMEOUT_SECONDS", 300.0)
# The most tokens one model reply may generate; 0: the provider's default.
LLM_MAX_OUTPUT_TOKENS = env_int("LLM_MAX_OUTPUT_TOKENS", 8192)
# A chat turn is answered inside the web request: its model work must end by this deadline,
# below the web server's worker timeout (gunicorn --timeout 60 in the image).
CHAT_TURN_TIMEOUT_SECONDS = env_float("CHAT_TURN_TIMEOUT_SECONDS", 45.0)
# Tokens one chat turn may spend across its model requests; 0: no limit.
CHAT_TOKEN_LIMIT = env_int("CHAT_TOKEN_LIMIT", 200_000)
# Ceilings over the depth presets' token and time budgets (research/constants.py).
RESEARCH_TOKEN_LIMIT = env_int("RESEARCH_TOKEN_LIMIT", 5_000_000)
RESEARCH_TIME_LIMIT_SECONDS = env_int("RESEARCH_TIME_LIMIT_SECONDS", 30 * 60)
# Research runs one user may have queued or running at once, across corpora (0: no cap).
RESEARCH_MAX_ACTIVE_RUNS_PER_USER = env_int("RESEARCH_MAX_ACTIVE_RUNS_PER_USER", 3)
# Outgoing webhooks (notifications/webhooks.py): per-attempt timeout, retries after the first
# attempt, the first retry's delay (doubling after), and whether private addresses are allowed.
WEBHOOK_TIMEOUT_SECONDS = env_float("WEBHOOK_TIMEOUT_SECONDS", 10.0)
WEBHOOK_MAX_RETRIES = env_int("WEBHOOK_MAX_RETRIES", 5)
WEBHOOK_RETRY_BACKOFF_SECONDS = env_float("WEBHOOK_RETRY_BACKOFF_SECONDS", 30.0)
WEBHOOK_ALLOW_PRIVATE_ADDRESSES = env_bool("WEBHOOK_ALLOW_PRIVATE_ADDRESSES", False)
# This site's address as its users reach it, for links sent out of it (webhooks).
SITE_URL = env_str("SITE_URL", "http://127.0.0.1:8000")
# Days to keep finished reports (and read notifications); 0 keeps them forever. A daily beat
# task and `manage.py purge` delete older ones (research/retention.py).
REPORT_RETENTION_DAYS = env_int("REPORT_RETENTION_DAYS", 0)
# A worker holds a run's lease this long past its last step; a redelivered task may take over
# a run whose lease expired. The reaper resumes RUNNING reports with no progress for this long.
RESEARCH_LEASE_SECONDS = env_int("RESEARCH_LEASE_SECONDS", 600)
RESEARCH_STALL_SECONDS = env_int("RESEARCH_STALL_SECONDS", 600)
# How often a running research run looks for a cancel while its work is in flight (a model
# request can take minutes); it also checks before every model request. 0: only then.
RESEARCH_CANCEL_POLL_SECONDS = env_float("RESEARCH_CANCEL_POLL_SECONDS", 5.0)
# Re-queues after a transient failure or a stall before a run ends FAILED.
RESEARCH_TASK_MAX_RETRIES = env_int("RESEARCH_TASK_MAX_RETRIES", 2)
# Research runs at once in one process when there is no broker.
RESEARCH_INPROCESS_WORKERS = env_int("RESEARCH_INPROCESS_WORKERS", 4)
# Threads (one database connection each) that do the database work of every research run a
# process carries; a worker with --concurrency 100 needs no more than a few.
RESEARCH_DATABASE_THREADS = env_int("RESEARCH_DATABASE_THREADS", 4)

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# --- GraphQL --------------------------------------------------------------------------------
# The GraphiQL page at /graphql for a browser (Accept: text/html): on with DEBUG, or on its own.
GRAPHIQL = env_bool("GRAPHIQL", DEBUG)

GRAPHENE = {
    "SCHEMA": "config.schema.schema",
    "RELAY_CONNECTION_MAX_LIMIT": 100,
    "RELAY_CONNECTION_ENFORCE_FIRST_OR_LAST": False,
}
GRAPHQL_MAX_DEPTH = env_int("GRAPHQL_MAX_DEPTH", 10)
# Field selections a single request may make (fragments expanded): a complexity ceiling.
GRAPHQL_MAX_FIELDS = env_int("GRAPHQL_MAX_FIELDS", 400)
# `search` fields in one GraphQL request (aliases and fragments counted); more: too_many_searches.
GRAPHQL_MAX_SEARCHES = env_int("GRAPHQL_MAX_SEARCHES", 5)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "filters": {"forbidden_without_traceback": {"()": "config.errors.ForbiddenWithoutTraceback"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.request": {"filters": ["forbidden_without_traceback"]},
        "sentence_transformers": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
    },
}

from tasks.schedule import BEAT_SCHEDULE  # noqa: E402 - plain data, no Django imports

CELERY_BEAT_SCHEDULE = BEAT_SCHEDULE

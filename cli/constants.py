"""Exit codes, environment variables and limits of the `deepcite` command."""

EXIT_DONE = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_TIMED_OUT = 3
EXIT_INTERRUPTED = 130

ENV_URL = "DEEPCITE_URL"
ENV_TOKEN = "DEEPCITE_TOKEN"  # noqa: S105 (the variable's name, not a secret)

GRAPHQL_PATH = "/graphql"
# POST /api/corpora/<id>/documents, multipart/form-data, the files in this field.
UPLOAD_PATH = "/api/corpora/{corpus}/documents"
UPLOAD_FIELD = "files"
UPLOAD_TIMEOUT_SECONDS = 300.0
# What the server ingests (corpora.extraction.SUPPORTED_SUFFIXES): a directory's other files
# (images, spreadsheets, .DS_Store) are not sent.
UPLOAD_SUFFIXES = frozenset({".docx", ".htm", ".html", ".markdown", ".md", ".pdf", ".text", ".txt"})
# Files are sent in requests of at most this many files and bytes (a larger file goes alone),
# within the server's defaults (100 files, UPLOAD_MAX_BYTES 50 MB) and its upload timeout.
UPLOAD_BATCH_FILES = 20
UPLOAD_BATCH_BYTES = 20 * 1024 * 1024
HTTP_TIMEOUT_SECONDS = 30.0
# The server caps a connection page at 100 items.
PAGE_SIZE_MAX = 100
DEFAULT_LIST_SIZE = 10
DEFAULT_POLL_SECONDS = 1.0
# While waiting, a server restart or a dropped connection is retried this many times in a row.
POLL_TRANSIENT_RETRIES = 5

TERMINAL_STATUSES = frozenset({"COMPLETED", "FAILED", "CANCELLED"})
DEPTHS = ("shallow", "standard", "deep")

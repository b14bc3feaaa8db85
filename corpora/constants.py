"""Named limits and choices for corpora, ingestion and retrieval."""

# Passages: sized for MiniLM's 256-token window and for precise citations.
PASSAGE_MIN_WORDS = 40
PASSAGE_TARGET_WORDS = 110
PASSAGE_MAX_WORDS = 150
# A hard cap for text with no spaces (URLs, base64, CJK without spaces).
PASSAGE_MAX_CHARS = 1200

SEARCH_MAX_TOP_K = 500
SEARCH_MAX_QUERY_CHARS = 2000
# How deep each ranker looks before fusion (at least twice the results asked for).
FUSION_CANDIDATES_MIN = 200
NEIGHBOURS_MAX_WINDOW = 10
# pgvector's largest hnsw.ef_search (a search of k rows uses max(k, SEARCH_PGVECTOR_EF_SEARCH)).
PGVECTOR_EF_SEARCH_MAX = 1000
# Passages per transaction when the vector table is (re)built from the stored embeddings.
VECTOR_SYNC_BATCH = 1000

SEARCH_MODE_HYBRID = "hybrid"
SEARCH_MODE_LEXICAL = "lexical"
SEARCH_MODE_DENSE = "dense"
SEARCH_MODES = (SEARCH_MODE_HYBRID, SEARCH_MODE_LEXICAL, SEARCH_MODE_DENSE)

CORPUS_NAME_MAX_LENGTH = 200
DOCUMENT_TITLE_MAX_LENGTH = 500

# The upload endpoint: the multipart field that carries the files, and the longest file name
# kept (longer ones are cut, their suffix kept). The number of files a request may carry is
# Django's DATA_UPLOAD_MAX_NUMBER_FILES (100).
UPLOAD_FIELD = "files"
UPLOAD_FILENAME_MAX_CHARS = 255

"""Errors raised by corpora services and selectors, each with a stable code."""

from config.exceptions import ApplicationError


class CorpusError(ApplicationError):
    code = "corpus_error"


class CorpusNotFound(CorpusError):
    # The same error whether the corpus does not exist or the user may not see it.
    code = "corpus_not_found"


class CorpusNameInvalid(CorpusError):
    code = "corpus_name_invalid"


class CorpusNameTaken(CorpusError):
    code = "corpus_name_taken"


class CorpusAmbiguous(CorpusError):
    code = "corpus_ambiguous"


class CorpusPermissionDenied(CorpusError):
    # A user the corpus is shared with may read it but not manage it.
    code = "permission_denied"


class CorpusBusy(CorpusError):
    # A research run on the corpus is queued, running or cancelling.
    code = "corpus_busy"


class CorpusHasReports(CorpusError):
    code = "corpus_has_reports"


class DocumentNotFound(CorpusError):
    # The same error whether the document does not exist or its corpus is hidden.
    code = "document_not_found"


class ShareUserNotFound(CorpusError):
    code = "user_not_found"


class ShareWithSelf(CorpusError):
    code = "cannot_share_with_self"


class IngestError(ApplicationError):
    code = "ingest_error"


class UnsupportedFileType(IngestError):
    code = "unsupported_file_type"


class CorruptFile(IngestError):
    code = "corrupt_file"


class EmptyDocument(IngestError):
    code = "empty_document"


class FileTooLarge(IngestError):
    code = "file_too_large"


class SearchError(ApplicationError):
    code = "search_error"


class InvalidSearchMode(SearchError):
    code = "invalid_search_mode"


class InvalidTopK(SearchError):
    code = "invalid_top_k"


class QueryTooLong(SearchError):
    code = "query_too_long"


class PassageNotFound(SearchError):
    code = "passage_not_found"


class DenseSearchUnavailable(SearchError):
    code = "dense_search_unavailable"


class VectorBackendUnavailable(SearchError):
    # SEARCH_VECTOR_BACKEND names a backend this database cannot serve (system check corpora.E002).
    code = "vector_backend_unavailable"


class EmbeddingUnavailable(ApplicationError):
    code = "embedding_unavailable"

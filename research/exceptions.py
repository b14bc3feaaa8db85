"""Errors raised by research services and selectors, each with a stable code."""

from config.exceptions import ApplicationError


class ResearchError(ApplicationError):
    code = "research_error"


class ReportNotFound(ResearchError):
    # The same error whether the report does not exist or belongs to someone else.
    code = "report_not_found"


class ReportFilterInvalid(ResearchError):
    code = "status_filter_invalid"


class PromptInvalid(ResearchError):
    code = "prompt_invalid"


class RubricInvalid(ResearchError):
    code = "rubric_invalid"


class TitleInvalid(ResearchError):
    code = "title_invalid"


class DepthInvalid(ResearchError):
    code = "depth_invalid"


class DocumentScopeInvalid(ResearchError):
    code = "document_scope_invalid"


class BreadthInvalid(ResearchError):
    code = "breadth_invalid"


class MaxStepsInvalid(ResearchError):
    code = "max_steps_invalid"


class TimeLimitInvalid(ResearchError):
    code = "time_limit_invalid"


class ModelNotAllowed(ResearchError):
    code = "model_not_allowed"


class ReportAlreadyActive(ResearchError):
    code = "research_already_in_progress"


class TooManyActiveRuns(ResearchError):
    code = "too_many_active_runs"


class ReportPermissionDenied(ResearchError):
    code = "permission_denied"


class ReportNotCancellable(ResearchError):
    code = "report_not_cancellable"


class ReportNotResumable(ResearchError):
    code = "report_not_resumable"


class TransitionNotAllowed(ResearchError):
    code = "transition_not_allowed"


class TransitionLost(ResearchError):
    """Another writer changed the status first (compare-and-set found a different status)."""

    code = "transition_lost"


class FindingRejected(ResearchError):
    """A finding the agent must correct: the message tells it how."""

    code = "finding_rejected"


class RetentionInvalid(ResearchError):
    # A purge asked to keep no days, or to delete in batches of no rows.
    code = "retention_invalid"

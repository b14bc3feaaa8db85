"""The project-wide error root: every expected failure carries a stable machine-readable code."""


class ApplicationError(Exception):
    """An expected failure that callers show to a user (CLI, API) instead of a traceback."""

    code = "application_error"

    def __init__(self, message: str, *, code: str | None = None, field: str | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.field = field

    def as_dict(self) -> dict[str, str | None]:
        return {"code": self.code, "message": self.message, "field": self.field}

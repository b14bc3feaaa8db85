"""The /graphql endpoint: session or bearer-token authentication, CSRF for session requests,
depth and size limits, and errors that carry a code and never a traceback."""

import logging

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from graphene.validation import depth_limit_validator
from graphene_django.views import GraphQLView
from graphql import GraphQLError, ValidationRule
from graphql.language import FieldNode

from accounts.services import api_token_authenticate
from config.exceptions import ApplicationError

logger = logging.getLogger(__name__)

BODY_MAX_BYTES = 256 * 1024


class _Rejected(Exception):
    def __init__(self, response: HttpResponse) -> None:
        self.response = response


def field_count_limit(max_fields: int) -> type[ValidationRule]:
    """A complexity ceiling: the number of field selections, fragments expanded as used."""

    class FieldCountLimit(ValidationRule):
        def __init__(self, context):
            super().__init__(context)
            self.count = 0
            self.fragments = {
                f.name.value: f for f in context.document.definitions if f.kind == "fragment_definition"
            }

        def enter_operation_definition(self, node, *args):
            total = _count(node.selection_set, self.fragments, set())
            if total > max_fields:
                self.report_error(
                    GraphQLError(f"query selects {total} fields; the limit is {max_fields}", node)
                )

    return FieldCountLimit


def _count(selection_set, fragments, seen: set[str]) -> int:
    if selection_set is None:
        return 0
    total = 0
    for selection in selection_set.selections:
        if isinstance(selection, FieldNode):
            total += 1 + _count(selection.selection_set, fragments, seen)
        elif selection.kind == "fragment_spread":
            name = selection.name.value
            if name in seen or name not in fragments:
                continue  # cycles and unknown fragments are reported by the standard rules
            total += _count(fragments[name].selection_set, fragments, seen | {name})
        else:  # inline fragment
            total += _count(selection.selection_set, fragments, seen)
    return total


@method_decorator(csrf_exempt, name="dispatch")
class DeepciteGraphQLView(GraphQLView):
    def __init__(self, **kwargs):
        kwargs.setdefault(
            "validation_rules",
            (
                depth_limit_validator(max_depth=settings.GRAPHQL_MAX_DEPTH),
                field_count_limit(settings.GRAPHQL_MAX_FIELDS),
            ),
        )
        super().__init__(**kwargs)

    def dispatch(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            self._authenticate(request)
            if len(request.body) > BODY_MAX_BYTES:
                return _error(413, "request_too_large", f"the request body is over {BODY_MAX_BYTES} bytes")
            return super().dispatch(request, *args, **kwargs)
        except _Rejected as rejected:
            return rejected.response
        except Exception:  # never a traceback to the client
            logger.exception("unhandled error in /graphql")
            return _error(500, "internal_error", "internal error")

    def _authenticate(self, request: HttpRequest) -> None:
        header = request.headers.get("Authorization", "")
        if header:
            scheme, _, secret = header.partition(" ")
            user = api_token_authenticate(secret=secret.strip()) if scheme.lower() == "bearer" else None
            if user is None:
                raise _Rejected(_error(401, "invalid_token", "the API token is missing, unknown or revoked"))
            request.user = user
            return
        if not getattr(request, "user", None):
            request.user = AnonymousUser()
        if request.method == "POST" and request.user.is_authenticated:
            # A browser session needs the CSRF token; bearer-token clients are not browsers.
            refusal = CsrfViewMiddleware(lambda r: None).process_view(request, None, (), {})
            if refusal is not None:
                raise _Rejected(_error(403, "csrf_failed", "CSRF check failed"))

    def can_display_graphiql(self, request, data):
        return settings.DEBUG and super().can_display_graphiql(request, data)

    @staticmethod
    def format_error(error):
        if isinstance(error, GraphQLError):
            original = error.original_error
            if original is None or isinstance(original, GraphQLError):
                return error.formatted
            formatted = error.formatted
            if isinstance(original, ApplicationError):
                formatted["message"] = original.message
                formatted["extensions"] = {"code": original.code, "field": original.field}
                return formatted
            logger.error("unhandled error in a resolver", exc_info=original)
            formatted["message"] = "internal error"
            formatted["extensions"] = {"code": "internal_error"}
            return formatted
        return {"message": str(error)}


def _error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"errors": [{"message": message, "extensions": {"code": code}}]}, status=status)

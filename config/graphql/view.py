"""The /graphql endpoint: session or bearer-token authentication, CSRF for session requests,
depth and size limits, and errors that carry a code and never a traceback."""

import functools
import logging
import re

from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import HttpRequest, HttpResponse, JsonResponse, UnreadablePostError
from django.http.multipartparser import MultiPartParserError
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from graphene_django.views import GraphQLView
from graphql import (
    ExecutionResult,
    GraphQLError,
    OperationType,
    ValidationRule,
    get_operation_ast,
    parse,
    specified_rules,
    validate,
)
from graphql.language import FieldNode, FragmentSpreadNode, InlineFragmentNode

from config.api_auth import ApiRefused, request_authenticate, request_declared_length, request_may_write
from config.csp import HEADER as CSP_HEADER
from config.csp import policy_with_sources
from config.exceptions import ApplicationError
from config.graphql.assets import ASSETS as GRAPHIQL_ASSETS
from config.graphql.errors import camel_case
from config.ratelimit import RateLimited, client_address, rate, rate_limit_hit

logger = logging.getLogger(__name__)

GRAPHIQL_CDN = "https://cdn.jsdelivr.net"
BODY_MAX_BYTES = 256 * 1024
# Tokens a document may hold: far above any real query, far below what makes validation slow
# (the standard overlapping-fields rule is quadratic in repeated selections).
QUERY_MAX_TOKENS = 10_000


class _Rejected(Exception):
    def __init__(self, response: HttpResponse) -> None:
        self.response = response


def query_limits(*, max_depth: int, max_fields: int) -> type[ValidationRule]:
    """Ceilings on nesting depth and on the number of field selections (fragments expanded as
    used). Cycle-safe and tolerant of unknown fragments: the standard rules report those."""

    class QueryLimits(ValidationRule):
        def __init__(self, context):
            super().__init__(context)
            self.fragments = {
                f.name.value: f for f in context.document.definitions if f.kind == "fragment_definition"
            }

        def enter_operation_definition(self, node, *args):
            total, depth = _measure(node.selection_set, self.fragments, frozenset(), {})
            if depth > max_depth:
                self.report_error(
                    GraphQLError(f"query is {depth} levels deep; the limit is {max_depth}", node)
                )
            if total > max_fields:
                self.report_error(
                    GraphQLError(f"query selects {total} fields; the limit is {max_fields}", node)
                )

    return QueryLimits


def _measure(
    selection_set, fragments, seen: frozenset[str], memo: dict[str, tuple[int, int]]
) -> tuple[int, int]:
    """(field selections, nesting depth) under `selection_set`; introspection fields (`__schema`,
    `__type`) count as fields but not as depth, as graphene's depth limit treats them. Each
    fragment is measured once, so fragments spreading fragments cannot make this exponential."""
    if selection_set is None:
        return 0, 0
    total = depth = 0
    for selection in selection_set.selections:
        if isinstance(selection, FieldNode):
            fields, below = _measure(selection.selection_set, fragments, seen, memo)
            total += 1 + fields
            if not selection.name.value.startswith("__"):
                depth = max(depth, 1 + below)
        elif selection.kind == "fragment_spread":
            name = selection.name.value
            if name in seen or name not in fragments:
                continue  # cycles and unknown fragments are reported by the standard rules
            if name not in memo:
                memo[name] = _measure(fragments[name].selection_set, fragments, seen | {name}, memo)
            fields, below = memo[name]
            total, depth = total + fields, max(depth, below)
        else:  # inline fragment
            fields, below = _measure(selection.selection_set, fragments, seen, memo)
            total, depth = total + fields, max(depth, below)
    return total, depth


@method_decorator(csrf_exempt, name="dispatch")
class DeepciteGraphQLView(GraphQLView):
    def __init__(self, **kwargs):
        self.limits = query_limits(
            max_depth=settings.GRAPHQL_MAX_DEPTH, max_fields=settings.GRAPHQL_MAX_FIELDS
        )
        # Passing validation_rules replaces graphql-core's standard rules: keep them.
        kwargs.setdefault("validation_rules", (*specified_rules, self.limits))
        kwargs.setdefault("middleware", [RefuseNul()])
        super().__init__(**kwargs)

    def dispatch(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            self._read_body(request)
            request_authenticate(request)
            return super().dispatch(request, *args, **kwargs)
        except _Rejected as rejected:
            return rejected.response
        # From the door (Content-Length, token, CSRF) or a mutation's limits, wherever raised.
        except RateLimited as limited:
            return _rate_limited(limited)
        except ApiRefused as refused:
            return _error(refused.status, refused.code, refused.message)
        except Exception:  # never a traceback to the client
            logger.exception("unhandled error in /graphql")
            return _error(500, "internal_error", "internal error")

    @staticmethod
    def _read_body(request: HttpRequest) -> None:
        """Refuse an oversized body from its Content-Length before reading it, then read it
        once: the CSRF check's request.POST and the JSON parse both use that copy (reading the
        form first made a session's multipart POST unreadable to the view)."""
        declared = request_declared_length(request, limit=BODY_MAX_BYTES, required=False)
        too_large = _error(413, "request_too_large", f"the request body is over {BODY_MAX_BYTES} bytes")
        try:
            body = request.body
        except RequestDataTooBig as exc:
            raise _Rejected(too_large) from exc
        except (UnreadablePostError, OSError) as exc:
            raise _Rejected(_error(400, "invalid_body", "the request body could not be read")) from exc
        if len(body) > BODY_MAX_BYTES:
            raise _Rejected(too_large)
        if len(body) < declared:  # the client stopped sending: half a query is no query
            raise _Rejected(_error(400, "invalid_body", "the request body ended before its Content-Length"))

    def execute_graphql_request(self, request, data, query, variables, operation_name, show_graphiql=False):
        # The size limits run first, alone, so an oversized document is refused before the
        # standard rules spend seconds on it.
        if isinstance(query, str) and query:  # other values are refused by the base view
            try:
                document = parse(query, max_tokens=QUERY_MAX_TOKENS)
            except GraphQLError as error:
                return ExecutionResult(data=None, errors=[error])
            except RecursionError:
                return ExecutionResult(data=None, errors=[GraphQLError("the query is nested too deeply")])
            refused = validate(self.schema.graphql_schema, document, [self.limits])
            if refused:
                return ExecutionResult(data=None, errors=refused)
            operation = get_operation_ast(document, operation_name)
            if operation is not None and operation.operation == OperationType.MUTATION:
                # A mutation the schema refuses runs nothing, so it counts against no rate.
                refused = validate(self.schema.graphql_schema, document)
                if refused:
                    return ExecutionResult(data=None, errors=refused)
                self._mutation_allowed(request, _root_fields(operation, document))
            elif operation is not None and operation.operation == OperationType.QUERY:
                searches = _root_fields(operation, document).count("search")
                if searches:
                    refused = validate(self.schema.graphql_schema, document)
                    if refused:
                        return ExecutionResult(data=None, errors=refused)
                    self._searches_allowed(request, searches)
        return super().execute_graphql_request(request, data, query, variables, operation_name, show_graphiql)

    def get_graphql_params(self, request, data):
        params = super().get_graphql_params(request, data)
        problem = text_problem(params[:3])
        if problem is not None:
            # No text field can store a NUL or half a surrogate pair (the databases refuse
            # them), and nothing needs variables nested a hundred deep: refused at the door.
            raise _Rejected(_error(400, "invalid_input", problem))
        return params

    def parse_body(self, request: HttpRequest):
        # The base view decodes a GraphQL or JSON body without catching a bad encoding, and
        # form bodies raise Django's parser errors, which would otherwise reach our catch-all.
        if self.get_content_type(request) in ("application/graphql", "application/json"):
            try:
                request.body.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _Rejected(_error(400, "invalid_body", "the request body is not UTF-8")) from exc
        try:
            return super().parse_body(request)
        except (MultiPartParserError, SuspiciousOperation) as exc:
            raise _Rejected(_error(400, "invalid_body", "the request body could not be parsed")) from exc
        except RecursionError as exc:  # "[[[[…" a thousand deep: the JSON decoder gives up
            raise _Rejected(_error(400, "invalid_body", "the request body is nested too deeply")) from exc

    @staticmethod
    def _mutation_allowed(request: HttpRequest, fields: list[str]) -> None:
        """A read-only token runs no mutation; every mutation field counts against the user's
        (or, signed out, the address's) rate, research starts and chat messages against their own."""
        request_may_write(request, what="run mutations")
        key = _rate_key(request)
        _limited("mutations", key, amount=len(fields))
        _limited("research", key, amount=sum(f in RESEARCH_MUTATIONS for f in fields))
        _limited("chat", key, amount=sum(f in CHAT_MUTATIONS for f in fields))

    @staticmethod
    def _searches_allowed(request: HttpRequest, searches: int) -> None:
        """A search ranks a corpus (seconds for a large one): a request holds at most
        GRAPHQL_MAX_SEARCHES `search` fields (aliases and fragments counted), each counting
        against the user's (or, signed out, the address's) search rate."""
        if searches > settings.GRAPHQL_MAX_SEARCHES:
            message = f"a request may search at most {settings.GRAPHQL_MAX_SEARCHES} times; it has {searches}"
            raise _Rejected(_error(400, "too_many_searches", message))
        _limited("search", _rate_key(request), amount=searches)

    def can_display_graphiql(self, request, data):
        return settings.GRAPHIQL and super().can_display_graphiql(request, data)

    def render_graphiql(self, request, **data):
        # The files config.graphql.assets fetched, served by the app; else graphene-django's CDN,
        # which this page's Content-Security-Policy then allows.
        local = _graphiql_local()
        response = super().render_graphiql(request, graphiql_local=local, **data)
        if not local and settings.CONTENT_SECURITY_POLICY:
            response[CSP_HEADER] = policy_with_sources(
                settings.CONTENT_SECURITY_POLICY, {"script-src": GRAPHIQL_CDN, "style-src": GRAPHIQL_CDN}
            )
        return response

    @staticmethod
    def format_error(error):
        """Every error in one shape: a message and extensions.code."""
        if isinstance(error, GraphQLError):
            original = error.original_error
            if original is None or isinstance(original, GraphQLError):
                formatted = error.formatted
                formatted["extensions"] = {"code": "invalid_query", **(formatted.get("extensions") or {})}
                return formatted
            formatted = error.formatted
            if isinstance(original, ApplicationError):
                formatted["message"] = original.message
                formatted["extensions"] = {"code": original.code, "field": camel_case(original.field)}
                return formatted
            logger.error("unhandled error in a resolver", exc_info=original)
            formatted["message"] = "internal error"
            formatted["extensions"] = {"code": "internal_error"}
            return formatted
        # The base view's own refusals (a body that is not JSON, a wrong method, ...).
        return {"message": str(error), "extensions": {"code": "invalid_request"}}


class InvalidInput(ApplicationError):
    code = "invalid_input"


class RefuseNul:
    """Graphene middleware: an argument holding a NUL or a lone surrogate (a literal like
    "a\\u0000b" in the query text, which the body check cannot see) is refused before its
    resolver runs."""

    def resolve(self, next_, root, info, **args):
        problem = text_problem(args) if args else None
        if problem is not None:
            raise InvalidInput(problem)
        return next_(root, info, **args)


VALUE_MAX_DEPTH = 64
_SURROGATE = re.compile("[\ud800-\udfff]")


def text_problem(value) -> str | None:
    """Why `value` (strings, dicts and lists of them) cannot be taken as input, or None: a NUL,
    a lone surrogate (JSON's "\\udfff"), or nesting deeper than VALUE_MAX_DEPTH. Iterative: a
    value nested a thousand deep must not exhaust the stack checking it."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > VALUE_MAX_DEPTH:
            return f"input is nested more than {VALUE_MAX_DEPTH} levels deep"
        if isinstance(item, str):
            if "\x00" in item:
                return "text must not contain NUL characters"
            if _SURROGATE.search(item):
                return "text must be valid Unicode (no lone surrogates)"
        elif isinstance(item, dict):
            stack.extend((part, depth + 1) for pair in item.items() for part in pair)
        elif isinstance(item, list | tuple):
            stack.extend((part, depth + 1) for part in item)
    return None


def _error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"errors": [{"message": message, "extensions": {"code": code}}]}, status=status)


RESEARCH_MUTATIONS = frozenset({"startResearchReport", "resumeResearchReport"})
CHAT_MUTATIONS = frozenset({"sendChatMessage"})


def _rate_key(request: HttpRequest) -> str:
    """Rates count per user (all of their tokens and sessions), per address when signed out."""
    if request.user.is_authenticated:
        return f"user:{request.user.pk}"
    return f"address:{client_address(request) or 'unknown'}"


def _limited(name: str, key: str, *, amount: int = 1) -> None:
    """Count against the rate called `name`; past it RateLimited (429 with Retry-After)."""
    rate_limit_hit(scope=name, key=key, rate=rate(name), amount=amount)


def _rate_limited(limited: RateLimited) -> JsonResponse:
    response = JsonResponse(
        {
            "errors": [
                {
                    "message": limited.message,
                    "extensions": {"code": limited.code, "retryAfter": limited.retry_after},
                }
            ]
        },
        status=429,
    )
    response["Retry-After"] = str(limited.retry_after)
    return response


def _root_fields(operation, document) -> list[str]:
    """The names of an operation's root fields, through fragments (each named fragment once:
    the validation rules have already refused cycles and oversized documents)."""
    fragments = {d.name.value: d for d in document.definitions if d.kind == "fragment_definition"}
    names: list[str] = []
    pending = list(operation.selection_set.selections)
    seen: set[str] = set()
    while pending:
        node = pending.pop()
        if isinstance(node, FieldNode):
            names.append(node.name.value)
        elif isinstance(node, InlineFragmentNode):
            pending.extend(node.selection_set.selections)
        elif isinstance(node, FragmentSpreadNode) and node.name.value not in seen:
            seen.add(node.name.value)
            fragment = fragments.get(node.name.value)
            if fragment is not None:
                pending.extend(fragment.selection_set.selections)
    return names


@functools.cache
def _graphiql_local() -> bool:
    return all(finders.find(f"graphiql/{asset.name}") for asset in GRAPHIQL_ASSETS)

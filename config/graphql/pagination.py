"""Connection fields whose paging arguments are checked up front: a page over the limit, a
negative count or a cursor we did not issue is an error with a code, never an internal error."""

from graphene_django import DjangoConnectionField
from graphql_relay import cursor_to_offset

from config.exceptions import ApplicationError


class PaginationInvalid(ApplicationError):
    code = "pagination_invalid"


class BoundedConnectionField(DjangoConnectionField):
    @classmethod
    def connection_resolver(
        cls,
        resolver,
        connection,
        default_manager,
        queryset_resolver,
        max_limit,
        enforce_first_or_last,
        root,
        info,
        **args,
    ):
        page_arguments_check(args, max_limit)
        return super().connection_resolver(
            resolver,
            connection,
            default_manager,
            queryset_resolver,
            max_limit,
            enforce_first_or_last,
            root,
            info,
            **args,
        )


def page_arguments_check(args: dict, max_limit: int | None) -> None:
    for name in ("first", "last"):
        value = args.get(name)
        if value is not None and (value < 0 or (max_limit is not None and value > max_limit)):
            raise PaginationInvalid(f"{name} must be between 0 and {max_limit}", field=name)
    offset = args.get("offset")
    if offset is not None and offset < 0:
        raise PaginationInvalid("offset must not be negative", field="offset")
    if offset is not None and args.get("before") is not None:
        raise PaginationInvalid("offset and before cannot be used together", field="offset")
    for name in ("after", "before"):
        cursor = args.get(name)
        if cursor is not None and not _is_cursor(cursor):
            raise PaginationInvalid(f"{name} is not a cursor from this connection", field=name)


def _is_cursor(cursor: str) -> bool:
    offset = cursor_to_offset(cursor)  # None for text that is not base64 of "...:<int>"
    return offset is not None and offset >= 0

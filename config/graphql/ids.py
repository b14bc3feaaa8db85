"""Relay global ids, decoded strictly: a malformed id or one of another type is an error with a
code, never a 500 and never a hint about whether some object exists."""

import binascii

from graphql_relay import from_global_id, to_global_id

from config.exceptions import ApplicationError

PK_MAX = 2**63 - 1


class InvalidId(ApplicationError):
    code = "invalid_id"


def decode_id(global_id: str | None, expected_type: str, *, field: str = "id") -> int:
    type_name, pk = decode_any_id(global_id, field=field, expected=expected_type)
    if type_name != expected_type:
        raise InvalidId(f"not a valid {expected_type} id", field=field)
    return pk


def decode_any_id(global_id: str | None, *, field: str = "id", expected: str = "") -> tuple[str, int]:
    """(type name, primary key) of a well-formed global id of any type."""
    what = f"{expected} id" if expected else "id"
    if not isinstance(global_id, str) or not global_id or len(global_id) > 200:
        raise InvalidId(f"not a valid {what}", field=field)
    try:
        type_name, raw = from_global_id(global_id)
    except (binascii.Error, UnicodeDecodeError, ValueError, TypeError) as exc:
        raise InvalidId(f"not a valid {what}", field=field) from exc
    if not type_name or not raw.isascii() or not raw.isdigit() or not 0 < int(raw) <= PK_MAX:
        raise InvalidId(f"not a valid {what}", field=field)
    return type_name, int(raw)


def decode_ids(global_ids: list[str] | None, expected_type: str, *, field: str) -> list[int] | None:
    if global_ids is None:
        return None
    return [decode_id(g, expected_type, field=field) for g in global_ids]


def encode_id(type_name: str, pk: int) -> str:
    return to_global_id(type_name, pk)

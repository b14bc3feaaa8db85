"""Typed mutation errors `{field, message, code}` and the base class every mutation uses:
resolve -> validate -> one service call -> payload, with expected failures as typed errors."""

from typing import Any

import graphene

from config.exceptions import ApplicationError


class Error(graphene.ObjectType):
    field = graphene.String(description="The input field at fault, if any.")
    message = graphene.String(required=True)
    code = graphene.String(required=True, description="Stable machine-readable code.")


class NotAuthenticated(ApplicationError):
    code = "not_authenticated"


def require_user(info) -> Any:
    user = info.context.user
    if not user.is_authenticated:
        raise NotAuthenticated("sign in or send an API token")
    return user


class BaseMutation(graphene.Mutation):
    """Subclasses implement `perform(root, info, **data) -> dict` returning payload fields; an
    ApplicationError raised there becomes `errors` on the payload, never a GraphQL error."""

    errors = graphene.List(graphene.NonNull(Error), required=True)

    class Meta:
        abstract = True

    @classmethod
    def mutate(cls, root, info, **data):
        try:
            return cls(errors=[], **cls.perform(root, info, **data))
        except ApplicationError as error:
            return cls(errors=[Error(field=camel_case(error.field), message=error.message, code=error.code)])

    @classmethod
    def perform(cls, root, info, **data) -> dict[str, Any]:
        raise NotImplementedError


def camel_case(name: str | None) -> str | None:
    if not name:
        return name
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)

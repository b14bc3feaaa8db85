"""GraphQL mutations for API tokens. The secret is in the create payload, and nowhere else."""

import graphene
from graphene import relay
from graphene_django import DjangoObjectType

from accounts.models import ApiToken
from accounts.selectors import api_token_list
from accounts.services import api_token_create, api_token_revoke
from config.graphql.errors import BaseMutation, require_user
from config.graphql.ids import decode_id


class ApiTokenNode(DjangoObjectType):
    is_active = graphene.Boolean(required=True)

    class Meta:
        model = ApiToken
        name = "ApiToken"
        interfaces = (relay.Node,)
        fields = ("name", "prefix", "created", "last_used_at", "revoked_at", "expires_at", "read_only")

    @classmethod
    def get_queryset(cls, queryset, info):
        return queryset.filter(pk__in=api_token_list(user=info.context.user).values("pk"))

    def resolve_is_active(self, info) -> bool:
        return self.is_active


class CreateApiToken(BaseMutation):
    token = graphene.Field(ApiTokenNode)
    secret = graphene.String(description="The token itself: shown once, store it now.")

    class Arguments:
        name = graphene.String(required=True)
        expires_in_days = graphene.Int(description="Days until the token stops working; omit for never.")
        read_only = graphene.Boolean(description="A read-only token can query but not run mutations.")

    @classmethod
    def perform(cls, root, info, name, expires_in_days=None, read_only=False):
        issued = api_token_create(
            user=require_user(info),
            name=name,
            expires_in_days=expires_in_days,
            read_only=bool(read_only),
            issuer=getattr(info.context, "api_token", None),
        )
        return {"token": issued.token, "secret": issued.secret}


class RevokeApiToken(BaseMutation):
    token = graphene.Field(ApiTokenNode)

    class Arguments:
        id = graphene.ID(required=True)

    @classmethod
    def perform(cls, root, info, id):
        return {"token": api_token_revoke(user=require_user(info), token_id=decode_id(id, "ApiToken"))}


class AccountsMutation(graphene.ObjectType):
    create_api_token = CreateApiToken.Field()
    revoke_api_token = RevokeApiToken.Field()

"""The GraphQL schema root: each app contributes its queries and mutations."""

import graphene
from graphene import relay

from accounts.graphql import AccountsMutation
from config.graphql.ids import InvalidId, decode_any_id
from conversations.graphql import ConversationsMutation, ConversationsQuery
from corpora.graphql import CorporaMutation, CorporaQuery
from notifications.graphql import NotificationsMutation, NotificationsQuery
from research.graphql import ResearchMutation, ResearchQuery


class Query(CorporaQuery, ResearchQuery, NotificationsQuery, ConversationsQuery, graphene.ObjectType):
    node = graphene.Field(
        relay.Node, id=graphene.ID(required=True), description="Any object by its global id."
    )

    def resolve_node(root, info, id):
        # Decoded strictly, unlike relay.Node.Field: a malformed id or an unknown type is
        # `invalid_id`; an object the user may not see is null, as a missing one is.
        type_name, pk = decode_any_id(id)
        named = info.schema.get_type(type_name)
        node_type = getattr(named, "graphene_type", None)
        if node_type is None or relay.Node not in getattr(node_type._meta, "interfaces", ()):
            raise InvalidId("not a valid id", field="id")
        return node_type.get_node(info, pk)


class Mutation(
    CorporaMutation,
    ResearchMutation,
    ConversationsMutation,
    NotificationsMutation,
    AccountsMutation,
    graphene.ObjectType,
):
    pass


schema = graphene.Schema(query=Query, mutation=Mutation)

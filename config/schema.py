"""The GraphQL schema root: each app contributes its queries and mutations."""

import graphene
from graphene import relay

from accounts.graphql import AccountsMutation
from conversations.graphql import ConversationsMutation, ConversationsQuery
from corpora.graphql import CorporaQuery
from notifications.graphql import NotificationsMutation, NotificationsQuery
from research.graphql import ResearchMutation, ResearchQuery


class Query(CorporaQuery, ResearchQuery, NotificationsQuery, ConversationsQuery, graphene.ObjectType):
    node = relay.Node.Field()


class Mutation(
    ResearchMutation, ConversationsMutation, NotificationsMutation, AccountsMutation, graphene.ObjectType
):
    pass


schema = graphene.Schema(query=Query, mutation=Mutation)

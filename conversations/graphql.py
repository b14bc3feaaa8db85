"""GraphQL types, queries and mutations for conversations and the corpus chat."""

import graphene
from django.db.models import Prefetch
from graphene import relay
from graphene.types.generic import GenericScalar
from graphene_django import DjangoObjectType

from config.graphql.corpora import readable_corpus
from config.graphql.errors import BaseMutation, require_user
from config.graphql.ids import decode_id
from config.graphql.pagination import BoundedConnectionField
from conversations.chat import ConversationNotFound, chat_turn
from conversations.models import ChatMessage, Conversation, MessageRole
from conversations.selectors import conversation_list
from corpora.graphql import CorpusNode, corpora_with_counts
from research.graphql import ResearchReportNode

MESSAGES_MAX = 100

MessageRoleEnum = graphene.Enum("ChatMessageRole", [(r, r) for r in MessageRole.values])


class ChatMessageNode(DjangoObjectType):
    role = MessageRoleEnum(required=True)
    data = GenericScalar()

    class Meta:
        model = ChatMessage
        name = "ChatMessage"
        interfaces = (relay.Node,)
        fields = ("content", "created")

    @classmethod
    def get_queryset(cls, queryset, info):
        visible = conversation_list(user=info.context.user).values("pk")
        return queryset.filter(conversation_id__in=visible)

    def resolve_role(self, info) -> str:
        return str(MessageRole(self.role).value)


class ConversationNode(DjangoObjectType):
    corpus = graphene.Field(CorpusNode, required=True)
    messages = graphene.List(graphene.NonNull(ChatMessageNode), required=True, last=graphene.Int())

    class Meta:
        model = Conversation
        name = "Conversation"
        interfaces = (relay.Node,)
        fields = ("title", "created", "updated")

    @classmethod
    def get_queryset(cls, queryset, info):
        recent = ChatMessage.objects.order_by("-created", "-pk")[:MESSAGES_MAX]
        return queryset.filter(
            pk__in=conversation_list(user=info.context.user).values("pk")
        ).prefetch_related(
            corpora_with_counts(), Prefetch("messages", queryset=recent, to_attr="recent_messages")
        )

    def resolve_messages(self, info, last=None):
        limit = max(1, min(last or MESSAGES_MAX, MESSAGES_MAX))
        # Prefetched newest first, at most MESSAGES_MAX a conversation: no query per conversation.
        return self.recent_messages[:limit][::-1]


class ConversationsQuery(graphene.ObjectType):
    conversation = graphene.Field(ConversationNode, id=graphene.ID(required=True))
    conversations = BoundedConnectionField(ConversationNode, corpus_id=graphene.ID())

    def resolve_conversation(root, info, id):
        pk = decode_id(id, "Conversation")
        return ConversationNode.get_queryset(Conversation.objects.all(), info).filter(pk=pk).first()

    def resolve_conversations(root, info, corpus_id=None, **kwargs):
        queryset = Conversation.objects.order_by("-updated", "-pk")
        if corpus_id is not None:
            queryset = queryset.filter(corpus_id=decode_id(corpus_id, "Corpus", field="corpus_id"))
        # The connection field applies ConversationNode.get_queryset (visibility, prefetches) once.
        return queryset


class SendChatMessage(BaseMutation):
    conversation = graphene.Field(ConversationNode)
    message = graphene.Field(ChatMessageNode, description="The user's message as stored.")
    reply = graphene.Field(ChatMessageNode, description="The assistant's answer.")
    report = graphene.Field(ResearchReportNode, description="The research run this message started, if any.")

    class Arguments:
        corpus_id = graphene.ID(required=True)
        conversation_id = graphene.ID()
        content = graphene.String(required=True)

    @classmethod
    def perform(cls, root, info, corpus_id, content, conversation_id=None):
        user = require_user(info)
        corpus = readable_corpus(user=user, corpus_id=corpus_id)
        conversation = None
        if conversation_id is not None:
            pk = decode_id(conversation_id, "Conversation", field="conversation_id")
            conversation = conversation_list(user=user).filter(pk=pk, corpus=corpus).first()
            if conversation is None:
                raise ConversationNotFound("conversation not found", field="conversation_id")
        turn = chat_turn(user=user, corpus=corpus, content=content, conversation=conversation)
        return {
            "conversation": turn.conversation,
            "message": turn.message,
            "reply": turn.reply,
            "report": turn.report,
        }


class ConversationsMutation(graphene.ObjectType):
    send_chat_message = SendChatMessage.Field()

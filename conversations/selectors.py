"""Reads of conversations: a user sees only their own."""

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from conversations.models import ChatMessage, Conversation


def conversation_list(
    *, user: AbstractBaseUser | AnonymousUser, corpus_id: int | None = None
) -> QuerySet[Conversation]:
    if not user.is_authenticated:
        return Conversation.objects.none()
    queryset = Conversation.objects.filter(creator=user)
    if corpus_id is not None:
        queryset = queryset.filter(corpus_id=corpus_id)
    return queryset


def conversation_messages(*, conversation: Conversation) -> QuerySet[ChatMessage]:
    return conversation.messages.all()

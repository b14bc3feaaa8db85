"""Reads of conversations: a user sees only their own, and only while they may read their
corpus (a corpus no longer shared with them takes its conversations with it, as on the pages)."""

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from conversations.models import ChatMessage, Conversation
from corpora.selectors import corpus_list


def conversation_list(
    *, user: AbstractBaseUser | AnonymousUser, corpus_id: int | None = None
) -> QuerySet[Conversation]:
    if not user.is_authenticated:
        return Conversation.objects.none()
    queryset = Conversation.objects.filter(creator=user, corpus__in=corpus_list(user=user))
    if corpus_id is not None:
        queryset = queryset.filter(corpus_id=corpus_id)
    return queryset


def conversation_messages(*, conversation: Conversation) -> QuerySet[ChatMessage]:
    return conversation.messages.all()

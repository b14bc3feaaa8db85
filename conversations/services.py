"""Writes of conversations and their messages."""

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from config.exceptions import ApplicationError
from config.text import name_clean
from conversations.models import CONVERSATION_TITLE_MAX_CHARS, ChatMessage, Conversation, MessageRole
from corpora.models import Corpus

MESSAGE_MAX_CHARS = 20_000


class MessageInvalid(ApplicationError):
    code = "message_invalid"


def conversation_create(*, creator: AbstractBaseUser, corpus: Corpus, title: str = "") -> Conversation:
    title = name_clean(title)[:CONVERSATION_TITLE_MAX_CHARS]
    return Conversation.objects.create(creator=creator, corpus=corpus, title=title)


@transaction.atomic
def chat_message_append(
    *, conversation: Conversation, role: str, content: str, data: dict[str, Any] | None = None
) -> ChatMessage:
    if role not in MessageRole.values:
        raise MessageInvalid(f"unknown role {role!r}", field="role")
    content = content.strip()
    if "\x00" in content:
        raise MessageInvalid("a message must not contain NUL characters", field="content")
    if not content or len(content) > MESSAGE_MAX_CHARS:
        raise MessageInvalid(f"a message is 1 to {MESSAGE_MAX_CHARS} characters", field="content")
    message = ChatMessage.objects.create(
        conversation=conversation, role=role, content=content, data=data or {}
    )
    Conversation.objects.filter(pk=conversation.pk).update(updated=timezone.now())
    return message

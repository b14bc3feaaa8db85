"""Conversations with a corpus and their messages."""

from django.conf import settings
from django.db import models

from corpora.models import Corpus

CONVERSATION_TITLE_MAX_CHARS = 200


class Conversation(models.Model):
    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="conversations")
    creator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations"
    )
    title = models.CharField(max_length=CONVERSATION_TITLE_MAX_CHARS, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated", "-pk"]
        indexes = [models.Index(fields=["creator", "corpus", "-updated"], name="conversation_inbox")]

    def __str__(self) -> str:
        return self.title or f"Conversation {self.pk}"


class MessageRole(models.TextChoices):
    HUMAN = "HUMAN", "Human"
    ASSISTANT = "ASSISTANT", "Assistant"
    SYSTEM = "SYSTEM", "System"


class ChatMessage(models.Model):
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(max_length=16, choices=MessageRole.choices)
    content = models.TextField()
    # Structured extras, e.g. the report a SYSTEM message announces.
    data = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created", "pk"]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:40]}"

from django.contrib import admin

from conversations.models import ChatMessage, Conversation


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("title", "corpus", "creator", "updated")
    raw_id_fields = ("corpus", "creator")


@admin.register(ChatMessage)
class ChatMessageAdmin(admin.ModelAdmin):
    list_display = ("conversation", "role", "created")
    list_filter = ("role",)
    raw_id_fields = ("conversation",)
    readonly_fields = ("data", "created")

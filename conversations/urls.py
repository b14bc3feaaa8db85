from django.urls import path

from conversations.pages import chat_home, conversation_detail, conversation_messages_json

app_name = "conversations"
urlpatterns = [
    path("<int:corpus_id>/chat/", chat_home, name="home"),
    path("<int:corpus_id>/chat/<int:conversation_id>/", conversation_detail, name="detail"),
    path(
        "<int:corpus_id>/chat/<int:conversation_id>/messages.json",
        conversation_messages_json,
        name="messages",
    ),
]

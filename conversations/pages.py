"""The corpus chat in the web app: a corpus's conversations (the user's own), a conversation's
messages with a send form, and the JSON view its page polls so that answers and the SYSTEM
message announcing a finished research run appear without a reload. Sending goes through the
same chat turn and chat rate limit as the API's sendChatMessage; a corpus shared with the user
can be chatted with; another user's conversation is a 404."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_GET, require_http_methods

from config.exceptions import ApplicationError
from config.ratelimit import rate, rate_limit_hit
from conversations.chat import chat_turn
from conversations.models import ChatMessage, Conversation
from conversations.selectors import conversation_list, conversation_messages
from conversations.services import MESSAGE_MAX_CHARS
from corpora.exceptions import CorpusNotFound
from corpora.models import Corpus
from corpora.selectors import corpus_get_for_user
from research.models import ACTIVE_STATUSES, ResearchReport
from research.pages import markdown_html

CONVERSATIONS_SHOWN = 50


@login_required
@require_http_methods(["GET", "POST"])
def chat_home(request: HttpRequest, corpus_id: int) -> HttpResponse:
    """The corpus's conversations; POST starts a new one with its first message."""
    corpus = _readable(request, corpus_id)
    if request.method == "POST":
        turn = _send(request, corpus, conversation=None)
        if turn is not None:
            return redirect(_conversation_url(turn))
    conversations = conversation_list(user=request.user, corpus_id=corpus.pk)[:CONVERSATIONS_SHOWN]
    context = {"corpus": corpus, "conversations": conversations, "max_chars": MESSAGE_MAX_CHARS}
    return render(request, "conversations/chat_home.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def conversation_detail(request: HttpRequest, corpus_id: int, conversation_id: int) -> HttpResponse:
    corpus = _readable(request, corpus_id)
    conversation = _own(request, corpus, conversation_id)
    if request.method == "POST":
        _send(request, corpus, conversation=conversation)
        return redirect(_conversation_url(conversation))
    items = [_message_view(m) for m in conversation_messages(conversation=conversation)]
    context = {
        "corpus": corpus,
        "conversation": conversation,
        "items": items,
        "last_id": items[-1]["id"] if items else 0,
        "max_chars": MESSAGE_MAX_CHARS,
        "messages_url": reverse("conversations:messages", args=[corpus.pk, conversation.pk]),
        "researching": _researching(conversation),
    }
    return render(request, "conversations/conversation.html", context)


@login_required
@require_GET
def conversation_messages_json(request: HttpRequest, corpus_id: int, conversation_id: int) -> JsonResponse:
    """Messages after `?after=<id>`, rendered, and whether a run this chat started goes on
    (static/conversations/chat.js polls faster while one does)."""
    corpus = _readable(request, corpus_id)
    conversation = _own(request, corpus, conversation_id)
    after = request.GET.get("after", "0")
    after_id = int(after) if after.isascii() and after.isdigit() and len(after) < 19 else 0
    newer = conversation_messages(conversation=conversation).filter(pk__gt=after_id)
    response = JsonResponse(
        {"messages": [_message_view(m) for m in newer], "researching": _researching(conversation)}
    )
    add_never_cache_headers(response)
    return response


def _send(request: HttpRequest, corpus: Corpus, *, conversation: Conversation | None):
    try:
        rate_limit_hit(scope="chat", key=f"user:{request.user.pk}", rate=rate("chat"))
        content = request.POST.get("content", "")
        return chat_turn(user=request.user, corpus=corpus, content=content, conversation=conversation)
    except ApplicationError as error:  # message_invalid, rate_limited, ...
        messages.error(request, f"{error.message} ({error.code})")
        return None


def _message_view(message: ChatMessage) -> dict:
    """A message as the page and its poll show it: its content as sanitized HTML, and the
    research report it started or announces, if any."""
    return {
        "id": message.pk,
        "role": message.role,
        "role_display": message.get_role_display(),
        "created": message.created.isoformat(),
        "html": markdown_html(message.content),
        "report_url": reverse("research:report-detail", args=[message.data["slug"]])
        if message.data.get("slug")
        else "",
    }


def _researching(conversation: Conversation) -> bool:
    return ResearchReport.objects.filter(conversation=conversation, status__in=ACTIVE_STATUSES).exists()


def _conversation_url(turn_or_conversation) -> str:
    conversation = getattr(turn_or_conversation, "conversation", turn_or_conversation)
    return reverse("conversations:detail", args=[conversation.corpus_id, conversation.pk]) + "#composer"


def _readable(request: HttpRequest, corpus_id: int) -> Corpus:
    try:
        return corpus_get_for_user(user=request.user, corpus_id=corpus_id)
    except CorpusNotFound as error:
        raise Http404("corpus not found") from error


def _own(request: HttpRequest, corpus: Corpus, conversation_id: int) -> Conversation:
    mine = conversation_list(user=request.user, corpus_id=corpus.pk)
    conversation = mine.filter(pk=conversation_id).first()
    if conversation is None:
        raise Http404("conversation not found")
    return conversation

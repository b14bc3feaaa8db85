"""One chat turn: store the user's message, let the chat agent answer (searching the corpus or
starting a research run), store the reply. The agent runs on an event loop while its database
calls come back to this thread, as research runs do."""

import asyncio
import logging
from dataclasses import dataclass

from asgiref.sync import async_to_sync
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from pydantic_ai import UsageLimits
from pydantic_ai.exceptions import ModelRequestTimeout, UsageLimitExceeded
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart

from config.exceptions import ApplicationError
from conversations.agent import ChatDeps, chat_agent
from conversations.models import ChatMessage, Conversation, MessageRole
from conversations.offline import NOTICE_OPENING, OFFLINE_CHAT_MODEL_NAME, offline_chat_model
from conversations.services import MESSAGE_MAX_CHARS, MessageInvalid, chat_message_append, conversation_create
from corpora.models import Corpus
from llms.prompts import chat_user_prompt
from llms.providers import OFFLINE, ChosenModel, Engine, configured_model
from research.citations import markdown_literal
from research.models import ResearchReport

logger = logging.getLogger(__name__)

HISTORY_MESSAGES = 12
CHAT_REQUEST_LIMIT = 6
CHAT_TITLE_CHARS = 80
CHAT_MODEL_FAILED = "chat_model_failed"
CHAT_LIMIT_REACHED = "chat_limit_reached"
CHAT_MODEL_TIMEOUT = "chat_model_timeout"
TRUNCATED_MARK = "\n\n[… reply cut at {limit:,} characters]"


class ConversationNotFound(ApplicationError):
    code = "conversation_not_found"


@dataclass(frozen=True)
class ChatTurn:
    conversation: Conversation
    message: ChatMessage
    reply: ChatMessage
    report: ResearchReport | None


def chat_turn(
    *, user: AbstractBaseUser, corpus: Corpus, content: str, conversation: Conversation | None = None
) -> ChatTurn:
    """The caller has checked that the user may read `corpus` and owns `conversation`."""
    content = (content or "").strip()
    if not content or len(content) > MESSAGE_MAX_CHARS:
        # Checked before the turn, which would first create the new conversation.
        raise MessageInvalid(f"a message is 1 to {MESSAGE_MAX_CHARS:,} characters", field="content")
    if conversation is None:
        conversation = conversation_create(
            creator=user, corpus=corpus, title=" ".join(content.split())[:CHAT_TITLE_CHARS]
        )
    elif conversation.creator_id != user.pk or conversation.corpus_id != corpus.pk:
        raise ConversationNotFound("conversation not found", field="conversation_id")
    history = _history(conversation)
    message = chat_message_append(conversation=conversation, role=MessageRole.HUMAN, content=content)
    deps = ChatDeps(user=user, corpus=corpus, conversation=conversation, origin_message=message)
    try:
        answer = async_to_sync(_answer)(deps, content, history)
    except ApplicationError as exc:
        answer = f"I could not answer: {exc.message} ({exc.code})."
    except Exception as exc:  # the model or its provider failed: the user still gets a reply
        logger.warning("chat turn in conversation %s failed", conversation.pk, exc_info=True)
        answer = _failure_reply(exc, deps.started_report)
    report = deps.started_report
    reply = chat_message_append(
        conversation=conversation,
        role=MessageRole.ASSISTANT,
        content=_storable(answer),
        data={"report_id": report.pk, "slug": report.slug} if report else {},
    )
    return ChatTurn(conversation=conversation, message=message, reply=reply, report=report)


async def _answer(deps: ChatDeps, content: str, history: list[ModelMessage]) -> str:
    chosen = chat_model()
    limits = UsageLimits(
        request_limit=CHAT_REQUEST_LIMIT, total_tokens_limit=settings.CHAT_TOKEN_LIMIT or None
    )
    try:
        # The turn holds a web worker: it ends by its deadline, however slow the model.
        async with asyncio.timeout(settings.CHAT_TURN_TIMEOUT_SECONDS):
            result = await chat_agent.run(
                chat_user_prompt(content=content),
                deps=deps,
                model=chosen.model,
                message_history=history,
                usage_limits=limits,
            )
    finally:
        if chosen.aclose is not None:
            await chosen.aclose()
    return result.output


def _failure_reply(exc: Exception, report: ResearchReport | None) -> str:
    """What the user reads when the model failed: that it failed, with a code, and whether the
    turn had already started a research run (so that they do not start a second one)."""
    if isinstance(exc, UsageLimitExceeded):
        code = CHAT_LIMIT_REACHED
    elif isinstance(exc, TimeoutError | ModelRequestTimeout):
        code = CHAT_MODEL_TIMEOUT
    else:
        code = CHAT_MODEL_FAILED
    failed = f"The chat model failed to answer ({code}: {type(exc).__name__}); please try again."
    if report is None:
        return failed
    return (
        f"Started deep research \u201c{markdown_literal(report.title)}\u201d ({report.depth}). "
        "It runs in the background; I'll post the report here when it is ready. "
        f"The chat model failed after starting it ({code}: {type(exc).__name__})."
    )


def _storable(answer: str | None) -> str:
    """The model's reply as a message can hold it: NUL characters dropped, cut to the message
    limit (the reply is the model's, never a reason to refuse the user's message)."""
    answer = (answer or "").replace("\x00", "").strip() or "(no answer)"
    if len(answer) > MESSAGE_MAX_CHARS:
        mark = TRUNCATED_MARK.format(limit=MESSAGE_MAX_CHARS)
        answer = answer[: MESSAGE_MAX_CHARS - len(mark)].rstrip() + mark
    return answer


def chat_model() -> ChosenModel:
    """The chat agent's model: CHAT_MODEL, else RESEARCH_MODEL's, else the offline chat mind."""
    spec = (settings.CHAT_MODEL or settings.RESEARCH_MODEL or OFFLINE).strip()
    if spec == OFFLINE:
        return ChosenModel(offline_chat_model(), OFFLINE_CHAT_MODEL_NAME, Engine.OFFLINE)
    return configured_model(spec)


def _history(conversation: Conversation) -> list[ModelMessage]:
    """The recent turns as model messages (SYSTEM notes go in as user-side context)."""
    recent = list(conversation.messages.order_by("-created", "-pk")[:HISTORY_MESSAGES])[::-1]
    history: list[ModelMessage] = []
    for message in recent:
        if message.role == MessageRole.ASSISTANT:
            history.append(ModelResponse(parts=[TextPart(message.content)]))
        elif message.role == MessageRole.HUMAN:
            history.append(ModelRequest(parts=[UserPromptPart(chat_user_prompt(content=message.content))]))
        else:
            history.append(ModelRequest(parts=[UserPromptPart(NOTICE_OPENING + message.content)]))
    while history and isinstance(history[0], ModelResponse):  # a history opens with a request
        history.pop(0)
    return history

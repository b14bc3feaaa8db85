"""The corpus pages of the web app: create a corpus (from home), the corpus page (its documents
with their embedding state, a search box, and for its creator an upload form, delete buttons,
rename, share / unshare and delete the corpus), and the document view. Server-rendered; every
read goes through the selectors and every write through the services the API uses, so the same
rules and error codes apply. A corpus the user cannot see is a 404; a corpus shared with them
is readable and searchable, not manageable (403)."""

import logging

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from config.exceptions import ApplicationError
from config.ratelimit import RateLimited, rate, rate_limit_hit
from corpora.constants import UPLOAD_FIELD
from corpora.exceptions import CorpusHasReports, CorpusNotFound, CorpusPermissionDenied, DocumentNotFound
from corpora.extraction import SUPPORTED_SUFFIXES
from corpora.highlight import parse_mark, passage_marked_html
from corpora.models import Corpus, Passage
from corpora.selectors import (
    corpus_get_for_creator,
    corpus_get_for_user,
    corpus_shared_with,
    document_get_for_user,
    document_list_with_counts,
    document_passages,
    passage_search,
)
from corpora.services import (
    corpus_create,
    corpus_delete,
    corpus_rename,
    corpus_share,
    corpus_unshare,
    document_delete,
)
from corpora.uploads import documents_upload
from research.pages import research_form_pop

logger = logging.getLogger(__name__)

SEARCH_RESULTS = 10


@login_required
@require_POST
def corpus_new(request: HttpRequest) -> HttpResponse:
    try:
        corpus = corpus_create(creator=request.user, name=request.POST.get("name", ""))
    except ApplicationError as error:
        messages.error(request, f"{error.message} ({error.code})")
        return redirect("home")
    messages.success(request, f"Created “{corpus.name}”: add documents below.")
    return redirect("corpora:detail", corpus_id=corpus.pk)


@login_required
@require_http_methods(["GET"])
def corpus_detail(request: HttpRequest, corpus_id: int) -> HttpResponse:
    return _page(request, _readable(request, corpus_id))


@login_required
@require_http_methods(["GET", "POST"])
def corpus_upload(request: HttpRequest, corpus_id: int) -> HttpResponse:
    if request.method == "GET":
        # The form's address opened (signing in again after the session ended sends the user
        # back to it, as does Enter in the address bar after an upload): the corpus page.
        return redirect("corpora:detail", corpus_id=corpus_id)
    corpus = _manageable(request, corpus_id)
    # The declared size is checked before the body is read (request.FILES reads it).
    declared = request.META.get("CONTENT_LENGTH") or ""
    if not declared.isdigit() or int(declared) > settings.UPLOAD_MAX_BYTES:
        limit = settings.UPLOAD_MAX_BYTES // (1024 * 1024)
        return _page(
            request, corpus, error=f"An upload is at most {limit} MB in all (request_too_large).", status=413
        )
    uploads = request.FILES.getlist(UPLOAD_FIELD)
    if not uploads:
        return _page(request, corpus, error="Choose one or more files first (no_files).", status=400)
    try:
        rate_limit_hit(
            scope="uploads", key=f"user:{request.user.pk}", rate=rate("uploads"), amount=len(uploads)
        )
    except RateLimited as limited:
        response = _page(request, corpus, error=f"{limited.message} ({limited.code})", status=429)
        response["Retry-After"] = str(limited.retry_after)
        return response
    outcomes = documents_upload(corpus=corpus, uploads=uploads)
    # Post/redirect/get: the results are shown once on the corpus page, so reloading it does not
    # post the files again.
    request.session[_outcomes_key(corpus.pk)] = [
        {
            "filename": outcome.filename,
            "status": outcome.status,
            "code": outcome.code,
            "message": outcome.message,
            "passages": outcome.passages,
        }
        for outcome in outcomes
    ]
    return redirect("corpora:detail", corpus_id=corpus.pk)


@login_required
@require_POST
def document_remove(request: HttpRequest, corpus_id: int, document_id: int) -> HttpResponse:
    corpus = _manageable(request, corpus_id)
    try:
        document = document_get_for_user(user=request.user, document_id=document_id)
        if document.corpus_id != corpus.pk:
            raise DocumentNotFound("document not found")
        document_delete(user=request.user, document=document)
    except DocumentNotFound as error:
        raise Http404("document not found") from error
    except ApplicationError as error:  # corpus_busy: a run is reading it
        messages.error(request, f"{error.message} ({error.code})")
    else:
        messages.success(request, f"Deleted “{document.title}” and its passages.")
    return redirect("corpora:detail", corpus_id=corpus.pk)


@login_required
@require_http_methods(["GET"])
def passage_open(request: HttpRequest, passage_id: int) -> HttpResponse:
    """A passage by its id alone (a chat answer's source, "passage 617" of an export): its
    document's view at that passage, highlighted. Whoever may read the corpus; 404 otherwise."""
    found = Passage.objects.filter(pk=passage_id).values_list("corpus_id", "document_id").first()
    if found is None:
        raise Http404("passage not found")
    corpus = _readable(request, found[0])
    address = reverse("corpora:document", args=[corpus.pk, found[1]])
    return redirect(f"{address}?passage={passage_id}#passage-{passage_id}")


@login_required
@require_http_methods(["GET"])
def document_detail(request: HttpRequest, corpus_id: int, document_id: int) -> HttpResponse:
    """A document's text as its passages, each with an anchor (`#passage-<id>`); opened from a
    report's footnote (`?passage=<id>&mark=<start>-<end>`) the cited passage is highlighted and
    its quote marked. Readable by whoever may read the corpus."""
    corpus = _readable(request, corpus_id)
    try:
        document = document_get_for_user(user=request.user, document_id=document_id)
    except DocumentNotFound as error:
        raise Http404("document not found") from error
    if document.corpus_id != corpus.pk:
        raise Http404("document not found")
    focus = request.GET.get("passage", "")
    focus_id = int(focus) if focus.isascii() and focus.isdigit() and len(focus) < 19 else None
    mark = parse_mark(request.GET.get("mark", ""))
    passages = [
        (
            passage,
            passage_marked_html(passage.text, passage.start, mark if passage.pk == focus_id else None),
        )
        for passage in document_passages(document=document)
    ]
    context = {"corpus": corpus, "document": document, "passages": passages, "focus_id": focus_id}
    return render(request, "corpora/document_detail.html", context)


@login_required
@require_POST
def corpus_rename_page(request: HttpRequest, corpus_id: int) -> HttpResponse:
    corpus = _manageable(request, corpus_id)
    try:
        corpus = corpus_rename(user=request.user, corpus=corpus, name=request.POST.get("name", ""))
    except ApplicationError as error:  # corpus_name_invalid, corpus_name_taken
        messages.error(request, f"{error.message} ({error.code})")
    else:
        messages.success(request, f"Renamed to “{corpus.name}”.")
    return redirect("corpora:detail", corpus_id=corpus.pk)


@login_required
@require_POST
def corpus_share_page(request: HttpRequest, corpus_id: int) -> HttpResponse:
    """Share with a user by username, or (`action=unshare`) take the sharing back."""
    corpus = _manageable(request, corpus_id)
    unshare = request.POST.get("action") == "unshare"
    try:
        grantee = (corpus_unshare if unshare else corpus_share)(
            user=request.user, corpus=corpus, username=request.POST.get("username", "")
        )
    except ApplicationError as error:  # user_not_found, cannot_share_with_self
        messages.error(request, f"{error.message} ({error.code})")
    else:
        name = grantee.get_username()
        messages.success(request, f"No longer shared with {name}." if unshare else f"Shared with {name}.")
    return redirect("corpora:detail", corpus_id=corpus.pk)


@login_required
@require_POST
def corpus_delete_page(request: HttpRequest, corpus_id: int) -> HttpResponse:
    """Delete the corpus once its name is typed to confirm; its reports go with it only when
    the box is ticked (otherwise a corpus with reports is refused: corpus_has_reports)."""
    corpus = _manageable(request, corpus_id)
    if " ".join(request.POST.get("confirm", "").split()) != corpus.name:
        messages.error(request, "Type the corpus's name to confirm (confirmation_mismatch).")
        return redirect("corpora:detail", corpus_id=corpus.pk)
    try:
        deleted = corpus_delete(
            user=request.user, corpus=corpus, delete_reports=request.POST.get("delete_reports") == "on"
        )
    except CorpusHasReports as error:  # the page's way to delete them is its box, not the API's argument
        messages.error(
            request,
            f"{error.message.split(';')[0]}: tick “Also delete the research reports on it” to delete "
            f"them with it, or keep the corpus ({error.code}).",
        )
        return redirect("corpora:detail", corpus_id=corpus.pk)
    except ApplicationError as error:  # corpus_busy
        messages.error(request, f"{error.message} ({error.code})")
        return redirect("corpora:detail", corpus_id=corpus.pk)
    reports = f" and {deleted.reports} report{pluralize(deleted.reports)}" if deleted.reports else ""
    messages.success(
        request,
        f"Deleted “{corpus.name}” with {deleted.documents} document{pluralize(deleted.documents)}{reports}.",
    )
    return redirect("home")


def _readable(request: HttpRequest, corpus_id: int) -> Corpus:
    try:
        return corpus_get_for_user(user=request.user, corpus_id=corpus_id)
    except CorpusNotFound as error:
        raise Http404("corpus not found") from error


def _manageable(request: HttpRequest, corpus_id: int) -> Corpus:
    try:
        return corpus_get_for_creator(user=request.user, corpus_id=corpus_id)
    except CorpusNotFound as error:
        raise Http404("corpus not found") from error
    except CorpusPermissionDenied as error:  # shared with them: they know it exists
        raise PermissionDenied("only the corpus's creator can do that") from error


def _outcomes_key(corpus_id: int) -> str:
    return f"corpora:upload-outcomes:{corpus_id}"


def _page(
    request: HttpRequest,
    corpus: Corpus,
    *,
    error: str | None = None,
    status: int = 200,
) -> HttpResponse:
    query = " ".join(request.GET.get("q", "").split())
    hits, search_error = [], None
    if query:
        try:
            hits = passage_search(corpus=corpus, query=query, top_k=SEARCH_RESULTS)
        except ApplicationError as failure:
            search_error = f"{failure.message} ({failure.code})"
    documents = document_list_with_counts(corpus=corpus)
    is_creator = corpus.creator_id == request.user.pk
    context = {
        "corpus": corpus,
        "is_creator": is_creator,
        "shared_with": corpus_shared_with(corpus=corpus) if is_creator else [],
        "documents": documents,
        "query": query,
        "hits": hits,
        "search_error": search_error,
        "outcomes": request.session.pop(_outcomes_key(corpus.pk), None),  # an upload's, once
        "error": error,
        "upload_limit_mb": settings.UPLOAD_MAX_BYTES // (1024 * 1024),
        "upload_limit_bytes": settings.UPLOAD_MAX_BYTES,
        "upload_accept": ",".join(SUPPORTED_SUFFIXES),  # what ingestion reads, so the picker offers it all
        "research_form": research_form_pop(request, corpus.pk),
    }
    return render(request, "corpora/corpus_detail.html", context, status=status)

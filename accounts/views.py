"""The account page: a signed-in user's API tokens, created (the secret shown once) and revoked.
Every token call goes through accounts.services, as the GraphQL mutations do."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods, require_POST

from accounts.forms import ApiTokenForm
from accounts.selectors import api_token_list
from accounts.services import IssuedToken, TokenError, TokenNotFound, api_token_create, api_token_revoke


def _page(request: HttpRequest, form: ApiTokenForm, issued: IssuedToken | None = None, status: int = 200):
    context = {"form": form, "tokens": api_token_list(user=request.user), "issued": issued}
    response = render(request, "accounts/tokens.html", context, status=status)
    # The page may hold a secret shown once: no cache keeps a copy.
    add_never_cache_headers(response)
    return response


@login_required
@require_http_methods(["GET", "POST"])
def api_tokens(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return _page(request, ApiTokenForm())
    form = ApiTokenForm(request.POST)
    if not form.is_valid():
        return _page(request, form, status=400)
    try:
        issued = api_token_create(
            user=request.user,
            name=form.cleaned_data["name"],
            expires_in_days=form.cleaned_data["expires_in_days"],
            read_only=form.cleaned_data["read_only"],
        )
    except TokenError as error:
        form.add_error(None, f"{error.message} ({error.code})")
        return _page(request, form, status=400)
    # Rendered, not redirected: the secret must not travel in a URL or rest in the session.
    return _page(request, ApiTokenForm(), issued=issued, status=201)


@login_required
@require_POST
def api_token_revoke_view(request: HttpRequest, token_id: int) -> HttpResponse:
    try:
        token = api_token_revoke(user=request.user, token_id=token_id)
    except TokenNotFound as error:  # another user's token is not found either
        raise Http404("token not found") from error
    messages.success(request, f"Revoked “{token.name}”: it no longer works.")
    return redirect("account-tokens")

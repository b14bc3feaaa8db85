"""URL routes."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from accounts.views import api_token_revoke_view, api_tokens
from config.graphql.view import DeepciteGraphQLView
from config.health import healthz
from config.home import home
from corpora.views import document_upload

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("accounts/password/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("accounts/tokens/", api_tokens, name="account-tokens"),
    path("accounts/tokens/<int:token_id>/revoke/", api_token_revoke_view, name="account-token-revoke"),
    path("", home, name="home"),
    path("graphql", DeepciteGraphQLView.as_view(graphiql=True), name="graphql"),
    path("api/corpora/<str:corpus_ref>/documents", document_upload, name="corpus-documents-upload"),
    path("healthz", healthz, name="healthz"),
    path("reports/", include("research.urls")),
    path("corpora/", include("corpora.urls")),
    path("corpora/", include("conversations.urls")),
    path("notifications/", include("notifications.urls")),
]

handler400 = "config.errors.bad_request"
handler403 = "config.errors.permission_denied"

"""URL routes."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from config.graphql.view import DeepciteGraphQLView
from config.health import healthz

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("graphql", DeepciteGraphQLView.as_view(graphiql=True), name="graphql"),
    path("healthz", healthz, name="healthz"),
    path("reports/", include("research.urls")),
]

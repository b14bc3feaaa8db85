"""Production settings: refuse to start without a real secret, secure cookies behind TLS."""

from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_int
from config.settings.base import *  # noqa: F403
from config.settings.base import MIDDLEWARE, SECRET_KEY

# What `manage.py check --deploy` asks of a key (security.W009): 50 characters, 5 of them distinct.
SECRET_KEY_MIN_CHARS = 50
if not SECRET_KEY or len(SECRET_KEY) < SECRET_KEY_MIN_CHARS or len(set(SECRET_KEY)) < 5:
    raise ImproperlyConfigured(
        f"SECRET_KEY must be set to at least {SECRET_KEY_MIN_CHARS} random characters "
        "(python -c 'import secrets; print(secrets.token_urlsafe(50))')"
    )

SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
# Only for a domain whose every subdomain is HTTPS-only (and, for preload, meant for browsers'
# built-in lists): both are hard to undo, so they are off unless the operator says so.
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# Redirect plain-HTTP requests to HTTPS (behind a TLS proxy, which usually does it already);
# /healthz stays reachable over HTTP for container healthchecks.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

# Collected static files (the admin's, the pages') served by the app process itself, right
# after SecurityMiddleware as WhiteNoise asks. (runserver serves them in development.)
MIDDLEWARE = [MIDDLEWARE[0], "whitenoise.middleware.WhiteNoiseMiddleware", *MIDDLEWARE[1:]]

# Hashed, compressed static files built by `collectstatic` (the image runs it at build time).
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

"""The Content-Security-Policy header: on every response unless a view set its own. The pages
run no inline script and carry no inline style (their scripts and the stylesheet are static
files), so the default policy allows only this origin's files; a report, passage or title that
smuggled markup past the sanitizer still could not run a script or load anything from
elsewhere."""

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

HEADER = "Content-Security-Policy"


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if settings.CONTENT_SECURITY_POLICY and HEADER not in response:
            response[HEADER] = settings.CONTENT_SECURITY_POLICY
        return response


def policy_with_sources(policy: str, sources: dict[str, str]) -> str:
    """`policy` with each directive in `sources` also allowing that source (a directive the
    policy lacks is added)."""
    directives = [d.strip() for d in policy.split(";") if d.strip()]
    names = [d.split()[0] for d in directives]
    for name, source in sources.items():
        if name in names:
            index = names.index(name)
            directives[index] = f"{directives[index]} {source}"
        else:
            directives.append(f"{name} {source}")
            names.append(name)
    return "; ".join(directives)

"""The Content-Security-Policy of the hub's own pages (home, developer pages, admin, console,
the OAuth2 consent page). The other security headers come from Django's own middleware and
settings (`X-Content-Type-Options`, `Referrer-Policy`, `X-Frame-Options`); the A2A doors answer
JSON without passing through any middleware, so none of this costs them anything.

Scripts may come only from the hub itself: the pages keep no inline scripts or event handler
attributes. Styles may be inline: the admin's widgets and the console's bars set `style`
attributes, and an injected style cannot run code. `form-action` is left out on purpose: the
consent page's form ends in a redirect to the client's own `redirect_uri`, which browsers
check against it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest
from django.http.response import HttpResponseBase

HEADER = "Content-Security-Policy"
POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'self'; frame-ancestors 'none'"
)

Handler = Callable[[HttpRequest], HttpResponseBase | Awaitable[HttpResponseBase]]


def policy_for(request: HttpRequest) -> str:
    # The console's live pages open a WebSocket to the page's own host; older browsers do not
    # count ws:/wss: as 'self', so the host is named.
    host = request.get_host()
    return f"{POLICY}; connect-src 'self' ws://{host} wss://{host}"


def with_policy(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    if HEADER not in response and response.get("Content-Type", "").startswith("text/html"):
        response[HEADER] = policy_for(request)
    return response


class ContentSecurityPolicyMiddleware:
    """Adds the policy to every HTML answer that has none."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if self.is_async:
            return self.answer_async(request)
        response = self.get_response(request)
        assert isinstance(response, HttpResponseBase)
        return with_policy(request, response)

    async def answer_async(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        assert not isinstance(response, HttpResponseBase)
        return with_policy(request, await response)

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

from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.utils.deprecation import MiddlewareMixin

HEADER = "Content-Security-Policy"
POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'self'; frame-ancestors 'none'"
)


def policy_for(request: HttpRequest) -> str:
    # The console's live pages open a WebSocket to the page's own host; older browsers do not
    # count ws:/wss: as 'self', so the host is named.
    host = request.get_host()
    return f"{POLICY}; connect-src 'self' ws://{host} wss://{host}"


class ContentSecurityPolicyMiddleware(MiddlewareMixin):
    """Adds the policy to every HTML answer that has none."""

    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        if HEADER not in response and response.get("Content-Type", "").startswith("text/html"):
            response[HEADER] = policy_for(request)
        return response

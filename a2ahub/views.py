"""Hub-wide documents of the project layer: the public keys that verify what the hub signs,
/favicon.ico, and the admin's "view on site" redirect. The operator's probes are answered in
front of Django (`a2ahub.probes`)."""

from __future__ import annotations

from django.contrib.contenttypes.views import shortcut
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponsePermanentRedirect,
    JsonResponse,
)
from django.templatetags.static import static
from django.urls import NoReverseMatch
from django.views.decorators.http import require_GET

from a2ahub.signing import published_keys


@require_GET
def favicon(request: HttpRequest) -> HttpResponsePermanentRedirect:
    """Browsers ask for /favicon.ico on pages that name no icon (JSON, DRF's pages): the
    hub's one icon, so no page logs a 404 for it."""
    return HttpResponsePermanentRedirect(static("hub/favicon.svg"))


def view_on_site(request: HttpRequest, content_type_id: int, object_id: str) -> HttpResponse:
    """The admin's redirect to an object's page (/admin/r/<type>/<id>/). An object whose page
    the hub does not mount (django-oauth-toolkit's application) has none: 404, not a 500."""
    try:
        return shortcut(request, content_type_id, object_id)
    except NoReverseMatch:
        raise Http404("This object has no page on the site.") from None


@require_GET
def jwks(request: HttpRequest) -> JsonResponse:
    response = JsonResponse({"keys": published_keys()})
    response["Cache-Control"] = "public, max-age=300"
    response["Access-Control-Allow-Origin"] = "*"
    return response

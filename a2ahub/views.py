"""Hub-wide documents of the project layer: the public keys that verify what the hub signs,
the operator's probes (liveness, readiness and Prometheus metrics), /favicon.ico, and the
admin's "view on site" redirect."""

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
from django.utils.log import log_response
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from a2ahub import health, metrics, metrics_access
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


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """The process answers; nothing else is asked (a load balancer's liveness probe)."""
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    parts = health.readiness()
    failing = sorted(name for name, state in parts.items()
                     if state not in {health.READY, health.EMBEDDED})  # fmt: skip
    status = "not ready" if failing else "ready"
    response = JsonResponse({"status": status, "failing": failing, "parts": parts},
                            status=503 if failing else 200)  # fmt: skip
    if failing:
        # Not an error of this process: it waits for what it needs (each part's reason is a
        # warning of its own). Django would log every 503 as an ERROR.
        log_response("Not ready: %s (%s)", request.path, ", ".join(failing),
                     response=response, request=request, level="info")  # fmt: skip
    return response


@never_cache
@require_GET
def prometheus(request: HttpRequest) -> HttpResponse:
    address = request.META.get("REMOTE_ADDR", "")
    refused = metrics_access.refusal(address, request.headers.get("Authorization", ""))
    if refused is not None:
        status, headers, text = refused
        return HttpResponse(text, status=status, content_type="text/plain", headers=headers)
    return HttpResponse(metrics.exposition(), content_type=CONTENT_TYPE_LATEST)

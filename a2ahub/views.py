"""Hub-wide documents of the project layer: the public keys that verify what the hub signs."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from a2ahub.signing import published_keys


@require_GET
def jwks(request: HttpRequest) -> JsonResponse:
    response = JsonResponse({"keys": published_keys()})
    response["Cache-Control"] = "public, max-age=300"
    response["Access-Control-Allow-Origin"] = "*"
    return response

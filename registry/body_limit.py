"""The registry's body limit (REGISTRY_MAX_BODY_BYTES), for the web server to enforce before
it reads a body (`a2ahub.body_limit`), answered in the registry's error shape."""

from __future__ import annotations

import json

from django.conf import settings

from a2ahub.body_limit import Limit, Refusal, Scope

# Where the site's URL map mounts the registry (`a2ahub.urls`).
PREFIX = "/registry/"


def body_limit_at(scope: Scope) -> Limit | None:
    if not scope.get("path", "").startswith(PREFIX):
        return None
    return Limit(settings.REGISTRY_MAX_BODY_BYTES, refusal)


def refusal() -> Refusal:
    message = f"The request body is over {settings.REGISTRY_MAX_BODY_BYTES} bytes."
    error = {"code": 413, "status": "PAYLOAD_TOO_LARGE", "message": message, "field": "body"}
    body = json.dumps({"error": error}).encode()
    return Refusal(413, [(b"content-type", b"application/json")], body)

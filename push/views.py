"""The built-in webhook inbox: a receiver inside the hub, so push can be tried alone."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from a2ahub.outbound import UnsafeURL, hub_path
from a2ahub.signing import SignatureInvalid, published_keys, verify_delivery
from push.configs import INBOX_PATH
from push.models import InboxMessage, WebhookInbox

INBOX_MAX_BYTES = 1024 * 1024


def check_audience(claims: dict[str, Any], token: str) -> None:
    """A signature made for another receiver is not valid here: its `aud` must be this inbox's
    URL (by its path: the hub's host has several spellings, and the proxy's is not ours)."""
    aud = claims.get("aud")
    try:
        ours = isinstance(aud, str) and hub_path(aud) == f"{INBOX_PATH}{token}/"
    except UnsafeURL:
        ours = False
    if not ours or not urlsplit(aud).scheme:
        raise SignatureInvalid(f"the signature is for {aud!r}, not this inbox")


@csrf_exempt
@require_POST
def inbox(request: HttpRequest, token: str) -> HttpResponse:
    """Store what arrived and whether its signature holds; the sender only learns 'received'."""
    box = get_object_or_404(WebhookInbox, token=token)
    body = request.body[: INBOX_MAX_BYTES + 1]
    if len(body) > INBOX_MAX_BYTES:
        return JsonResponse({"error": "too large"}, status=413)
    valid, problem = True, ""
    try:
        claims = verify_delivery(request.headers.get("A2A-Push-Signature", ""), body,
                                 published_keys())  # fmt: skip
        check_audience(claims, token)
    except SignatureInvalid as exc:
        valid, problem = False, str(exc)[:300]
    InboxMessage.objects.create(
        inbox=box, delivery_id=request.headers.get("webhook-id", "")[:100],
        content_type=request.content_type or "", body=body.decode("utf-8", "replace"),
        signature_valid=valid, signature_error=problem,
        token_header="X-A2A-Notification-Token" in request.headers,
    )  # fmt: skip
    return JsonResponse({"received": True})

"""The built-in webhook inbox: a receiver inside the hub, so push can be tried alone."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from a2ahub.signing import SignatureInvalid, published_keys, verify_delivery
from push.models import InboxMessage, WebhookInbox

INBOX_MAX_BYTES = 1024 * 1024


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
        verify_delivery(request.headers.get("A2A-Push-Signature", ""), body, published_keys())
    except SignatureInvalid as exc:
        valid, problem = False, str(exc)[:300]
    InboxMessage.objects.create(
        inbox=box, delivery_id=request.headers.get("webhook-id", "")[:100],
        content_type=request.content_type or "", body=body.decode("utf-8", "replace"),
        signature_valid=valid, signature_error=problem,
        token_header="X-A2A-Notification-Token" in request.headers,
    )  # fmt: skip
    return JsonResponse({"received": True})

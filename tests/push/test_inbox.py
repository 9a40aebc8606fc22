"""The hub's built-in webhook inbox: deliveries to the hub's own inbox URL are let through
without opening loopback to webhooks, and what arrives is stored with whether its signature
holds; the hub's own origin is not a webhook target anywhere else."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.apps import apps
from django.test import Client

from a2ahub.outbound import forget_own_origins
from a2ahub.signing import current_signer, issuer
from agents.models import Agent
from push.models import Delivery, InboxMessage, WebhookInbox
from tests.factories.errors import invalid_params
from tests.factories.push import TOKEN, create_params, webhook
from tests.factories.versions import V1, VERSIONS
from tests.helpers import eventually
from tests.push.callers import Caller
from tests.push.receiver import Receiver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("push_settings")]


@pytest.fixture
def hub_origin(live_server: Any, settings: Any) -> Iterator[str]:
    """The hub serving on its configured HOST and PORT (a live server standing in for it), with
    its own origin registered from settings as at start-up; loopback is not allow-listed."""
    configured = settings.PORT
    settings.OUTBOUND_ALLOWED_HOSTS = []
    settings.PORT = int(live_server.url.rsplit(":", 1)[1])
    forget_own_origins()
    apps.get_app_config("a2ahub").ready()
    yield f"http://{settings.HOST}:{settings.PORT}"
    settings.PORT = configured
    forget_own_origins()
    apps.get_app_config("a2ahub").ready()


@pytest.fixture
def inbox(db: None) -> WebhookInbox:
    return WebhookInbox.objects.create(name="try-out")


def messages_in(inbox: WebhookInbox) -> list[InboxMessage]:
    return list(InboxMessage.objects.filter(inbox=inbox).order_by("received_at", "id"))


@pytest.mark.parametrize("version", VERSIONS)
def test_deliveries_to_the_hubs_own_inbox_arrive_with_valid_signatures(
    caller: Caller, pusher: Agent, hub_origin: str, inbox: WebhookInbox, version: str
) -> None:
    url = f"{hub_origin}/push/inbox/{inbox.token}/"

    caller.send("pusher", version, push=webhook(version, url))

    assert eventually(lambda: len(messages_in(inbox)) == 4), messages_in(inbox)
    stored = messages_in(inbox)
    assert all(m.signature_valid and not m.signature_error for m in stored)
    assert all(m.token_header for m in stored)
    expected = "application/a2a+json" if version == V1 else "application/json"
    assert {m.content_type for m in stored} == {expected}
    sequences = [Delivery.objects.get(id=m.delivery_id).sequence for m in stored]
    assert sorted(sequences) == [1, 2, 3, 4]


def test_a_forged_body_is_stored_with_an_invalid_signature(
    inbox: WebhookInbox, client: Client
) -> None:
    # A delivery signed for this inbox, posted once as signed and once altered.
    genuine = b'{"statusUpdate": {"status": {"state": "TASK_STATE_COMPLETED"}}}'
    audience = f"http://127.0.0.1:8000/push/inbox/{inbox.token}/"
    signature = current_signer().sign(genuine, "d-1", "t-1", issuer(), audience)
    headers = {"A2A-Push-Signature": signature, "webhook-id": "d-1",
               "X-A2A-Notification-Token": TOKEN}  # fmt: skip
    forged = genuine.replace(b"TASK_STATE_COMPLETED", b"TASK_STATE_FAILED")
    url = f"/push/inbox/{inbox.token}/"

    for body in (genuine, forged):
        response = client.post(url, data=body, content_type="application/a2a+json", headers=headers)
        assert response.status_code == 200 and response.json() == {"received": True}

    kept, altered = messages_in(inbox)
    assert kept.signature_valid and kept.body.encode() == genuine
    assert not altered.signature_valid
    assert "body" in altered.signature_error
    assert altered.body.encode() == forged


def test_a_delivery_signed_for_another_receiver_is_stored_as_invalid(
    caller: Caller, pusher: Agent, receiver: Receiver, inbox: WebhookInbox, client: Client
) -> None:
    # A genuine delivery caught by another receiver, replayed to the inbox as it was sent.
    caller.send("pusher", V1, push=webhook(V1, receiver.url))
    genuine = receiver.wait_for(4)[-1]
    headers = {"A2A-Push-Signature": genuine.header("A2A-Push-Signature"),
               "webhook-id": genuine.header("webhook-id")}  # fmt: skip

    client.post(f"/push/inbox/{inbox.token}/", data=genuine.body,
                content_type="application/a2a+json", headers=headers)  # fmt: skip

    (stored,) = messages_in(inbox)
    assert not stored.signature_valid
    assert stored.signature_error == f"the signature is for {receiver.url!r}, not this inbox"


def test_a_delivery_without_a_signature_is_stored_as_invalid(
    inbox: WebhookInbox, client: Client
) -> None:
    response = client.post(
        f"/push/inbox/{inbox.token}/", data=b'{"hello": 1}', content_type="application/json"
    )

    assert response.status_code == 200
    (stored,) = messages_in(inbox)
    assert not stored.signature_valid and stored.signature_error
    assert not stored.token_header


def test_an_unknown_inbox_is_not_found(client: Client) -> None:
    response = client.post(
        "/push/inbox/no-such-token/", data=b"{}", content_type="application/json"
    )

    assert response.status_code == 404
    assert not InboxMessage.objects.exists()


@pytest.mark.parametrize("allowed", [[], ["127.0.0.1"]])
@pytest.mark.parametrize("version", VERSIONS)
def test_the_hubs_own_origin_outside_the_inbox_is_refused_as_a_webhook(
    caller: Caller, pusher: Agent, settings: Any, version: str, allowed: list[str]
) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = allowed
    task = caller.send("pusher", V1)
    url = f"http://{settings.HOST}:{settings.PORT}/admin/"

    error = caller.error("pusher", version, "create_config", create_params(
        version, task["id"], webhook(version, url)))  # fmt: skip

    assert error["code"] == -32602
    assert "url" in error["message"]
    problem = "on this hub, only its webhook inbox may receive deliveries"
    assert error == invalid_params(version, "url", problem)


@pytest.mark.parametrize("port", ["GRPC_PORT", "GRPC_METRICS_PORT"])
@pytest.mark.parametrize("version", VERSIONS)
def test_the_hubs_grpc_ports_are_refused_as_a_webhook_even_at_the_inbox_path(
    caller: Caller, pusher: Agent, inbox: WebhookInbox, settings: Any, version: str, port: str
) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.GRPC_PORT, settings.GRPC_METRICS_PORT = settings.PORT + 1, settings.PORT + 2
    task = caller.send("pusher", V1)
    url = f"http://{settings.HOST}:{getattr(settings, port)}/push/inbox/{inbox.token}/"

    error = caller.error("pusher", version, "create_config", create_params(
        version, task["id"], webhook(version, url)))  # fmt: skip

    assert error == invalid_params(version, "url", (
        f"{url!r} points at this hub itself; the hub does not call its own doors (a card or "
        "backend naming the hub would make every call call the hub again)"))  # fmt: skip

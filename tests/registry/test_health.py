"""Active health checks: with REGISTRY_HEALTH_SECONDS set, the periodic job reads each live
registration's remote card (its card URL, or the well-known card at its interface's origin)
through the outbound guard, at most that often, and keeps health, last error and check time;
operators read them in the API. Off (0), nothing is read."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from a2ahub import schedule
from registry.jobs import check_registrations
from registry.models import Health, Registration
from tests.helpers import free_port
from tests.operators_api.conftest import Api
from tests.registry.conftest import CARD_V1, CardServer, Registrar, card

pytestmark = pytest.mark.django_db


def served_by(server: CardServer) -> dict[str, Any]:
    """A card sent in the body whose interface is on the card server's origin."""
    origin = server.url.removesuffix("/.well-known/agent-card.json")
    interface = {"url": f"{origin}/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    return card(CARD_V1, supportedInterfaces=[interface])


def registration() -> Registration:
    return Registration.objects.get()


def test_off_by_default_nothing_is_read(owner: Registrar, card_server: CardServer) -> None:
    assert owner.register(served_by(card_server)).status_code == 201
    assert check_registrations() == 0
    assert card_server.reads == []
    assert registration().health == Health.UNKNOWN


def test_a_card_sent_in_the_body_is_read_at_its_interfaces_origin(
    owner: Registrar, card_server: CardServer, settings: Any
) -> None:
    settings.REGISTRY_HEALTH_SECONDS = 60
    assert owner.register(served_by(card_server)).status_code == 201
    assert check_registrations() == 1
    assert card_server.reads == [""]
    checked = registration()
    assert (checked.health, checked.last_error) == (Health.OK, "")
    assert checked.checked_at is not None


def test_each_registration_is_read_at_most_once_per_interval(
    owner: Registrar, card_server: CardServer, settings: Any
) -> None:
    settings.REGISTRY_HEALTH_SECONDS = 60
    assert owner.register(served_by(card_server)).status_code == 201
    assert check_registrations() == 1
    assert check_registrations() == 0
    assert len(card_server.reads) == 1
    Registration.objects.update(checked_at=timezone.now() - timedelta(seconds=61))
    assert check_registrations() == 1
    assert len(card_server.reads) == 2


def test_a_card_url_registration_is_read_with_its_etag(
    owner: Registrar, card_server: CardServer, settings: Any
) -> None:
    settings.REGISTRY_HEALTH_SECONDS = 60
    assert owner.register({"cardUrl": card_server.url}).status_code == 201
    assert check_registrations() == 1
    assert card_server.reads[-1] == card_server.etag  # answered 304: it is there
    assert registration().health == Health.OK


def test_a_card_that_does_not_answer_is_failing_and_operators_see_why(
    owner: Registrar, operator_client: Client, settings: Any
) -> None:
    settings.REGISTRY_HEALTH_SECONDS = 60
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    closed = f"http://127.0.0.1:{free_port()}/a2a"
    interface = {"url": closed, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    assert owner.register(card(CARD_V1, supportedInterfaces=[interface])).status_code == 201
    assert check_registrations() == 1
    listed = Api(operator_client).get("registrations").json()["results"][0]
    assert listed["health"] == "failing"
    assert "could not be fetched" in listed["last_error"]
    assert listed["checked_at"] is not None


def test_the_outbound_guard_keeps_private_addresses_unread(
    owner: Registrar, card_server: CardServer, settings: Any
) -> None:
    settings.REGISTRY_HEALTH_SECONDS = 60
    assert owner.register(served_by(card_server)).status_code == 201
    settings.OUTBOUND_ALLOWED_HOSTS = []
    assert check_registrations() == 1
    assert card_server.reads == []
    assert registration().health == Health.FAILING
    assert "may not fetch" in registration().last_error


def test_expired_registrations_are_not_read(
    owner: Registrar, card_server: CardServer, settings: Any
) -> None:
    settings.REGISTRY_HEALTH_SECONDS = 60
    assert owner.register(served_by(card_server)).status_code == 201
    Registration.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert check_registrations() == 0
    assert card_server.reads == []


def test_the_job_is_periodic_at_the_sweeps_interval(settings: Any) -> None:
    settings.REGISTRY_SWEEP_SECONDS = 7.0
    table = schedule.beat_schedule()
    assert table["registry.check_registrations"]["schedule"] == 7.0


def test_cards_are_read_at_once_so_a_slow_one_holds_only_its_own_check(
    owner: Registrar, card_server: CardServer, settings: Any
) -> None:
    settings.REGISTRY_HEALTH_SECONDS = 60
    for name in ("Slow one", "Slow two", "Slow three"):
        assert owner.register(card(served_by(card_server), name=name)).status_code == 201
    # The card server answers only once all three reads are in flight: read one after another,
    # the first would wait for the others in vain and every check would fail.
    card_server.together = threading.Barrier(3, timeout=5)

    assert check_registrations() == 3

    assert len(card_server.reads) == 3
    assert {(r.health, r.last_error) for r in Registration.objects.all()} == {(Health.OK, "")}

"""`/healthz` and `/readyz`, as a load balancer reads them: liveness touches nothing, readiness
names each part and answers 503 naming the parts that are not ready."""

from __future__ import annotations

import logging

import pytest
from django.db import connections
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests.helpers import free_port

pytestmark = pytest.mark.django_db


def test_healthz_answers_ok_without_asking_the_database(client: Client) -> None:
    with CaptureQueriesContext(connections["default"]) as queries:
        response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert len(queries) == 0


def test_readyz_embedded_is_ready_with_its_database_and_no_workers_to_ask(
    client: Client, settings: pytest.FixtureRequest
) -> None:
    settings.REDIS_URL = ""
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ready",
        "failing": [],
        "parts": {"database": "ready", "workers": "embedded"},
    }


def test_readyz_is_503_naming_redis_when_redis_does_not_answer(
    client: Client, settings: pytest.FixtureRequest
) -> None:
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    settings.READINESS_TIMEOUT_SECONDS = 0.5
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "not ready"
    assert body["failing"] == ["redis", "workers"]
    assert body["parts"]["database"] == "ready"
    assert body["parts"]["redis"].startswith("not ready")


def test_a_readyz_refusal_is_not_logged_as_an_error(
    client: Client, settings: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    """A process waiting for Redis is not broken: the load balancer's every probe would
    otherwise be an ERROR line."""
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    settings.READINESS_TIMEOUT_SECONDS = 0.5
    caplog.set_level(logging.INFO)
    assert client.get("/readyz").status_code == 503
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    [refusal] = [r for r in caplog.records if r.name == "django.request"]
    assert refusal.levelname == "INFO" and "redis" in refusal.getMessage()


def test_readyz_is_503_naming_the_database_when_postgres_does_not_answer(
    client: Client, settings: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = connections["default"].settings_dict
    if config["ENGINE"] != "django.db.backends.postgresql":
        pytest.skip("the database check opens a connection of its own on PostgreSQL only")
    settings.REDIS_URL = ""
    monkeypatch.setitem(config, "PORT", str(free_port()))
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["failing"] == ["database"]
    assert body["parts"]["database"].startswith("not ready")

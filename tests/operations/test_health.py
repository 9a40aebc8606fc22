"""`/healthz` and `/readyz`, as a load balancer reads them: liveness touches nothing, readiness
names each part and answers 503 naming the parts that are not ready."""

from __future__ import annotations

import logging

import pytest
from django.db import connections

from tests.door_client import Door
from tests.helpers import free_port


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics"])
def test_probes_answer_whatever_host_they_are_addressed_to(
    door: Door, settings: pytest.FixtureRequest, path: str
) -> None:
    """The kubelet and Prometheus name a pod by its address, which ALLOWED_HOSTS does not
    list; the site itself still refuses such a host."""
    settings.REDIS_URL = ""
    pod = {"Host": "10.244.1.7:8000"}
    response = door.get(path, headers=pod)
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    assert door.get("/", headers=pod).status_code == 400


def test_a_probe_is_only_read(door: Door) -> None:
    refused = door.post("/healthz", {})
    assert refused.status_code == 405
    assert refused["Allow"] == "GET, HEAD"
    head = door.generic("HEAD", "/healthz", content_type=None)
    assert head.status_code == 200 and head.content == b""


def test_readyz_embedded_is_ready_with_its_database_and_no_workers_to_ask(
    door: Door, settings: pytest.FixtureRequest
) -> None:
    settings.REDIS_URL = ""
    response = door.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ready",
        "failing": [],
        "parts": {"database": "ready", "workers": "embedded"},
    }


def test_readyz_is_503_naming_redis_when_redis_does_not_answer(
    door: Door, settings: pytest.FixtureRequest
) -> None:
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    settings.READINESS_TIMEOUT_SECONDS = 0.5
    response = door.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "not ready"
    assert body["failing"] == ["redis", "workers"]
    assert body["parts"]["database"] == "ready"
    assert body["parts"]["redis"].startswith("not ready")


def test_a_readyz_refusal_is_not_logged_as_an_error(
    door: Door, settings: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    """A process waiting for Redis is not broken: the load balancer's every probe would
    otherwise be an ERROR line."""
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    settings.READINESS_TIMEOUT_SECONDS = 0.5
    caplog.set_level(logging.INFO)
    assert door.get("/readyz").status_code == 503
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    [refusal] = [r for r in caplog.records if r.name == "a2ahub.probes"]
    assert refusal.levelname == "INFO" and "redis" in refusal.getMessage()


def test_readyz_is_503_naming_the_database_when_postgres_does_not_answer_and_healthz_is_200(
    door: Door, settings: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = connections["default"].settings_dict
    if config["ENGINE"] != "django.db.backends.postgresql":
        pytest.skip("the database check opens a connection of its own on PostgreSQL only")
    settings.REDIS_URL = ""
    monkeypatch.setitem(config, "PORT", str(free_port()))
    response = door.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["failing"] == ["database"]
    assert body["parts"]["database"].startswith("not ready")
    alive = door.get("/healthz")
    assert (alive.status_code, alive.json()) == (200, {"status": "ok"})

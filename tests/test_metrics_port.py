"""`/metrics` on a port of its own (a `rungrpc` process's), served under the web's rules: only
to the allowed networks, and with the token when one is set."""

from __future__ import annotations

import io
import ipaddress
from collections.abc import Iterator

import httpx
import pytest
from pytest_django.fixtures import Settings

from a2ahub import metrics_access
from protocol.management.commands import rungrpc
from tests.helpers import free_port

# The scrape computes some gauges from the database, on the server's thread.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def port() -> Iterator[str]:
    number = free_port()
    server = metrics_access.serve("127.0.0.1", number)
    yield f"http://127.0.0.1:{number}"
    server.shutdown()
    server.server_close()


def test_it_serves_the_hubs_metrics_to_an_allowed_address(port: str) -> None:
    answer = httpx.get(f"{port}/metrics")

    assert answer.status_code == 200
    assert "a2ahub_open_streams" in answer.text
    assert httpx.get(f"{port}/").status_code == 404
    assert httpx.post(f"{port}/metrics").status_code == 405


def test_an_address_outside_the_allowed_networks_is_refused(port: str, settings: Settings) -> None:
    settings.METRICS_ALLOWED_NETWORKS = [ipaddress.ip_network("10.0.0.0/8")]

    answer = httpx.get(f"{port}/metrics")

    assert answer.status_code == 403
    assert "a2ahub" not in answer.text


def test_with_a_token_set_it_is_asked_for(port: str, settings: Settings) -> None:
    settings.METRICS_TOKEN = "scrape-secret"

    refused = httpx.get(f"{port}/metrics")
    wrong = httpx.get(f"{port}/metrics", headers={"Authorization": "Bearer nope"})
    right = httpx.get(f"{port}/metrics", headers={"Authorization": "Bearer scrape-secret"})

    assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
    assert wrong.status_code == 401
    assert right.status_code == 200 and "a2ahub_" in right.text


def test_a_rungrpc_whose_metrics_port_is_taken_serves_on_and_says_why(port: str) -> None:
    taken = int(port.rsplit(":", 1)[1])
    out, err = io.StringIO(), io.StringIO()

    rungrpc.Command(stdout=out, stderr=err).serve_metrics("127.0.0.1", taken)

    assert "its metrics are not served" in err.getvalue(), err.getvalue()
    assert "--metrics-port" in err.getvalue()
    assert httpx.get(f"{port}/metrics").status_code == 200  # the first one's, untouched

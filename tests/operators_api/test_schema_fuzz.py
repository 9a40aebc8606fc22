"""Schemathesis reads the operators' API's schema from a live server and calls every operation
with what the schema allows (and what it does not), as staff: no answer is a 5xx, and every
answer whose status the schema documents has the documented shape. Path parameters name
objects that exist half the time (the other half, whatever the generator made up), so the
bodies reach the serializers of real agents, keys, tasks, deliveries and registrations.

Derandomized and bounded here; `make fuzz` (HYPOTHESIS_PROFILE=deep) runs many more cases
with fresh randomness."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error, response_schema_conformance

from agents.models import ApiKey
from push.models import DeliveryState
from registry.models import Registration
from tests.factories.agents import make_agent
from tests.factories.push import stored_delivery
from tests.factories.tasks import ended, open_task
from tests.schema_fuzzing import TIMEOUT, fuzz

CHECKS = [not_a_server_error, response_schema_conformance]

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(TIMEOUT)]


def seed_objects() -> dict[tuple[str, str], Any]:
    """One object of each resource, by (the path's resource, its parameter's name)."""
    agent = make_agent("weather")
    done = open_task(agent, ended(), context_id="done")
    delivery = stored_delivery(done, state=DeliveryState.ABANDONED)
    open_task(agent, context_id="open")
    remote = make_agent("registered")
    registration = Registration.objects.create(
        agent=remote, owner_principal="apikey:1", source="card", protocol_version="1.0",
        ttl_seconds=60, expires_at=remote.created_at,
    )  # fmt: skip
    key = ApiKey.issue("someone's", agent=agent)[0]
    return {
        ("agents", "slug"): agent.slug, ("keys", "id"): key.pk, ("tasks", "id"): str(done.id),
        ("deliveries", "id"): str(delivery.id),
        ("registrations", "registration_id"): registration.registration_id,
    }  # fmt: skip


def strategies(operation: Any, known: dict[tuple[str, str], Any]) -> Any:
    """What the schema allows and what it does not; where the path names an object, also
    cases naming one that exists (with any query and body)."""
    modes = [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]
    cases = [operation.as_strategy(generation_mode=mode) for mode in modes]
    resource = operation.path.split("/")[2]
    names = [p.name for p in operation.path_parameters]
    if names and all((resource, name) in known for name in names):
        real = {name: known[(resource, name)] for name in names}
        cases += [operation.as_strategy(generation_mode=m, path_parameters=real) for m in modes]
    return st.one_of(cases)


def test_no_operation_answers_with_a_server_error(live_server: Any, operator: Any) -> None:
    known = seed_objects()
    headers = {"Authorization": f"Bearer {ApiKey.issue('fuzzer', owner=operator)[1]}"}
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/schema/")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 19, [op.label for op in operations]
    failures = [
        failure
        for operation in operations
        if (
            failure := fuzz(
                operation, strategies(operation, known), live_server.url, headers, CHECKS
            )
        )
    ]
    assert not failures, "\n\n".join(failures)

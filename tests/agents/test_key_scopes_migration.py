"""Migration 0008 gives the hub-wide keys that existed before scopes the `registry` scope, so
agents that registered with them keep working; keys bound to an agent get none."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("agents", "0007_agent_help_texts")]
AFTER = [("agents", "0008_apikey_scopes")]


def migrate(target: list[tuple[str, str]]) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor


@pytest.fixture(autouse=True)
def latest_schema_after() -> Iterator[None]:
    """Every app's latest migrations applied again after the test: going back to 0007 undid
    the agents migrations after 0008 too, and the tests that follow need their columns."""
    yield
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_existing_hub_wide_keys_get_the_registry_scope_and_agents_keys_none() -> None:
    old = migrate(BEFORE).loader.project_state(BEFORE).apps
    agent = old.get_model("agents", "Agent").objects.create(slug="bound", name="Bound")
    keys = old.get_model("agents", "ApiKey").objects
    keys.create(name="hub-wide", prefix="aaaaaaaaaaaa", key_hash="x")
    keys.create(name="bound", prefix="bbbbbbbbbbbb", key_hash="y", agent=agent)

    new = migrate(AFTER).loader.project_state(AFTER).apps
    scopes = dict(new.get_model("agents", "ApiKey").objects.values_list("name", "scopes"))
    assert scopes == {"hub-wide": ["registry"], "bound": []}

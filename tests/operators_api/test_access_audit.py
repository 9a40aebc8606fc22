"""Changes to who may call an agent made through the operators' API go to the audit log, with
the staff user who made them; other changes do not."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from agents.models import AccessChange, AccessVia
from tests.operators_api.conftest import Api, agent_body

pytestmark = pytest.mark.django_db


def test_changing_an_agents_access_is_logged_with_its_operator(
    staff_api: Api, operator: User
) -> None:
    assert staff_api.post("agents", agent_body()).status_code == 201

    changed = staff_api.send("patch", "agents/weather", {"access": "signed_in", "oauth2": True})
    assert changed.status_code == 200, changed.json()

    change = AccessChange.objects.get()
    assert (change.agent_slug, change.via, change.actor) == (
        "weather", AccessVia.OPERATORS_API, operator)  # fmt: skip
    assert change.before == {"access": "anyone", "oauth2": False}
    assert change.after == {"access": "signed_in", "oauth2": True}


def test_other_changes_are_not_logged(staff_api: Api) -> None:
    assert staff_api.post("agents", agent_body()).status_code == 201

    changed = staff_api.send("patch", "agents/weather", {"description": "Rain or shine."})
    assert changed.status_code == 200, changed.json()

    assert not AccessChange.objects.exists()


def test_a_new_agent_closed_from_the_start_is_logged(session_api: Api) -> None:
    created = session_api.post("agents", agent_body() | {"access": "listed"})
    assert created.status_code == 201, created.json()

    change = AccessChange.objects.get()
    assert (change.via, change.before, change.after) == (
        AccessVia.OPERATORS_API, {"access": "anyone"}, {"access": "listed"})  # fmt: skip


def test_a_refused_change_logs_nothing(staff_api: Api) -> None:
    assert staff_api.post("agents", agent_body()).status_code == 201

    refused = staff_api.send("patch", "agents/weather", {"access": "everybody"})

    assert refused.status_code == 400
    assert refused.json()["error"]["field"] == "access"
    assert not AccessChange.objects.exists()

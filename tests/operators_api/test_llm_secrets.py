"""An `llm` agent's secrets through the operators' API: written in plain, they are stored
sealed; answers say a secret is stored, never show it (not even sealed); settings read from an
answer and written back keep the stored secrets; a new secret replaces the old."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pytest_django.fixtures import Settings

from a2ahub import sealed
from agents.models import Agent
from tests.operators_api.conftest import Api, agent_body

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def loopback_servers(settings: Settings) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]


KEY = "sk-api-0123456789abcdef"
TOKEN = "mcp-bearer-fedcba9876543210"


def llm_settings(**more: Any) -> dict[str, Any]:
    return {"base_url": "http://127.0.0.1:11434/v1", "model": "llama3.2",
            "instructions": "Be brief."} | more  # fmt: skip


def stored_settings() -> dict[str, Any]:
    settings: dict[str, Any] = Agent.objects.get(slug="writer").executor_settings
    return settings


def create(staff_api: Api) -> dict[str, Any]:
    servers = [{"url": "http://127.0.0.1:9/mcp", "token": TOKEN}]
    settings = llm_settings(api_key=KEY, mcp_servers=servers)
    created = staff_api.post(
        "agents", agent_body("writer", executor_kind="llm", executor_settings=settings)
    )
    assert created.status_code == 201, created.json()
    body: dict[str, Any] = created.json()
    return body


def test_secrets_written_in_plain_are_stored_sealed_and_never_shown(staff_api: Api) -> None:
    created = create(staff_api)

    stored = stored_settings()
    assert sealed.open_sealed(stored["api_key"]) == KEY
    assert sealed.open_sealed(stored["mcp_servers"][0]["token"]) == TOKEN
    for answer in (created, staff_api.get("agents/writer").json(),
                   staff_api.get("agents").json()):  # fmt: skip
        text = json.dumps(answer)
        assert KEY not in text and TOKEN not in text and sealed.PREFIX not in text, text
    shown = staff_api.get("agents/writer").json()["executor_settings"]
    assert shown["api_key"] == "(stored)"
    assert shown["mcp_servers"] == [{"url": "http://127.0.0.1:9/mcp", "token": "(stored)"}]


def test_settings_read_and_written_back_keep_the_secrets(staff_api: Api) -> None:
    create(staff_api)
    before = stored_settings()
    shown = staff_api.get("agents/writer").json()["executor_settings"]

    changed = staff_api.send("patch", "agents/writer",
                             {"executor_settings": shown | {"model": "qwen3"}})  # fmt: skip

    assert changed.status_code == 200, changed.json()
    after = stored_settings()
    assert after["model"] == "qwen3"
    assert after["api_key"] == before["api_key"]
    assert after["mcp_servers"][0]["token"] == before["mcp_servers"][0]["token"]


def test_a_new_key_replaces_the_old_and_leaving_it_out_removes_it(staff_api: Api) -> None:
    create(staff_api)

    staff_api.send("patch", "agents/writer", {"executor_settings": llm_settings(api_key="sk-new")})
    assert sealed.open_sealed(stored_settings()["api_key"]) == "sk-new"

    staff_api.send("patch", "agents/writer", {"executor_settings": llm_settings()})
    assert "api_key" not in stored_settings()

    staff_api.send("patch", "agents/writer", {"executor_settings": llm_settings(api_key="k")})
    emptied = staff_api.send("patch", "agents/writer",
                             {"executor_settings": llm_settings(api_key="")})  # fmt: skip
    assert emptied.status_code == 200, emptied.json()
    assert "api_key" not in stored_settings()


def test_the_stored_mark_with_nothing_stored_is_refused_naming_the_field(staff_api: Api) -> None:
    body = agent_body("writer", executor_kind="llm",
                      executor_settings=llm_settings(api_key="(stored)"))  # fmt: skip

    refused = staff_api.post("agents", body)

    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["field"] == "executor_settings"
    assert "no secret is stored" in error["message"], error
    assert not Agent.objects.filter(slug="writer").exists()

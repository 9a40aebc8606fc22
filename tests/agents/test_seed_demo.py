"""The demo seed: idempotent, and the operator's password is shown exactly once."""

from __future__ import annotations

import re
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from django.core.management import call_command

from a2ahub import sealed
from agents.models import Agent

pytestmark = pytest.mark.django_db


def seed() -> str:
    out = StringIO()
    call_command("seed_demo", stdout=out)
    return out.getvalue()


def test_seeding_twice_creates_each_demo_agent_once() -> None:
    seed()
    seed()
    assert Agent.objects.filter(slug="echo").count() == 1
    assert Agent.objects.get(slug="echo").skills.count() == 1


def test_the_operator_password_is_printed_once_and_works() -> None:
    first = seed()
    password = re.search(r"password '([^']+)'", first)
    assert password is not None
    assert authenticate(username="operator", password=password.group(1)) is not None
    assert User.objects.get(username="operator").is_staff
    second = seed()
    assert password.group(1) not in second
    assert "unchanged" in second


def test_seeding_keeps_an_operators_edits() -> None:
    seed()
    Agent.objects.filter(slug="echo").update(description="Tuned by the operator.")
    seed()
    assert Agent.objects.get(slug="echo").description == "Tuned by the operator."


def test_the_assistant_is_disabled_without_a_model_server_and_says_why(settings: Any) -> None:
    settings.LLM_BASE_URL = settings.LLM_MODEL = settings.LLM_API_KEY = ""
    output = seed()
    assistant = Agent.objects.get(slug="assistant")
    assert assistant.executor_kind == "llm" and not assistant.enabled
    assert "set LLM_BASE_URL and LLM_MODEL" in assistant.description
    assert "set LLM_BASE_URL and LLM_MODEL" in output


def test_the_assistant_follows_the_model_server_settings_with_its_key_sealed(
    settings: Any,
) -> None:
    seed()
    settings.LLM_BASE_URL, settings.LLM_MODEL = "http://127.0.0.1:11434/v1", "llama3.2"
    settings.LLM_API_KEY = "sk-demo-key-123456"
    output = seed()
    assistant = Agent.objects.get(slug="assistant")
    assert assistant.enabled and "Disabled" not in assistant.description
    stored = assistant.executor_settings
    assert stored["agents"] == ["echo", "toolbox"] and stored["model"] == "llama3.2"
    assert sealed.open_sealed(stored["api_key"]) == "sk-demo-key-123456"
    assert "sk-demo-key-123456" not in output and "enabled, model llama3.2" in output
    assert assistant.skills.count() == 1

"""The admin's agent form as an operator fills it in: a valid agent with one skill, with any
field changed."""

from __future__ import annotations

from typing import Any

from django.test import Client
from django.urls import reverse


def agent_form(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "slug": "formed",
        "name": "Formed",
        "description": "Made through the admin.",
        "version": "1.0.0",
        "enabled": "on",
        "public": "on",
        "streaming": "on",
        "extensions": "[]",
        "default_input_modes": '["text/plain"]',
        "default_output_modes": '["text/plain"]',
        "security_schemes": "{}",
        "security_requirements": "[]",
        "access": "anyone",
        "executor_kind": "echo",
        "executor_settings": "{}",
        "skills-TOTAL_FORMS": "1",
        "skills-INITIAL_FORMS": "0",
        "skills-MIN_NUM_FORMS": "0",
        "skills-MAX_NUM_FORMS": "1000",
        "skills-0-skill_id": "greet",
        "skills-0-name": "Greet",
        "skills-0-position": "0",
        "skills-0-description": "Says hello.",
        "skills-0-tags": '["hello"]',
        "skills-0-examples": "[]",
        "skills-0-input_modes": "[]",
        "skills-0-output_modes": "[]",
        "skills-0-security_requirements": "[]",
    }
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def add_agent(client: Client, **overrides: Any) -> Any:
    return client.post(reverse("admin:agents_agent_add"), agent_form(**overrides))

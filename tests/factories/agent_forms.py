"""The admin's agent form as an operator fills it in: a valid agent with one skill, with any
field changed (plain values: tags separated by commas, media types as ticked boxes, the
executor kind's settings fields)."""

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
        "default_input_modes": "text/plain",
        "default_output_modes": "text/plain",
        "access": "anyone",
        "executor_kind": "echo",
        "skills-TOTAL_FORMS": "1",
        "skills-INITIAL_FORMS": "0",
        "skills-MIN_NUM_FORMS": "0",
        "skills-MAX_NUM_FORMS": "1000",
        "skills-0-skill_id": "greet",
        "skills-0-name": "Greet",
        "skills-0-position": "0",
        "skills-0-description": "Says hello.",
        "skills-0-tags": "hello",
    }
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def add_agent(client: Client, **overrides: Any) -> Any:
    return client.post(reverse("admin:agents_agent_add"), agent_form(**overrides))

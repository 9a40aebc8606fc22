"""Hosted agents as tests make them: open, or behind an API key; and the data the developer
pages post to register one."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

from agents.models import Agent, Skill

KEY_HEADER = "X-API-Key"
# The card fields of an agent that takes an API key in the X-API-Key header, and nothing else.
SECURED: dict[str, Any] = {
    "security_schemes": {"apiKey": {"type": "apiKey", "in": "header", "name": KEY_HEADER}},
    "security_requirements": [{"apiKey": []}],
}


def make_agent(slug: str, skills: int = 1, **fields: Any) -> Agent:
    """An echo agent open to anyone, with `skills` skills, unless `fields` say otherwise."""
    defaults: dict[str, Any] = {
        "name": slug.title(),
        "description": f"The {slug} agent.",
        "executor_kind": "echo",
    }
    agent = Agent.objects.create(slug=slug, **(defaults | fields))
    for n in range(skills):
        Skill.objects.create(
            agent=agent,
            skill_id=f"{slug}-skill-{n}",
            name=f"Skill {n}",
            description=f"Skill number {n} of {slug}.",
            tags=["demo"],
            examples=["hello"],
            position=n,
        )
    return agent


def secured_agent(slug: str, kind: str = "echo", **fields: Any) -> Agent:
    """An agent that requires an API key in the X-API-Key header."""
    return make_agent(slug, executor_kind=kind, **(SECURED | fields))


def owned(slug: str, owner: User, **fields: Any) -> Agent:
    """An agent with one skill that `owner` registered on the developer pages."""
    agent = make_agent(slug, skills=1, **fields)
    agent.owner = owner
    agent.save()
    return agent


def skill_data(n: int, **fields: str) -> dict[str, str]:
    """The fields of the developer form's `n`th skill."""
    values = {
        "skill_id": f"skill-{n}",
        "name": f"Skill {n}",
        "description": f"Skill number {n}.",
        "tags": "demo",
        "examples": "hello",
    } | fields
    return {f"skills-{n}-{key}": value for key, value in values.items()}


def agent_data(skills: int = 2, **fields: str) -> dict[str, str]:
    """What the developer form posts for a new echo agent `weather` with `skills` skills."""
    data = {
        "slug": "weather",
        "name": "Weather",
        "description": "Tells the weather.",
        "version": "1.0.0",
        "default_input_modes": "text/plain",
        "default_output_modes": "text/plain",
        "streaming": "on",
        "executor_kind": "echo",
        "skills-TOTAL_FORMS": str(skills),
        "skills-INITIAL_FORMS": "0",
        "skills-MIN_NUM_FORMS": "0",
        "skills-MAX_NUM_FORMS": "1000",
    } | fields
    for n in range(skills):
        data |= skill_data(n)
    return data

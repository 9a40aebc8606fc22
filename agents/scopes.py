"""OAuth2 scopes the hub's authorization server grants, and what a token's scopes reach.

`a2a:invoke` reaches every agent the principal may call; `agent:<slug>` one agent, every
skill of it; `skill:<slug>:<skill id>` one skill of one agent: a message may run that skill
(named in `metadata.skillId`, or the agent's first skill when it names none) and the extended
card shows it. A token asked for without scopes gets `a2a:invoke`.
Two scopes reach the hub rather than its agents, and are only granted when asked for:
`registry` (register agents and manage one's own registrations) and `operator` (the
operators' API, for a staff user's token).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agents.models import Agent, KeyScope, Skill

INVOKE = "a2a:invoke"
REGISTRY = KeyScope.REGISTRY.value
OPERATOR = "operator"
DEFAULT_SCOPES = [INVOKE]
HUB_SCOPES = {
    REGISTRY: "Register agents in the hub's registry and manage your registrations",
    OPERATOR: "Use the operators' API (staff only)",
}


def agent_scope(slug: str) -> str:
    return f"agent:{slug}"


def skill_scope(slug: str, skill_id: str) -> str:
    return f"skill:{slug}:{skill_id}"


def all_scopes() -> dict[str, str]:
    """Every scope with its description (what the consent page shows)."""
    scopes = {INVOKE: "Call the A2A agents you may call"} | HUB_SCOPES
    for slug, name in Agent.objects.filter(enabled=True).values_list("slug", "name"):
        scopes[agent_scope(slug)] = f"Call the agent {name}"
    for slug, skill_id, name in Skill.objects.filter(agent__enabled=True).values_list(
        "agent__slug", "skill_id", "name"
    ):
        scopes[skill_scope(slug, skill_id)] = f"Use the skill {name} of {slug}"
    return scopes


def reaches_agent(scopes: Iterable[str], slug: str) -> bool:
    """Whether a token with these scopes may call the agent at all."""
    held = set(scopes)
    if INVOKE in held or agent_scope(slug) in held:
        return True
    prefix = f"skill:{slug}:"
    return any(scope.startswith(prefix) for scope in held)


def reaches_skill(scopes: Iterable[str], slug: str, skill_id: str) -> bool:
    held = set(scopes)
    return bool({INVOKE, agent_scope(slug), skill_scope(slug, skill_id)} & held)


def reaches_every_skill(scopes: Iterable[str], slug: str) -> bool:
    held = set(scopes)
    return INVOKE in held or agent_scope(slug) in held


def skills_reached(scopes: Iterable[str], slug: str) -> list[str]:
    """The skill ids of this agent that a token's skill scopes name, sorted."""
    prefix = f"skill:{slug}:"
    return sorted(scope.removeprefix(prefix) for scope in scopes if scope.startswith(prefix))


def needed_for_skill(slug: str, skill_id: str) -> str:
    """The scopes, any one of which lets a token run this skill (for a challenge)."""
    return f"{skill_scope(slug, skill_id)} {needed_for(slug)}"


def needed_for(slug: str) -> str:
    """The scopes, any one of which lets a token call this agent (for a challenge)."""
    return f"{INVOKE} {agent_scope(slug)}"


class AgentScopes:
    """django-oauth-toolkit's scopes backend: the scopes of the agents that exist now."""

    def get_all_scopes(self) -> dict[str, str]:
        return all_scopes()

    def get_available_scopes(self, application: Any = None, request: Any = None,
                             *args: Any, **kwargs: Any) -> list[str]:  # fmt: skip
        return list(all_scopes())

    def get_default_scopes(self, application: Any = None, request: Any = None,
                           *args: Any, **kwargs: Any) -> list[str]:  # fmt: skip
        return list(DEFAULT_SCOPES)

"""Template filters for the developer pages: whether the signed-in user may call an agent, so
a page links only to what its reader may use."""

from __future__ import annotations

from django import template

from agents.models import Agent
from developers.access import User, may_call

register = template.Library()


@register.filter
def callable_by(agent: Agent, user: User) -> bool:
    return may_call(user, agent)

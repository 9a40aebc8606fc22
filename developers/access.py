"""Which agents a signed-in user may call from the developer pages, and which tasks are theirs.

The pages call as the user's session, and the agent's one access rule decides
(`agents.principals.check_access`, the rule the A2A doors apply to that session): the agents
they own, those open to any caller or any signed-in principal, and those whose access list
names them (or a group of theirs); never an agent that requires an OAuth2 token, which a
session is not, whoever owns it or whatever keys they hold. Tasks started from these pages
belong to the principal `user:<id>`, so a user's tasks are theirs alone, staff's too.
"""

from __future__ import annotations

import uuid

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from agents import principals
from agents.models import Agent
from tasks.models import Task

User = AbstractBaseUser | AnonymousUser


def may_call(user: User, agent: Agent) -> bool:
    """Whether the user's session may call the agent, as the doors would answer it."""
    if not user.is_authenticated:
        return False
    return principals.may_call(agent, principals.session_of(user))


def users_task(user: User, agent: Agent, task_id: str) -> Task | None:
    """The user's task on this agent; another's, or none at all, is None alike."""
    try:
        key = uuid.UUID(task_id)
    except (ValueError, TypeError):
        return None
    return Task.objects.filter(id=key, agent=agent, owner=principals.session_of(user).id).first()

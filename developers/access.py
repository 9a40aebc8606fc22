"""Which agents a signed-in user may call from the developer pages, and which tasks are theirs.

A user may call what they could call with their own credentials: the agents they own, the
listed agents that take any caller, the agents whose access list names them (or a group of
theirs), and the agents one of their unrevoked API keys opens.
Staff may call every agent (operators come here from the admin). Tasks started from these
pages belong to the principal `user:<id>`, so a user's tasks are theirs alone, staff's too.
"""

from __future__ import annotations

import uuid

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q

from agents.models import Access, Agent, ApiKey
from agents.principals import Principal, is_listed
from developers.tryit import user_principal
from tasks.models import Task

User = AbstractBaseUser | AnonymousUser


def may_call(user: User, agent: Agent) -> bool:
    if not user.is_authenticated:
        return False
    if getattr(user, "is_staff", False) or agent.owner_id == user.pk:
        return True
    if agent.access == Access.LISTED:
        # The agent's own rule, as the A2A doors apply it to this user's session.
        return is_listed(agent, Principal(f"user:{user.pk}", "", user_id=user.pk))
    if agent.public and not agent.security_requirements and not agent.oauth2:
        return True
    keys = ApiKey.objects.filter(owner_id=user.pk, revoked_at__isnull=True)
    return keys.filter(Q(agent=agent) | Q(agent__isnull=True)).exists()


def users_task(user: User, agent: Agent, task_id: str) -> Task | None:
    """The user's task on this agent; another's, or none at all, is None alike."""
    try:
        key = uuid.UUID(task_id)
    except (ValueError, TypeError):
        return None
    return Task.objects.filter(id=key, agent=agent, owner=user_principal(user).id).first()

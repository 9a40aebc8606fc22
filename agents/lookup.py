"""Finding the agent a request (or a worker job) names, with a short per-process cache.

Every A2A request needs its agent; reading it (and its skills) from the database each time
cost two queries on the hottest path. Saves and deletes here clear the entry at once; other
processes see a change within AGENT_CACHE_SECONDS.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from agents.models import SLUG_PATTERN, Agent, Skill

_cache: dict[str, tuple[float, Agent | None]] = {}
_by_id: dict[int, tuple[float, Agent | None]] = {}  # for worker jobs, which know only the id
_lock = threading.Lock()


# Answers kept at most, per cache: a client naming slugs of its own (a shared endpoint's
# `tenant`) must not grow the cache without end.
MAX_KEPT = 4096
SLUG = re.compile(SLUG_PATTERN)
Key = TypeVar("Key", str, int)


def is_slug(text: str) -> bool:
    """Whether `text` could be an agent's slug; nothing else is looked up (a lone surrogate
    in a tenant reached the database, which cannot encode it)."""
    return SLUG.fullmatch(text) is not None


def find_agent(slug: str) -> Agent | None:
    """The enabled agent with this slug (skills loaded), or None."""
    if not is_slug(slug):
        return None
    return _remembered(_cache, slug, slug=slug, enabled=True)


def agent_by_id(pk: int) -> Agent | None:
    """The agent with this id (skills loaded), enabled or not: the runner of a task already
    accepted needs its agent whatever happened to it since."""
    return _remembered(_by_id, pk, pk=pk)


def _remembered(
    cache: dict[Key, tuple[float, Agent | None]], key: Key, **lookup: Any
) -> Agent | None:
    """The cached answer for `key`, or the agent `lookup` finds, kept AGENT_CACHE_SECONDS."""
    now = time.monotonic()
    with _lock:
        hit = cache.get(key)
    if hit is not None and hit[0] > now:
        return hit[1]
    agent = Agent.objects.filter(**lookup).prefetch_related("skills").first()
    if settings.AGENT_CACHE_SECONDS > 0:
        with _lock:
            if len(cache) >= MAX_KEPT:
                cache.clear()
            cache[key] = (now + settings.AGENT_CACHE_SECONDS, agent)
    return agent


def cached_agent(slug: str) -> Agent | bool | None:
    """The cached answer without touching the database; False when there is none."""
    hit = _cache.get(slug)
    if hit is None or hit[0] <= time.monotonic():
        return False
    return hit[1]


# Apps above this one explain why a slug serves no agent (the registry: "its registration
# expired at ..."), so callers learn more than "no such agent". Each takes the slug and
# answers a sentence or None; they run only when no enabled agent has the slug.
ABSENCE_EXPLAINERS: list[Callable[[str], str | None]] = []


def why_absent(slug: str) -> str | None:
    """The first explanation an app gives for a slug that serves no agent, or None."""
    if not is_slug(slug):
        return None
    for explain in ABSENCE_EXPLAINERS:
        reason = explain(slug)
        if reason:
            return reason
    return None


def forget_agents() -> None:
    with _lock:
        _cache.clear()
        _by_id.clear()


@receiver(post_save, sender=Agent)
@receiver(post_delete, sender=Agent)
@receiver(post_save, sender=Skill)
@receiver(post_delete, sender=Skill)
def agent_changed(**_: Any) -> None:
    forget_agents()

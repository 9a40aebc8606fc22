"""The audit log: which credential each principal called an agent with (`CredentialUse`), and
who changed who may call an agent (`AccessChange`).

The A2A doors never write for it: a call is counted in this process's memory (`note_use`),
and every AUDIT_FLUSH_SECONDS the process's heartbeat thread (`a2ahub.processes`) writes the
counts, one upsert per (agent, principal, credential, binding, version), with the last use of
each API key. A process that dies loses at most that long's counts. Access changes are written
at once, from wherever they are made (the admin, the operators' API, the developer pages),
through `record_access_change`.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, connections, transaction
from django.db.models import DateTimeField, F, Q, QuerySet, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from agents.models import AccessChange, AccessVia, Agent, ApiKey, CredentialUse
from agents.principals import Principal

logger = logging.getLogger(__name__)

# Rows deleted per statement by `prune`, so no delete holds its locks for long.
PRUNE_BATCH = 500


@dataclass(frozen=True)
class UseKey:
    """One row of `CredentialUse`: what a call is counted under (its fields, by their names)."""

    agent_id: int
    agent_slug: str
    principal: str
    user_id: int | None
    credential_kind: str
    credential_ref: str
    api_key_id: int | None
    application_id: int | None
    token_id: int | None
    binding: str
    version: str


@dataclass
class Pending:
    calls: int
    first: datetime
    last: datetime


_lock = threading.Lock()
_pending: dict[UseKey, Pending] = {}
_last_flush = time.monotonic()
_exit_flush_registered = False


def note_use(agent: Agent, principal: Principal, binding: str, version: str) -> None:
    """Count one call (no I/O: safe on the event loop)."""
    credential = principal.credential
    key = UseKey(
        agent.pk, agent.slug, principal.id, principal.user_id, credential.kind, credential.ref,
        credential.api_key_id, credential.application_id, credential.token_id, binding, version,
    )  # fmt: skip
    now = timezone.now()
    with _lock:
        pending = _pending.get(key)
        if pending is None:
            _pending[key] = Pending(1, now, now)
        else:
            pending.calls += 1
            pending.last = now


def forget_uses() -> None:
    """Drop the counts not written yet (tests: each starts with none)."""
    with _lock:
        _pending.clear()


def pending_calls() -> int:
    with _lock:
        return sum(p.calls for p in _pending.values())


def take_pending() -> dict[UseKey, Pending]:
    global _pending
    with _lock:
        batch, _pending = _pending, {}
    return batch


def put_back(batch: dict[UseKey, Pending]) -> None:
    """Counts a flush could not write wait for the next one."""
    with _lock:
        for key, pending in batch.items():
            mine = _pending.get(key)
            if mine is None:
                _pending[key] = pending
            else:
                mine.calls += pending.calls
                mine.first = min(mine.first, pending.first)
                mine.last = max(mine.last, pending.last)


def flush() -> int:
    """Write the counts noted so far; the number of rows written. What the database refuses
    (it is away) is kept for the next flush."""
    batch = take_pending()
    if not batch:
        return 0
    items = list(batch.items())
    for written, (key, pending) in enumerate(items):
        try:
            write_use(key, pending)
        except DatabaseError:
            logger.warning("could not write the credential audit log; will try again")
            put_back(dict(items[written:]))
            return written
    try:
        touch_keys(batch)
    except DatabaseError:
        # The keys' last use catches up at their next flush; the counts are written.
        logger.warning("could not record the API keys' last use")
    return len(items)


def write_use(key: UseKey, pending: Pending) -> None:
    rows = CredentialUse.objects.filter(
        agent_id=key.agent_id, principal=key.principal, credential_kind=key.credential_kind,
        credential_ref=key.credential_ref, binding=key.binding, version=key.version,
    )  # fmt: skip
    changes = {
        "calls": F("calls") + pending.calls,
        "last_used_at": Greatest("last_used_at", Value(pending.last, DateTimeField())),
    }
    if rows.update(**changes):
        return
    try:
        with transaction.atomic():
            CredentialUse.objects.create(
                **asdict(key),
                first_used_at=pending.first,
                last_used_at=pending.last,
                calls=pending.calls,
            )
    except IntegrityError:
        # Another process made the row first; or the agent, key or application is gone since
        # the call, and then there is nothing left to count it against.
        rows.update(**changes)


def touch_keys(batch: dict[UseKey, Pending]) -> None:
    """Each API key's `last_used_at`, from the batch (one UPDATE per key)."""
    last: dict[int, datetime] = {}
    for key, pending in batch.items():
        if key.api_key_id is not None:
            last[key.api_key_id] = max(pending.last, last.get(key.api_key_id, pending.last))
    for key_id, when in last.items():
        older = Q(last_used_at__isnull=True) | Q(last_used_at__lt=when)
        ApiKey.objects.filter(older, pk=key_id).update(last_used_at=when)


def flush_due() -> None:
    """A heartbeat hook: flush when AUDIT_FLUSH_SECONDS have passed since the last flush, and
    give the connection back (the beating thread sleeps between beats)."""
    global _last_flush, _exit_flush_registered
    if not _exit_flush_registered:
        # A process that stops in order writes what it counted.
        atexit.register(flush_at_exit)
        _exit_flush_registered = True
    now = time.monotonic()
    if now - _last_flush < settings.AUDIT_FLUSH_SECONDS:
        return
    _last_flush = now
    try:
        flush()
    finally:
        connections.close_all()


def flush_at_exit() -> None:
    if not pending_calls():
        return
    try:
        flush()
    except Exception:
        logger.exception("could not write the credential audit log at exit")


# Who may call an agent, as the audit log keeps it.
SNAPSHOT_FIELDS = ("access", "oauth2", "allowed_users", "allowed_groups", "allowed_applications")


def snapshot(agent: Agent) -> dict[str, Any]:
    """Who may call `agent` now: its rule, OAuth2 requirement and lists (sorted names)."""
    if agent.pk is None:
        return describe(agent.access, agent.oauth2, [], [], [])
    return describe(
        agent.access, agent.oauth2, agent.allowed_users.all(), agent.allowed_groups.all(),
        agent.allowed_applications.all(),
    )  # fmt: skip


def describe(
    access: str, oauth2: bool, users: Iterable[Any], groups: Iterable[Any],
    applications: Iterable[Any],
) -> dict[str, Any]:  # fmt: skip
    """A snapshot from the values themselves (a form's initial data, say)."""
    return {
        "access": str(access),
        "oauth2": bool(oauth2),
        "allowed_users": sorted(user.get_username() for user in users),
        "allowed_groups": sorted(group.name for group in groups),
        "allowed_applications": sorted(app.name or str(app.client_id) for app in applications),
    }


def snapshot_of_new_agent() -> dict[str, Any]:
    """What a new agent's access is before anyone sets it: the defaults."""
    return snapshot(Agent())


def record_access_change(
    agent: Agent, actor: Any, via: str, before: dict[str, Any], after: dict[str, Any]
) -> AccessChange | None:
    """Log a change to who may call `agent` (snapshots from `snapshot`), made by `actor` (a
    user) through `via` (an AccessVia); nothing when nothing changed."""
    if before == after:
        return None
    changed = [name for name in SNAPSHOT_FIELDS if before.get(name) != after.get(name)]
    return AccessChange.objects.create(
        agent=agent, agent_slug=agent.slug, actor=actor if actor and actor.pk else None,
        actor_name=actor.get_username() if actor else "", via=AccessVia(via),
        before={name: before.get(name) for name in changed},
        after={name: after.get(name) for name in changed},
    )  # fmt: skip


def entries_for(agent: Agent) -> QuerySet[CredentialUse]:
    """The credential uses on `agent`, most recent first."""
    return CredentialUse.objects.filter(agent=agent).order_by("-last_used_at")


def changes_for(agent: Agent) -> QuerySet[AccessChange]:
    """The access changes of `agent`, newest first."""
    return AccessChange.objects.filter(agent=agent).order_by("-created_at", "-id")


def prune(days: int | None = None) -> int:
    """Delete uses not seen and changes made longer than AUDIT_RETENTION_DAYS ago (0: kept
    forever), in batches; how many rows went."""
    days = settings.AUDIT_RETENTION_DAYS if days is None else days
    if not days:
        return 0
    cutoff = timezone.now() - timedelta(days=days)
    return delete_in_batches(CredentialUse.objects.filter(last_used_at__lt=cutoff)) + (
        delete_in_batches(AccessChange.objects.filter(created_at__lt=cutoff))
    )


def delete_in_batches(rows: QuerySet[Any]) -> int:
    deleted = 0
    while ids := list(rows.values_list("pk", flat=True)[:PRUNE_BATCH]):
        deleted += rows.model._default_manager.filter(pk__in=ids).delete()[0]
    return deleted

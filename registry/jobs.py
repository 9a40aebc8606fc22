"""The registry's periodic jobs: expire registrations past their TTL and purge them after the
grace period (conditional bulk statements), and read the remote cards of those due a health
check (each row claimed first); two hubs' beats may run either at once."""

from __future__ import annotations

from celery import shared_task

from registry import actions, health


@shared_task(name="registry.sweep_registrations", ignore_result=True)
def sweep_registrations() -> dict[str, int]:
    return {"expired": actions.expire_due(), "purged": actions.purge_due()}


@shared_task(name="registry.check_registrations", ignore_result=True)
def check_registrations() -> int:
    return health.check_due()

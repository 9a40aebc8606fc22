"""The registry's periodic job: expire registrations past their TTL, purge them after the
grace period. Both are conditional bulk statements, so two hubs' beats may run it at once."""

from __future__ import annotations

from celery import shared_task

from registry import actions


@shared_task(name="registry.sweep_registrations", ignore_result=True)
def sweep_registrations() -> dict[str, int]:
    return {"expired": actions.expire_due(), "purged": actions.purge_due()}

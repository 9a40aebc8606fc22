"""Celery jobs of the catalog: pruning the audit log."""

from __future__ import annotations

from celery import shared_task

from agents import audit


@shared_task(name="agents.prune_audit_log", ignore_result=True)
def prune_audit_log() -> int:
    """Delete audit rows older than AUDIT_RETENTION_DAYS (nothing while it is 0)."""
    return audit.prune()

"""Push as a listener of the task writer: its configs and deliveries are written in the
writer's transaction, and the delivery engines are woken once it commits (`push.engine`)."""

from __future__ import annotations

from django.conf import settings

from a2ahub import schedule
from push import configs, jobs, opening, queue
from tasks import hooks


def register() -> None:
    if configs.create_config in hooks.config_given:
        return  # already registered
    hooks.config_given.append(configs.create_config)
    hooks.events_written.append(queue.create_deliveries)
    hooks.committed.append(jobs.kick_task)
    # A new task given a config, written in one statement from the event loop.
    hooks.opening_parts.append(opening.opening_parts)
    hooks.committed_soon.append(jobs.kick_task_soon)
    # Wakes the engines for due queues no one holds (a lost wake-up, a dead process's lease).
    schedule.register(jobs.sweep_due_deliveries, lambda: settings.TASK_HEARTBEAT_SECONDS)

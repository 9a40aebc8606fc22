"""The console's WebSocket routes; the composition root (`a2ahub.asgi`) adds them to the
hub's (`a2ahub.routing`)."""

from __future__ import annotations

from typing import Any

from django.urls import path

from console.consumers import DashboardSocket, TaskListSocket, TaskTimelineSocket

websocket_urlpatterns: list[Any] = [
    path("ws/console/dashboard/", DashboardSocket.as_asgi()),
    path("ws/console/tasks/", TaskListSocket.as_asgi()),
    path("ws/console/tasks/<uuid:task_id>/", TaskTimelineSocket.as_asgi()),
]

"""The registration API's routes (under /registry/), which its schema describes."""

from __future__ import annotations

from django.urls import path

from registry import api

urlpatterns = [
    path("agents", api.AgentsView.as_view(), name="registry-agents"),
    path("agents/<str:agent_id>", api.AgentView.as_view(), name="registry-agent"),
    path("agents/<str:agent_id>/heartbeat", api.HeartbeatView.as_view(), name="registry-heartbeat"),
]

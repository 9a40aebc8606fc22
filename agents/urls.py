"""The cards of one hosted agent, under /agents/<slug>/ (its A2A endpoints: `protocol.routes`)."""

from __future__ import annotations

from django.urls import path

from agents import views

urlpatterns = [
    path("<str:slug>/.well-known/agent-card.json", views.agent_card, name="agent-card"),
    path("<str:slug>/.well-known/agent.json", views.agent_card, name="agent-card-legacy"),
    # Clients given only the JSON-RPC URL (the 0.3 conformance kit among them) look here.
    path("<str:slug>/jsonrpc/.well-known/agent-card.json", views.agent_card),
    path("<str:slug>/v1.0/.well-known/agent-card.json", views.pinned_v1_card, name="agent-card-v1"),
]

"""The hub's URL map: admin, hub-wide well-known documents, and every hosted agent."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from agents import views as agent_views
from push import views as push_views

urlpatterns = [
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
    path("admin/", admin.site.urls),
    path(".well-known/agent-card.json", agent_views.hub_card, name="hub-card"),
    path(".well-known/agent.json", agent_views.hub_card),
    path(".well-known/ai-catalog.json", agent_views.catalog, name="catalog"),
    path(".well-known/jwks.json", push_views.jwks, name="jwks"),
    path("agents/", include("agents.urls")),
    path("push/", include("push.urls")),
]

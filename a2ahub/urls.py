"""The hub's URL map: home and developer pages, admin, hub-wide well-known documents, agents'
cards and the registry. The A2A doors are not here: they have their own route table, in front
of Django (`protocol.routes`), and so have the operator's probes (`a2ahub.probes`)."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from a2ahub import views as hub_views
from a2ahub.login_throttle import throttled
from agents import views as agent_views
from developers import views as developer_views
from registry import catalog, mcp_card

urlpatterns = [
    path("", developer_views.home, name="home"),
    path("admin/login/", throttled(admin.site.login), name="admin-login"),
    path(
        "admin/r/<int:content_type_id>/<path:object_id>/",
        admin.site.admin_view(hub_views.view_on_site),
    ),
    path("admin/", admin.site.urls),
    path(".well-known/agent-card.json", agent_views.hub_card, name="hub-card"),
    path(".well-known/agent.json", agent_views.hub_card),
    path(".well-known/ai-catalog.json", catalog.ai_catalog, name="catalog"),
    path(".well-known/mcp/server-card", mcp_card.card, name="mcp-server-card"),
    path("mcp/server-card", mcp_card.card),
    path(".well-known/jwks.json", hub_views.jwks, name="jwks"),
    path("favicon.ico", hub_views.favicon, name="favicon"),
    path("", include("agents.oauth_views")),
    path("agents/", include("agents.urls")),
    path("push/", include("push.urls")),
    path("registry/", include("registry.urls")),
    path("api/", include("operators_api.urls")),
    path("dev/", include("developers.urls")),
]

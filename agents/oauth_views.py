"""The hub's OAuth2 discovery documents: RFC 8414 authorization-server metadata (from
django-oauth-toolkit) and RFC 9728 protected-resource metadata, for the hub and per agent."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import include, path
from oauth2_provider import urls as oauth_urls
from oauth2_provider import views as oauth_views

from agents import scopes as scope_rules
from agents.lookup import find_agent
from agents.views import json_not_found, public_base_url


class ResourceMetadata(oauth_views.OAuthProtectedResourceMetadataView):
    """The hub as a resource: every agent; with `slug`, one agent and its own scopes."""

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        slug = kwargs.get("slug")
        base = public_base_url(request)
        scopes = sorted(scope_rules.all_scopes())
        resource = base
        if slug:
            agent = find_agent(slug)
            if agent is None or not agent.oauth2:
                return json_not_found(f"No agent named {slug!r} takes OAuth2 tokens here.")
            resource = f"{base}/agents/{slug}"
            scopes = [scope_rules.INVOKE, scope_rules.agent_scope(slug)] + [
                scope_rules.skill_scope(slug, skill.skill_id) for skill in agent.skills.all()
            ]
        response = JsonResponse(
            {
                "resource": resource,
                "authorization_servers": [base],
                "scopes_supported": scopes,
                "bearer_methods_supported": ["header"],
                "resource_name": "A2A Hub agents" if not slug else f"A2A agent {slug}",
            }
        )
        response["Access-Control-Allow-Origin"] = "*"
        return response


# Under /o/: authorize, token, revoke_token, introspect (no device flow, no OIDC, no dynamic
# registration: applications are made in the admin or on the developer pages).
oauth_patterns = (oauth_urls.base_urlpatterns[:4], "oauth2_provider")

urlpatterns = [
    path("o/", include(oauth_patterns)),
    path(
        ".well-known/oauth-authorization-server",
        oauth_views.OAuthServerMetadataView.as_view(),
        name="oauth-server-metadata",
    ),
    path(
        ".well-known/oauth-protected-resource",
        ResourceMetadata.as_view(),
        name="oauth-resource-metadata",
    ),
    path(
        ".well-known/oauth-protected-resource/agents/<str:slug>",
        ResourceMetadata.as_view(),
        name="oauth-agent-resource-metadata",
    ),
]

"""The hub's OAuth2 discovery documents: RFC 8414 authorization-server metadata (from
django-oauth-toolkit) and RFC 9728 protected-resource metadata, for the hub and per agent."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import include, path
from oauth2_provider import urls as oauth_urls
from oauth2_provider import views as oauth_views
from oauth2_provider.models import AccessToken
from oauthlib.common import Request as OauthlibRequest

from agents import scopes as scope_rules
from agents.credential_rows import token_checksum
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


class Introspect(oauth_views.IntrospectTokenView):
    """RFC 7662 introspection for the token's own client: a client (authenticated as DOT
    allows: its credentials, or a bearer token with the `introspection` scope) learns about
    its own tokens, and about every token only if it is a resource server the operator
    names in OAUTH2_INTROSPECTION_CLIENT_IDS. Any other token is `{"active": false}`, as an
    unknown one (RFC 7662 2.2: nothing more about a token the caller may not know of)."""

    def authenticate_client(self, request: HttpRequest) -> bool:
        core = self.get_oauthlib_core()
        uri, method, body, headers = core._extract_params(request)
        asked = OauthlibRequest(uri, method, body, headers)
        valid = bool(core.server.request_validator.authenticate_client(asked))
        if valid:
            request.introspecting_client = asked.client  # type: ignore[attr-defined]
        return valid

    def verify_request(self, request: HttpRequest) -> Any:
        valid, checked = super().verify_request(request)
        if valid and checked.access_token is not None:
            request.introspecting_client = checked.access_token.application  # type: ignore[attr-defined]
        return valid, checked

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return self.answer(request, request.GET.get("token"))

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return self.answer(request, request.POST.get("token"))

    def answer(self, request: HttpRequest, token: str | None) -> HttpResponse:
        client = getattr(request, "introspecting_client", None)
        if token is not None and not may_introspect(client, token):
            return JsonResponse({"active": False})
        return self.get_token_response(token)


def may_introspect(client: Any, token: str) -> bool:
    """Whether `client` may learn about the access token `token`: its own, or any token for a
    resource server the operator names."""
    if client is None:
        return False
    if client.client_id in settings.OAUTH2_INTROSPECTION_CLIENT_IDS:
        return True
    checksum = token_checksum(token)
    return AccessToken.objects.filter(token_checksum=checksum, application=client).exists()


# Under /o/: authorize, token, revoke_token, introspect (no device flow, no OIDC, no dynamic
# registration: applications are made in the admin or on the developer pages); introspect is
# the hub's own (`Introspect`).
oauth_patterns = (
    [
        *[p for p in oauth_urls.base_urlpatterns[:4] if p.name != "introspect"],
        path("introspect/", Introspect.as_view(), name="introspect"),
    ],
    "oauth2_provider",
)

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

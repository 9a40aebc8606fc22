"""How the schemas of the registry and of the operators' API (which share these authentication
classes) describe their credentials: a hub API key as a bearer token (or in X-API-Key) and an
OAuth2 access token of the hub, beside the session, which drf-spectacular knows already. The
scope an operation takes is its view's `schema_scope` (`operator` unless it says otherwise)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension

from agents.scopes import HUB_SCOPES, OPERATOR


class HubApiKeyScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "registry.auth.ApiKeyAuthentication"
    name = "hubApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        scope = getattr(auto_schema.view, "schema_scope", OPERATOR)
        whose = " of a staff user" if scope == OPERATOR else ""
        return {
            "type": "http",
            "scheme": "bearer",
            "description": f"A hub-wide API key{whose} (a2a_…) whose scopes include `{scope}`; "
            "X-API-Key works too.",
        }


class HubTokenScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "registry.auth.HubTokenAuthentication"
    name = "hubOAuth2"

    def get_security_requirement(self, auto_schema: Any) -> dict[str, list[str]]:
        return {self.name: [getattr(auto_schema.view, "schema_scope", OPERATOR)]}

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        scope = getattr(auto_schema.view, "schema_scope", OPERATOR)
        scopes = {scope: HUB_SCOPES[scope]}
        return {
            "type": "oauth2",
            "description": f"An access token of the hub's authorization server holding the "
            f"`{scope}` scope" + (" (for a staff user)." if scope == OPERATOR else "."),
            "flows": {
                "authorizationCode": {
                    "authorizationUrl": "/o/authorize/", "tokenUrl": "/o/token/",
                    "refreshUrl": "/o/token/", "scopes": scopes,
                },
            },
        }  # fmt: skip

"""How the schema describes the API's credentials: a hub API key as a bearer token (or in
X-API-Key) and an OAuth2 access token of the hub holding `operator`, beside the staff session,
which drf-spectacular knows already."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension

from agents.scopes import HUB_SCOPES, OPERATOR


class HubApiKeyScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "registry.auth.ApiKeyAuthentication"
    name = "hubApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A hub-wide API key of a staff user (a2a_…); X-API-Key works too.",
        }


class HubTokenScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "registry.auth.HubTokenAuthentication"
    name = "hubOAuth2"

    def get_security_requirement(self, auto_schema: Any) -> dict[str, list[str]]:
        return {self.name: [OPERATOR]}

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        scopes = {OPERATOR: HUB_SCOPES[OPERATOR]}
        return {
            "type": "oauth2",
            "description": "An access token of the hub's authorization server for a staff "
            "user, holding the `operator` scope.",
            "flows": {
                "authorizationCode": {
                    "authorizationUrl": "/o/authorize/", "tokenUrl": "/o/token/",
                    "refreshUrl": "/o/token/", "scopes": scopes,
                },
            },
        }  # fmt: skip

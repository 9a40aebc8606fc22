"""How the schema describes the API's credentials: a hub API key as a bearer token (or in
X-API-Key) beside the staff session, which drf-spectacular knows already."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class HubApiKeyScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "registry.auth.ApiKeyAuthentication"
    name = "hubApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A hub-wide API key of a staff user (a2a_…); X-API-Key works too.",
        }

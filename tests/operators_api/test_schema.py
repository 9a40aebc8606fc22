"""The API's OpenAPI 3 schema, generated from the code, is valid and describes every resource;
staff read it as a docs page that loads nothing from elsewhere."""

from __future__ import annotations

import pytest
from django.test import Client
from openapi_spec_validator import validate

pytestmark = pytest.mark.django_db


def test_the_schema_validates_and_covers_the_api(client: Client) -> None:
    response = client.get("/api/schema/")
    assert response.status_code == 200
    assert "openapi" in response["Content-Type"]
    schema = response.json()
    validate(schema)
    assert schema["openapi"].startswith("3.")
    paths = schema["paths"]
    for expected in ("/api/agents", "/api/agents/{slug}", "/api/keys", "/api/keys/{id}/revoke",
                     "/api/tasks", "/api/tasks/{id}/cancel", "/api/deliveries/{id}/replay",
                     "/api/registrations/{registration_id}/revoke"):  # fmt: skip
        assert expected in paths, sorted(paths)
    # Only the operators' API: the registry and the A2A doors have their own contracts.
    assert all(path.startswith("/api/") for path in paths)
    # The key's secret is in the answer that creates it, and in no other.
    created = paths["/api/keys"]["post"]["responses"]["201"]["content"]["application/json"]
    assert created["schema"]["$ref"] == "#/components/schemas/NewApiKey"
    assert "secret" in schema["components"]["schemas"]["NewApiKey"]["properties"]
    assert "secret" not in schema["components"]["schemas"]["ApiKey"]["properties"]
    # Callers learn how to authenticate from it.
    schemes = schema["components"]["securitySchemes"]
    assert {"hubApiKey", "hubOAuth2", "cookieAuth"} <= set(schemes)
    assert set(schemes["hubOAuth2"]["flows"]["authorizationCode"]["scopes"]) == {"operator"}
    assert {"hubOAuth2": ["operator"]} in paths["/api/agents"]["get"]["security"]


def test_the_schema_in_yaml_when_asked(client: Client) -> None:
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi")
    assert response.status_code == 200
    assert response.content.startswith(b"openapi: 3")


def test_the_docs_page_is_for_staff_and_loads_nothing_from_elsewhere(
    client: Client, operator_client: Client
) -> None:
    assert client.get("/api/docs/").status_code == 302  # to the admin's sign-in
    page = operator_client.get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    # Swagger UI from the hub's own static files, started by a script the hub serves too.
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert 'src="/api/docs/?script="' in html
    assert "cdn" not in html.lower() and "https://" not in html
    script = operator_client.get("/api/docs/?script=")
    assert script["Content-Type"].startswith("application/javascript")
    assert "/api/schema/" in script.content.decode()


def test_the_schema_lets_a_registrations_card_url_be_empty(client: Client) -> None:
    # Found by schemathesis: a card sent in the body leaves card_url empty, which a plain
    # "format: uri" refused, so the answers did not match the schema.
    schema = client.get("/api/schema/").json()
    card_url = schema["components"]["schemas"]["Registration"]["properties"]["card_url"]
    assert {"type": "string", "maxLength": 0} in card_url["oneOf"]

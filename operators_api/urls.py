"""The operators' API under /api/: its resources, its OpenAPI schema and the schema's docs."""

from __future__ import annotations

from django.urls import include, path

from operators_api import docs
from operators_api.routes import router

urlpatterns = [
    path("schema/", docs.SchemaView.as_view(), name="api-schema"),
    path("docs/", docs.docs_page, name="api-docs"),
    path("", include(router.urls)),
]

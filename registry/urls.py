"""The registration API, under /registry/, its schema and the schema's readable page."""

from __future__ import annotations

from django.urls import path

from a2ahub.api_docs import SchemaDocsView
from registry import docs, routes

urlpatterns = [
    *routes.urlpatterns,
    path("schema/", docs.SchemaView.as_view(), name="registry-schema"),
    path(
        "docs/",
        SchemaDocsView.as_view(url_name="registry-schema", title="The agent registry"),
        name="registry-docs",
    ),
]

"""The registration API, under /registry/, and its schema."""

from __future__ import annotations

from django.urls import path

from registry import docs, routes

urlpatterns = [
    *routes.urlpatterns,
    path("schema/", docs.SchemaView.as_view(), name="registry-schema"),
]

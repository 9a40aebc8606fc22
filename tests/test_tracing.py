"""Tracing as an operator meets it without a collector: off unless the OTEL_* variables ask
for it, nothing added to log lines or outgoing headers while off, and the task page showing
the trace id of the call that made a task, linked where TRACE_URL_TEMPLATE says. (Spans
themselves are checked on the real stack, exported to a real receiver:
tests/integration/test_tracing_real_stack.py.)"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from a2ahub import tracing
from a2ahub.logs import JsonFormatter
from tests.factories.tasks import open_task

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.mark.parametrize(
    ("environ", "on"),
    [
        ({}, False),
        ({"OTEL_SERVICE_NAME": "hub"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"},
         False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"},
         False),
    ],
)  # fmt: skip
def test_only_an_exporter_named_by_the_otel_variables_turns_tracing_on(
    environ: dict[str, str], on: bool
) -> None:
    assert tracing.configured(environ) is on


def test_while_off_nothing_is_added_to_headers_or_log_lines() -> None:
    assert tracing.enabled is False
    headers: dict[str, str] = {}
    tracing.inject(headers)
    assert headers == {}
    assert tracing.current_traceparent() == ""
    record = logging.LogRecord("a2ahub", logging.INFO, __file__, 1, "hello", None, None)
    line = json.loads(JsonFormatter().format(record))
    assert "trace_id" not in line and "span_id" not in line


@pytest.mark.django_db
def test_the_task_page_links_the_trace_of_the_call_that_made_the_task(
    operator_client: Client, agent_factory: Any, settings: Any
) -> None:
    settings.TRACE_URL_TEMPLATE = "http://127.0.0.1:16686/trace/{trace_id}"
    task = open_task(agent_factory("traced"), [])
    task.traceparent = TRACEPARENT
    task.save(update_fields=["traceparent"])

    html = operator_client.get(reverse("admin:tasks_task_change", args=[task.id])).content.decode()

    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    assert (
        f'<a href="http://127.0.0.1:16686/trace/{trace_id}" rel="noreferrer">{trace_id}</a>' in html
    )


@pytest.mark.django_db
def test_without_a_template_the_trace_id_is_shown_as_text(
    operator_client: Client, agent_factory: Any
) -> None:
    task = open_task(agent_factory("traced"), [])
    task.traceparent = TRACEPARENT
    task.save(update_fields=["traceparent"])

    html = operator_client.get(reverse("admin:tasks_task_change", args=[task.id])).content.decode()

    field = html.split("field-trace")[1][:400]
    assert "4bf92f3577b34da6a3ce929d0e0e4736" in field and "<a " not in field


def test_a_task_made_while_tracing_was_off_has_no_trace_id() -> None:
    assert tracing.trace_id_of("") == ""
    assert tracing.trace_id_of(TRACEPARENT) == "4bf92f3577b34da6a3ce929d0e0e4736"

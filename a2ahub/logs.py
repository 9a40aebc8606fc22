"""Log lines as JSON objects, one a line (`LOG_FORMAT=json`): time, level, logger, message,
process, the request being handled (its id, agent, JSON-RPC method and binding, as far as
they are known), the trace and span ids while tracing is on (`a2ahub.tracing`) and the
exception's text when there is one.

The request is read from its context variable (`a2ahub.request_id`) as the line is written:
handlers format in the thread or task that logged, which is the request's own.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import orjson

from a2ahub import outages, request_id, tracing


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "process": record.process,
        }
        context = request_id.current.get()
        if context is not None:
            line["request_id"] = context.id
            for name in ("agent", "method", "binding"):
                if value := getattr(context, name):
                    line[name] = value
        if tracing.enabled:
            trace_id, span_id = tracing.log_ids()
            if trace_id:
                line["trace_id"], line["span_id"] = trace_id, span_id
        if record.exc_info:
            record.exc_text = record.exc_text or self.formatException(record.exc_info)
        if record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        # Anything a library passed that JSON has no type for is written as its str().
        return orjson.dumps(line, default=str).decode()


class OutagesFilter(logging.Filter):
    """For loggers that report every failure with its traceback (Celery's of each job, beat's
    of each job it could not send): a failure that only says the database or Redis is away
    is counted in that outage, which `a2ahub.outages` logs once, and is kept as a one-line
    INFO record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.INFO and record.exc_info and noted(record.exc_info[1]):
            # (Beat's message carries the stack as text after its first line.)
            record.msg, record.args = record.getMessage().split("\n", 1)[0], None
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True


def noted(exc: BaseException | None) -> bool:
    """Whether `exc`, or an exception it was raised from (Celery wraps the broker's), says a
    service is away; counted in that outage if so."""
    for _ in range(3):
        if exc is None:
            return False
        if outages.note(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False

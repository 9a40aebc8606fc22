"""The table of executor kinds: wire name -> where its code lives and how it runs by default.

Executors are imported on first use, so a kind whose module is broken fails only its agents.
The table also feeds the admin's and the forms' choices.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import import_module
from typing import Any


@dataclass(frozen=True)
class ExecutorKind:
    path: str
    label: str
    # "inline" runs in the web process that took the send; "worker" runs as a Celery job.
    default_mode: str = "inline"


EXECUTORS: dict[str, ExecutorKind] = {
    "echo": ExecutorKind("agents.executors.echo.EchoExecutor", "Echo"),
}


def executor_choices() -> list[tuple[str, str]]:
    return [(name, kind.label) for name, kind in EXECUTORS.items()]


@cache
def executor_class(name: str) -> Any:
    module_path, _, attr = EXECUTORS[name].path.rpartition(".")
    return getattr(import_module(module_path), attr)

"""The table of executor kinds: wire name -> where its code lives and how it runs by default.

Executors are imported on first use, so a kind whose module is broken fails only its agents.
The table also feeds the admin's and the forms' choices.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agents.models import Agent


@dataclass(frozen=True)
class ExecutorKind:
    path: str
    label: str
    # "inline" runs in the web process that took the send; "worker" runs as a Celery job.
    default_mode: str = "inline"


EXECUTORS: dict[str, ExecutorKind] = {
    "echo": ExecutorKind("agents.executors.echo.EchoExecutor", "Echo"),
    "conformance": ExecutorKind(
        "agents.executors.conformance.ConformanceExecutor", "Conformance (A2A TCK scenarios)"
    ),
    "interview": ExecutorKind(
        "agents.executors.interview.InterviewExecutor", "Multi-turn demo (asks, then answers)"
    ),
    "python": ExecutorKind(
        "agents.executors.python.PythonExecutor", "Python functions (@skill in a module)"
    ),
    "http": ExecutorKind(
        "agents.executors.http.HttpExecutor", "HTTP backend (the hub POSTs each message)"
    ),
    "writer": ExecutorKind(
        "agents.executors.writer.WriterExecutor", "Writer demo (streams a text in chunks)"
    ),
    "slow": ExecutorKind(
        "agents.executors.slow.SlowExecutor", "Slow demo (progress, cancellable)", "worker"
    ),
    "a2a-remote": ExecutorKind(
        "agents.executors.remote.RemoteAgentExecutor", "Remote A2A agent (the hub fronts it)"
    ),
    "orchestrator": ExecutorKind(
        "agents.executors.orchestrator.OrchestratorExecutor",
        "Orchestrator demo (sends sub-tasks to hosted agents)",
    ),
}


def execution_mode(agent: Agent) -> str:
    """The agent's own choice, or its executor kind's default."""
    if agent.execution_mode:
        return agent.execution_mode
    kind = EXECUTORS.get(agent.executor_kind)
    return kind.default_mode if kind else "inline"


def executor_choices() -> list[tuple[str, str]]:
    return [(name, kind.label) for name, kind in EXECUTORS.items()]


@cache
def executor_class(name: str) -> Any:
    module_path, _, attr = EXECUTORS[name].path.rpartition(".")
    return getattr(import_module(module_path), attr)

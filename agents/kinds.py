"""The executor kinds an agent may name, from the `EXECUTOR_KINDS` setting.

Each kind is a dotted path to its class (Django's `import_string` idiom, as for email or
storage backends), a label for the forms and the default place its turns run. Classes are
imported on first use, so a kind whose module is broken fails only its agents, and nothing
below the executor layer imports a kind.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Protocol

from django.conf import settings
from django.utils.module_loading import import_string


class RunsOnAKind(Protocol):
    # What `execution_mode` reads of an agent (the model imports this module for its choices).
    executor_kind: str
    execution_mode: str


def execution_mode(agent: RunsOnAKind) -> str:
    """The agent's own choice, or its executor kind's default."""
    if agent.execution_mode:
        return agent.execution_mode
    kind = settings.EXECUTOR_KINDS.get(agent.executor_kind)
    return kind.get("mode", "inline") if kind else "inline"


def mode_label(mode: str, label: str) -> str:
    """How a mode runs, true to the way this hub runs: an embedded hub has no Celery, its
    worker jobs run on a pool inside the web process."""
    if mode == "worker" and settings.EMBEDDED:
        return "worker (the in-process worker pool)"
    return label


def executor_choices() -> list[tuple[str, str]]:
    return [(name, kind["label"]) for name, kind in settings.EXECUTOR_KINDS.items()]


def executor_class(name: str) -> Any:
    return _imported(settings.EXECUTOR_KINDS[name]["class"])


@cache
def _imported(path: str) -> Any:
    return import_string(path)


def hook(kind: str, name: str) -> Any:
    """The kind's class attribute `name`, or None (for an unknown kind too)."""
    if kind not in settings.EXECUTOR_KINDS:
        return None
    return getattr(executor_class(kind), name, None)


def check_settings(kind: str, executor_settings: dict[str, Any]) -> None:
    """Let the kind judge an agent's settings (it raises ValidationError naming the fault);
    a kind with no `check_settings` takes any."""
    if (check := hook(kind, "check_settings")) is not None:
        check(executor_settings)


def check_card(kind: str, executor_settings: dict[str, Any]) -> Any:
    """The signature check of the remote card a kind's settings name (`agents.card_trust`'s
    CardTrust), or None for a kind (or settings) without one."""
    check = hook(kind, "check_card")
    return None if check is None else check(executor_settings)


def shown_settings(kind: str, executor_settings: dict[str, Any]) -> dict[str, Any]:
    """The settings as an answer shows them: a kind whose settings hold secrets shows that
    each is stored, never the stored (sealed) value."""
    show = hook(kind, "shown_settings")
    return executor_settings if show is None else show(executor_settings)


def written_settings(kind: str, new: dict[str, Any], stored: dict[str, Any]) -> dict[str, Any]:
    """Settings written through the API, as they are to be stored: a kind whose settings hold
    secrets seals the ones written in plain and keeps `stored` ones the answer's mark names
    (it raises ValidationError for a mark with nothing stored)."""
    write = hook(kind, "written_settings")
    return new if write is None else write(new, stored)


def settings_forms() -> dict[str, Any]:
    """Each kind's settings form (fields instead of raw JSON), from `EXECUTOR_SETTINGS_FORMS`:
    the forms live with the executors, which the catalog does not import."""
    return dict(_imported(settings.EXECUTOR_SETTINGS_FORMS))

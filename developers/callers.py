"""Who called, in words: a task's owner is a principal id (`user:2`, `apikey:7`, `app:3`,
`anonymous`); the pages show the user's name, the key's name or the application's name."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from django.contrib.auth import get_user_model
from oauth2_provider.models import get_application_model

from agents.models import ApiKey
from tasks.models import Task

ANONYMOUS = "anonymous"


def name_callers(tasks: Iterable[Task]) -> None:
    """Set `caller` on each task: one query per kind of principal on the page, not per row."""
    rows = list(tasks)
    wanted: dict[str, set[int]] = defaultdict(set)
    for task in rows:
        kind, _, number = task.owner.partition(":")
        if number.isdigit():
            wanted[kind].add(int(number))
    names = known_names(wanted)
    for task in rows:
        task.caller = names.get(task.owner) or task.owner  # type: ignore[attr-defined]


def known_names(wanted: dict[str, set[int]]) -> dict[str, str]:
    users = get_user_model().objects.filter(pk__in=wanted["user"])
    keys = ApiKey.objects.filter(pk__in=wanted["apikey"])
    applications = get_application_model().objects.filter(pk__in=wanted["app"])
    names = {ANONYMOUS: ANONYMOUS}
    names |= {f"user:{pk}": str(name) for pk, name in users.values_list("pk", "username")}
    names |= {f"apikey:{pk}": f"API key “{name}”" for pk, name in keys.values_list("pk", "name")}
    names |= {
        f"app:{pk}": f"application “{name or pk}”"
        for pk, name in applications.values_list("pk", "name")
    }
    return names


def name_caller(task: Task) -> Task:
    name_callers([task])
    return task

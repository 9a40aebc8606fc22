"""A task belongs to the user behind the credential that created it: tasks made with a key
that has an owner pass from `apikey:<id>` to `user:<owner id>`, so that key, the user's
tokens and their session all see them."""

from __future__ import annotations

from typing import Any

from django.db import migrations


def to_users(apps: Any, schema_editor: Any) -> None:
    ApiKey = apps.get_model("agents", "ApiKey")
    Task = apps.get_model("tasks", "Task")
    for key_id, owner_id in ApiKey.objects.filter(owner__isnull=False).values_list("id", "owner_id"):
        Task.objects.filter(owner=f"apikey:{key_id}").update(owner=f"user:{owner_id}")


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0005_agent_access"),
        ("tasks", "0007_task_list_indexes"),
    ]

    operations = [migrations.RunPython(to_users, migrations.RunPython.noop)]

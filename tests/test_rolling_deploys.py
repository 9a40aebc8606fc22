"""A rolling deploy: the new release's migrations run while processes of the release before
still serve, and those insert rows naming only the columns they know. Every column a
migration adds to an existing table therefore has a database default (or takes NULL), so
their inserts keep working until they are replaced."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings
from django.db import connection, migrations
from django.db.migrations.loader import MigrationLoader
from django.db.models import Field, ManyToManyField
from django.db.models.fields import NOT_PROVIDED
from django.utils import timezone

from tasks.models import Task
from tests.factories.agents import make_agent

# The project's own apps: the folders at its top level (not the installed libraries').
OUR_APPS = {config.label for config in apps.get_app_configs()
            if Path(config.path).parent == Path(settings.BASE_DIR)}  # fmt: skip


def added_columns() -> list[tuple[str, str, str]]:
    """(app, model, field) of every NOT NULL column added by a migration after its app's
    first, that the model still has."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    found = []
    for (app, _), migration in sorted(loader.disk_migrations.items()):
        if app not in OUR_APPS or migration.initial:
            continue
        for operation in migration.operations:
            if not isinstance(operation, migrations.AddField) or operation.field.null:
                continue
            if isinstance(operation.field, ManyToManyField):
                continue  # a table of its own, which older code never writes
            found.append((app, operation.model_name, operation.name))
    return found


def test_the_columns_migrations_add_are_found() -> None:
    assert {"tasks", "agents", "push", "registry"} <= OUR_APPS
    assert ("tasks", "task", "traceparent") in added_columns()


@pytest.mark.parametrize("app, model, name", added_columns())
def test_every_column_added_later_has_a_database_default(app: str, model: str, name: str) -> None:
    field: Field = apps.get_model(app, model)._meta.get_field(name)

    assert field.db_default is not NOT_PROVIDED, (
        f"{app}.{model}.{name}: inserts by the release before it would fail while it deploys"
    )


@pytest.mark.django_db
def test_a_task_inserted_by_the_release_before_the_added_columns_is_stored() -> None:
    agent = make_agent("old-release")
    task = Task(id=uuid.uuid4(), agent=agent, owner="anonymous", context_id="c", state="submitted",
                status_timestamp=timezone.now(), protocol_version="1.0", execution_mode="inline",
                created_at=timezone.now(), updated_at=timezone.now())  # fmt: skip
    added = {name for app, model, name in added_columns() if (app, model) == ("tasks", "task")}
    known = [f for f in Task._meta.concrete_fields if f.name not in added]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in known)
    values = [f.get_db_prep_save(getattr(task, f.attname), connection) for f in known]

    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {Task._meta.db_table} ({columns}) "
            f"VALUES ({', '.join(['%s'] * len(known))})",
            values,
        )

    stored = Task.objects.get(id=task.id)
    assert (stored.traceparent, stored.client_id, stored.push_enabled, stored.binding) == (
        "", "", False, "JSONRPC"
    )  # fmt: skip

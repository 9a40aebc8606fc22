"""Push notification configs: checked, stored with their secrets, shown without them."""

from __future__ import annotations

import re
import uuid
from operator import attrgetter
from urllib.parse import urlsplit

from a2a.types import a2a_pb2 as pb
from django.db import transaction

from a2ahub.errors import invalid_params
from push.models import PushNotificationConfig
from tasks.columns import field
from tasks.models import Task

MAX_CONFIGS_PER_TASK = 10
INBOX_PATH = "/push/inbox/"
DEFAULT_ID = "default"


# The fields of a config a client gives, by the name the error names (its attribute path in
# the config), and where they are kept.
STORED_AS = {"id": "config_id", "url": "url", "token": "token",
             "authentication.scheme": "auth_scheme",
             "authentication.credentials": "auth_credentials"}  # fmt: skip


# The fields sent in a delivery's headers (Authorization, X-A2A-Notification-Token).
SENT_IN_HEADERS = ("token", "authentication.scheme", "authentication.credentials")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
SCHEME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP token (RFC 9110 11.1)


def check_config(config: pb.TaskPushNotificationConfig) -> None:
    """Refuse a webhook URL the hub must not call (private addresses and the like), and a
    field longer than the hub keeps."""
    from a2ahub.outbound import UnsafeURL, check_url

    if not config.url:
        raise invalid_params("url", "is required")
    for name in STORED_AS:
        value = attrgetter(name)(config)
        limit = field(PushNotificationConfig, STORED_AS[name]).max_length
        if limit is not None and len(value) > limit:
            raise invalid_params(name, f"must be at most {limit} characters")
        if name in SENT_IN_HEADERS and CONTROL.search(value):
            # Accepted, it would fail every delivery (no client sends it in a header).
            raise invalid_params(name, "must not hold control characters (it is sent in a header)")
    if config.authentication.scheme and not SCHEME.fullmatch(config.authentication.scheme):
        raise invalid_params("authentication.scheme", "must be one word, as Bearer or Basic")
    if "/" in config.id or CONTROL.search(config.id):
        raise invalid_params("id", "must not hold / or control characters (it is a URL's part)")
    try:
        check_url(config.url, allow_unresolved=True, hub_paths=(INBOX_PATH,))
    except UnsafeURL as exc:
        raise invalid_params("url", hub_problem(config.url) or str(exc)) from None


def hub_problem(url: str) -> str:
    """Why a webhook on the hub itself is refused, in the words a client acts on ("" when the
    URL does not name the hub): judged on the path as the hub routes it (`outbound.hub_path`)."""
    from a2ahub.outbound import UnsafeURL, hub_path, names_the_hub, other_ports

    parsed = urlsplit(url)
    try:
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
    except ValueError:
        return ""
    if not parsed.hostname or not names_the_hub(parsed.hostname, port) or port in other_ports():
        return ""
    try:
        hub_path(url)
    except UnsafeURL as exc:
        return f"{exc}; on this hub, only its webhook inbox may receive deliveries"
    return "on this hub, only its webhook inbox may receive deliveries"


def create_config(
    task: Task, config: pb.TaskPushNotificationConfig, version: str = ""
) -> PushNotificationConfig:
    """Create or replace the task's config with this id (one is made when it has none). Its
    deliveries speak `version`, the version of the request that gave it (PROTOCOL.md 5),
    which may not be the one the task was made in (the task's, when not given)."""
    fields = {
        "url": config.url,
        "token": config.token,
        "auth_scheme": config.authentication.scheme,
        "auth_credentials": config.authentication.credentials,
        "protocol_version": version or task.protocol_version,
        "active": True,
        "disabled_reason": "",
    }
    with transaction.atomic():
        name_given(task, config)
        row, _ = PushNotificationConfig.objects.update_or_create(
            task=task, config_id=config.id, defaults=fields
        )
        if not task.push_enabled:
            Task.objects.filter(id=task.id).update(push_enabled=True)
            task.push_enabled = True
    return row


def name_given(task: Task, config: pb.TaskPushNotificationConfig) -> None:
    """Name a new config ("default" for a task's first) and refuse it past the limit; one
    given again under its id replaces the stored one. `create_config` stores it next; one
    sent with a follow-up, the writer stores with the message, in the same write."""
    config.id = config.id or unused_id(task)
    existing = PushNotificationConfig.objects.filter(task=task)
    if existing.count() >= MAX_CONFIGS_PER_TASK and not existing.filter(config_id=config.id):
        raise invalid_params("id", f"a task has at most {MAX_CONFIGS_PER_TASK} configs")


def unused_id(task: Task) -> str:
    """The first unnamed config of a task is "default" (0.3 clients fetch it by that name)."""
    if not PushNotificationConfig.objects.filter(task=task, config_id=DEFAULT_ID).exists():
        return DEFAULT_ID
    return uuid.uuid4().hex


def public_view(row: PushNotificationConfig) -> pb.TaskPushNotificationConfig:
    """The config as clients see it: the token and credentials never leave the hub."""
    shown = pb.TaskPushNotificationConfig(task_id=str(row.task_id), id=row.config_id, url=row.url)
    if row.auth_scheme:
        shown.authentication.scheme = row.auth_scheme
    return shown

"""What reading tasks costs as one caller's tasks grow: GetTask, ListTasks (first page, filtered
by status and by contextId, a page deep in the cursor) and the admin's task list (unfiltered,
filtered, searched), at 1,000, 100,000 and 1,000,000 stored tasks.

It makes a PostgreSQL database of its own (`--database`, dropped at the end), migrates it,
seeds the demo agents, sends one real task to the echo agent and copies that task's rows
(task, messages, artifacts) with `INSERT ... SELECT generate_series`, growing the table to
each size in turn. Then it calls the hub's ASGI application in this process (A2A 1.0 JSON-RPC,
with an API key, as a client would) and the admin through Django's test client, and prints
p50 and p95 of each call in milliseconds. No Redis, no other process and no periodic job (the
hub's maintenance thread is stopped: nothing is delivered or pruned while it is timed).

    python bench/scale.py                                   # 1k, 100k, 1M (about 10 minutes)
    python bench/scale.py --sizes 1000,1000000 --json-out new.json --compare old.json
    python bench/scale.py --sizes 100000 --explain          # also the plans of each query
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as bench_run  # bench/run.py: databases, the hub's environment

REPO = Path(__file__).resolve().parent.parent
SLUG = "echo"
# The tasks copied from the template take these states, by their number modulo 100.
STATE_MIX = [(90, "completed"), (94, "failed"), (97, "canceled"), (99, "input-required"),
             (100, "working")]  # fmt: skip
TASKS_PER_CONTEXT = 4  # a conversation of a few turns
LOAD_BATCH = 100_000  # rows a statement inserts
DEEP_PAGE = 100  # the page reached through the cursor (or the last one, when fewer)


# -- command line -------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="1000,100000,1000000", help="comma-separated task counts")
    p.add_argument(
        "--pg",
        default="postgresql://postgres@127.0.0.1:5432",
        help="PostgreSQL server (no database part); the bench database is made here",
    )
    p.add_argument("--database", default="a2ahub_scale_bench", help="created and dropped")
    p.add_argument("--samples", type=int, default=200, help="timed calls per A2A case")
    p.add_argument("--admin-samples", type=int, default=20, help="timed loads per admin page")
    p.add_argument("--explain", action="store_true", help="print each query's plan per size")
    p.add_argument("--json-out", type=Path, help="write the numbers here (for --compare)")
    p.add_argument("--compare", type=Path, help="an earlier run's --json-out, set beside")
    p.add_argument("--markdown", type=Path, help="also write the tables to this file")
    p.add_argument("--keep-logs", action="store_true", help="keep the set-up logs folder")
    args = p.parse_args(argv)
    args.size_list = sorted({int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()})
    return args


# -- the database -----------------------------------------------------------------------------


def prepare(bench: bench_run.Bench) -> dict[str, str]:
    url = bench_run.create_database(bench, bench.args.database)
    env = bench_run.hub_env(url.replace("postgresql://", "postgres://"), "", bench.logs)
    env.pop("REDIS_URL")  # reads only: nothing to publish or queue
    for step in (["migrate", "--noinput", "-v", "0"], ["seed_demo"]):
        done = subprocess.run([bench_run.python(), "manage.py", *step], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {step[0]} failed:\n{done.stdout}\n{done.stderr}")
    return env


def task_id_of(n: int) -> str:
    """The id of copy `n`: the same expression as the loader's, so samples can name tasks."""
    import hashlib

    return str(uuid.UUID(hashlib.md5(f"scale-task-{n}".encode()).hexdigest()))


def context_of(n: int) -> str:
    return f"ctx-{n // TASKS_PER_CONTEXT}"


def copy_expressions(model: Any, overrides: dict[str, str]) -> tuple[str, str]:
    """The column list and SELECT list that copy the template row `t` of `model`, with some
    columns computed from the copy's number `n` instead; `id`-like serial keys are left out."""
    from django.db.models import AutoField, BigAutoField

    columns, values = [], []
    for field in model._meta.concrete_fields:
        if isinstance(field, AutoField | BigAutoField):
            continue
        columns.append(f'"{field.column}"')
        values.append(overrides.get(field.column, f't."{field.column}"'))
    return ", ".join(columns), ", ".join(values)


def state_case() -> str:
    whens = " ".join(f"WHEN mod(n, 100) < {below} THEN '{state}'" for below, state in STATE_MIX)
    return f"CASE {whens} END"


def load_tasks(template: str, first: int, last: int, start: dt.datetime) -> None:
    """Copies `first`..`last` of the template task, one second apart from `start`, with their
    messages and artifacts."""
    from django.db import connection, transaction

    from tasks.models import Artifact, Message, Task

    new_id = "md5('scale-task-' || n)::uuid"
    created = "%(start)s::timestamptz + n * interval '1 second'"
    context = f"'ctx-' || (n / {TASKS_PER_CONTEXT})"
    task_columns = copy_expressions(Task, {
        "id": new_id, "context_id": context, "state": state_case(), "created_at": created,
        "status_timestamp": f"{created} + interval '2 seconds'",
        "updated_at": f"{created} + interval '2 seconds'",
        # A fifth came through 0.3, a seventh through HTTP+JSON.
        "protocol_version": "CASE WHEN mod(n, 5) = 0 THEN '0.3' ELSE '1.0' END",
        "binding": "CASE WHEN mod(n, 7) = 0 THEN 'HTTP+JSON' ELSE 'JSONRPC' END",
        "runner": "''", "heartbeat_at": "NULL",
    })  # fmt: skip
    row_columns = {"task_id": new_id, "created_at": created}
    message_columns = copy_expressions(
        Message, row_columns | {"context_id": context, "message_id": "t.message_id || '-' || n"}
    )
    artifact_columns = copy_expressions(Artifact, row_columns | {"updated_at": created})
    for lo in range(first, last + 1, LOAD_BATCH):
        hi = min(last, lo + LOAD_BATCH - 1)
        params: dict[str, Any] = {"template": template, "lo": lo, "hi": hi, "start": start}
        with transaction.atomic(), connection.cursor() as cursor:
            for model, (columns, values) in (
                (Task, task_columns), (Message, message_columns), (Artifact, artifact_columns)
            ):  # fmt: skip
                key = "id" if model is Task else "task_id"
                cursor.execute(
                    f'INSERT INTO "{model._meta.db_table}" ({columns}) SELECT {values} '
                    f'FROM "{model._meta.db_table}" t, generate_series(%(lo)s, %(hi)s) n '
                    f'WHERE t."{key}" = %(template)s',
                    params,
                )


def insert_select(model: Any, values: dict[str, str], source: str) -> str:
    """INSERT ... SELECT of `model`'s rows: every column but a serial key is given."""
    from django.db.models import AutoField, BigAutoField

    fields = [f for f in model._meta.concrete_fields if not isinstance(f, AutoField | BigAutoField)]
    columns = ", ".join(f'"{f.column}"' for f in fields)
    selected = ", ".join(values[f.column] for f in fields)
    return f'INSERT INTO "{model._meta.db_table}" ({columns}) SELECT {selected} FROM {source}'


def load_push(template: str, first: int, last: int, start: dt.datetime) -> None:
    """A webhook on every tenth of copies `first`..`last`, each with ten deliveries of the
    template's last event: 97 % delivered, 2 % abandoned, 1 % pending (retrying), one in a
    thousand a test; one config in a hundred disabled."""
    from django.db import connection, transaction

    from push.models import Delivery, PushNotificationConfig
    from tasks.models import TaskEvent

    created = "%(start)s::timestamptz + n * interval '1 second'"
    config = insert_select(PushNotificationConfig, {
        "config_id": "'hook'", "url": "'http://127.0.0.1:9/hook'", "token": "''",
        "origin": "'http://127.0.0.1:9'",
        "auth_scheme": "''", "auth_credentials": "''", "protocol_version": "'1.0'",
        "active": "mod(n, 1000) <> 0", "disabled_reason": "''", "last_error": "''",
        "lease_until": "NULL", "created_at": created, "updated_at": created,
        "task_id": "md5('scale-task-' || n)::uuid",
    }, "generate_series(%(lo)s, %(hi)s) n WHERE mod(n, 10) = 0")  # fmt: skip
    mix = "mod(c.id * 10 + s, 1000)"
    configs = f'"{PushNotificationConfig._meta.db_table}" c, generate_series(1, 10) s'
    delivery = insert_select(Delivery, {
        "id": "gen_random_uuid()", "sequence": "s",
        "state": f"CASE WHEN {mix} < 970 THEN 'delivered' WHEN {mix} < 990 THEN 'abandoned' "
                 "ELSE 'pending' END",
        "attempts": "1 + mod(s, 3)", "next_attempt_at": "c.created_at + s * interval '1 second'",
        "delivered_at": "c.created_at + s * interval '1 second'", "last_error": "''",
        "test": f"{mix} = 999", "created_at": "c.created_at", "event_id": "%(event)s",
        "config_id": "c.id",
    }, f"{configs} WHERE c.id > %(after)s")  # fmt: skip
    event = TaskEvent.objects.filter(task_id=template).order_by("sequence").last()
    for lo in range(first, last + 1, LOAD_BATCH):
        hi = min(last, lo + LOAD_BATCH - 1)
        after = PushNotificationConfig.objects.order_by("-id").values_list("id", flat=True).first()
        params = {"lo": lo, "hi": hi, "start": start, "event": event.pk if event else None,
                  "after": after or 0}  # fmt: skip
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(config, params)
            cursor.execute(delivery, params)


def vacuum_analyze() -> None:
    from django.db import connection

    from push.models import Delivery, PushNotificationConfig
    from tasks.models import Artifact, Message, Task

    # What autovacuum does on a live hub between bursts: statistics and the visibility map.
    with connection.cursor() as cursor:
        for model in (Task, Message, Artifact, PushNotificationConfig, Delivery):
            cursor.execute(f'VACUUM ANALYZE "{model._meta.db_table}"')


# -- calling the hub ----------------------------------------------------------------------------


async def call_rpc(app: Any, key: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    payload = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    path = f"/agents/{SLUG}/jsonrpc/"
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 50000),
        "headers": [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
                    (b"a2a-version", b"1.0"), (b"x-api-key", key.encode()),
                    (b"content-length", str(len(payload)).encode())],
    }  # fmt: skip
    sent = False
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": payload, "more_body": False}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    answer: dict[str, Any] = json.loads(b"".join(chunks))
    if "result" not in answer:
        raise SystemExit(f"{method} failed: {json.dumps(answer)[:400]}")
    return answer["result"]


async def send_template(app: Any, key: str) -> str:
    message = {"messageId": f"scale-{uuid.uuid4().hex}", "role": "ROLE_USER",
               "parts": [{"text": "How long is a piece of string? " * 4}]}  # fmt: skip
    result = await call_rpc(app, key, "SendMessage", {"message": message})
    return str(result["task"]["id"])


async def timed_async(samples: int, make: Callable[[], Any]) -> list[float]:
    for _ in range(min(5, samples)):  # warm the pool, caches and imports
        await make()
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        await make()
        times.append(1000 * (time.perf_counter() - t0))
    return times


async def deep_token(app: Any, key: str, size: int) -> tuple[str, int]:
    """The cursor of page `DEEP_PAGE` (or the last page there is), and that page's number."""
    token, page = "", 1
    for page in range(2, DEEP_PAGE + 1):
        result = await call_rpc(app, key, "ListTasks", {"pageToken": token} if token else {})
        if not result.get("nextPageToken"):
            return token, page - 1
        token = result["nextPageToken"]
    return token, DEEP_PAGE


def newest_status_minute(size: int, start: dt.datetime) -> str:
    """A status timestamp one minute before the newest task's: some 60 tasks are newer."""
    newest = start + dt.timedelta(seconds=size + 2)
    return (newest - dt.timedelta(seconds=60)).isoformat().replace("+00:00", "Z")


async def measure_protocol(
    app: Any, key: str, size: int, start: dt.datetime, samples: int
) -> dict[str, list[float]]:
    rng = random.Random(size)
    recent = newest_status_minute(size, start)
    token, depth = await deep_token(app, key, size)
    if depth < DEEP_PAGE:
        print(f"  (page 100 via pageToken: {size:,} tasks have {depth} pages; the last is timed)")
    cases: dict[str, Callable[[], Any]] = {
        "GetTask": lambda: call_rpc(app, key, "GetTask", {"id": task_id_of(rng.randint(1, size))}),
        "ListTasks first page": lambda: call_rpc(app, key, "ListTasks", {}),
        "ListTasks status=completed": lambda: call_rpc(
            app, key, "ListTasks", {"status": "TASK_STATE_COMPLETED"}
        ),
        "ListTasks status=working (1 %)": lambda: call_rpc(
            app, key, "ListTasks", {"status": "TASK_STATE_WORKING"}
        ),
        "ListTasks contextId": lambda: call_rpc(
            app, key, "ListTasks", {"contextId": context_of(rng.randint(1, size))}
        ),
        "ListTasks contextId + status=completed": lambda: call_rpc(
            app,
            key,
            "ListTasks",
            {"contextId": context_of(rng.randint(1, size)), "status": "TASK_STATE_COMPLETED"},
        ),
        "ListTasks page 100 via pageToken": lambda: call_rpc(
            app, key, "ListTasks", {"pageToken": token} if token else {}
        ),
        "ListTasks statusTimestampAfter (last minute)": lambda: call_rpc(
            app, key, "ListTasks", {"statusTimestampAfter": recent}
        ),
        "ListTasks historyLength=2, artifacts": lambda: call_rpc(
            app, key, "ListTasks", {"historyLength": 2, "includeArtifacts": True}
        ),
    }
    return {name: await timed_async(samples, make) for name, make in cases.items()}


async def measure_sends(app: Any, key: str, samples: int) -> dict[str, list[float]]:
    """What the indexes cost the writes: a blocking send to the echo agent (a new task, its
    status changes and messages), into the same caller's tasks."""
    return {"SendMessage (echo, blocking)": await timed_async(samples, lambda: send(app, key))}


async def send(app: Any, key: str) -> None:
    await send_template(app, key)


def measure_admin(size: int, samples: int) -> dict[str, list[float]]:
    from django.test import Client
    from django.urls import reverse

    from agents.models import Agent

    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(operator())
    url = reverse("admin:tasks_task_changelist")
    agent = Agent.objects.get(slug=SLUG).pk
    pages = {
        "admin list": {},
        "admin filter state=input-required": {"state__exact": "input-required"},
        "admin filter agent": {"agent__id__exact": str(agent)},
        "admin filter protocol 0.3": {"protocol_version__exact": "0.3"},
        "admin search task id": {"q": task_id_of(size // 2)},
        "admin search context id": {"q": context_of(size // 3)},
    }
    return {name: load_page(client, url, params, samples) for name, params in pages.items()}


def load_page(client: Any, url: str, params: dict[str, str], samples: int) -> list[float]:
    times = []
    for n in range(samples + 1):
        t0 = time.perf_counter()
        response = client.get(url, params)
        if response.status_code != 200:
            raise SystemExit(f"{url} {params}: HTTP {response.status_code}")
        if n:  # the first load warms up
            times.append(1000 * (time.perf_counter() - t0))
    return times


def measure_push_admin(size: int, samples: int) -> dict[str, list[float]]:
    """The push lists: configs (one per ten tasks) and deliveries (as many as tasks)."""
    from django.test import Client
    from django.urls import reverse

    from push.models import Delivery

    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(operator())
    configs = reverse("admin:push_pushnotificationconfig_changelist")
    deliveries = reverse("admin:push_delivery_changelist")
    task = task_id_of(10 * (size // 20))  # one with a webhook
    one = Delivery.objects.filter(config__task_id=task).first()
    if one is None:
        return {}
    pages = {
        "push configs list": (configs, {}),
        "push configs failing": (configs, {"health": "failing"}),
        "push configs disabled (no index)": (configs, {"health": "disabled"}),
        "push configs search task id": (configs, {"q": task[:8]}),
        "push deliveries list": (deliveries, {}),
        "push deliveries state=pending": (deliveries, {"state__exact": "pending"}),
        "push deliveries test (no index)": (deliveries, {"test__exact": "1"}),
        "push deliveries search task id": (deliveries, {"q": task[:8]}),
        "push deliveries search id": (deliveries, {"q": str(one.pk)}),
    }
    return {name: load_page(client, url, params, samples) for name, (url, params) in pages.items()}


def measure_dashboard(samples: int) -> dict[str, list[float]]:
    """The operators' dashboard (the admin's home page), after one run of the minute rollup
    that feeds it, as Celery beat would have made (timed too: it reads the last day)."""
    from django.test import Client
    from django.urls import reverse

    from console import rollup

    t0 = time.perf_counter()
    rollup.roll_up()
    timings = {"console rollup (first run: a day)": [1000 * (time.perf_counter() - t0)]}
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(operator())
    times = []
    for n in range(samples + 1):
        t0 = time.perf_counter()
        response = client.get(reverse("admin:index"))
        if response.status_code != 200:
            raise SystemExit(f"dashboard: HTTP {response.status_code}")
        if n:  # the first load warms up
            times.append(1000 * (time.perf_counter() - t0))
    return timings | {"admin dashboard (home)": times}


def operator() -> Any:
    from django.contrib.auth import get_user_model

    user, _ = get_user_model().objects.get_or_create(
        username="scale-operator", defaults={"is_staff": True, "is_superuser": True}
    )
    return user


# -- plans ------------------------------------------------------------------------------------


def explain_all(key_id: str, size: int, start: dt.datetime) -> str:
    """EXPLAIN ANALYZE of every SELECT on tasks that ListTasks pages (first, filtered, a page
    deep in the cursor) and the admin's list and search run."""
    from a2a.types import a2a_pb2 as pb
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from agents.models import Agent
    from agents.principals import Principal
    from protocol.calls import Call
    from protocol.handlers.tasks import list_page

    agent = Agent.objects.get(slug=SLUG)
    call = Call(agent=agent, principal=Principal(key_id, key_id), version="1.0",
                base_url_of=lambda: "http://127.0.0.1")  # fmt: skip
    deep = pb.ListTasksRequest()
    for _ in range(DEEP_PAGE - 1):
        deep.page_token = list_page(call, deep).next_page_token or deep.page_token
    recent = pb.ListTasksRequest()
    recent.status_timestamp_after.FromJsonString(newest_status_minute(size, start))
    requests = {
        "ListTasks first page": pb.ListTasksRequest(),
        "ListTasks status=working": pb.ListTasksRequest(status=pb.TASK_STATE_WORKING),
        "ListTasks contextId": pb.ListTasksRequest(context_id=context_of(size // 2)),
        "ListTasks page 100 via pageToken": deep,
        "ListTasks statusTimestampAfter (last minute)": recent,
    }
    out = []
    for name, request in requests.items():
        with CaptureQueriesContext(connection) as queries:
            list_page(call, request)
        out.append(explain_queries(name, queries.captured_queries))
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(operator())
    for name, params in {"admin list": {}, "admin search": {"q": task_id_of(size // 2)}}.items():
        with CaptureQueriesContext(connection) as queries:
            client.get(reverse("admin:tasks_task_changelist"), params)
        out.append(explain_queries(name, queries.captured_queries))
    out.append(dashboard_queries(client))
    return "\n".join(out)


def dashboard_queries(client: Any, shown: int = 5) -> str:
    """The dashboard's queries: how many, their total time, and the slowest few with their
    plans (any table: the page reads rollups, deliveries and Redis as well as tasks)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    client.get(reverse("admin:index"))  # warm: the page keeps its numbers for a while
    with CaptureQueriesContext(connection) as queries:
        client.get(reverse("admin:index"))
    captured = queries.captured_queries
    total = sum(float(q["time"]) for q in captured)
    slowest = sorted(captured, key=lambda q: float(q["time"]), reverse=True)[:shown]
    lines = [f"### admin dashboard (home): {len(captured)} queries, {1000 * total:.1f} ms in all"]
    for query in slowest:
        sql = query["sql"]
        lines.append(f"\n    {1000 * float(query['time']):.1f} ms: {sql[:600]}")
        if sql.startswith("SELECT"):
            with connection.cursor() as cursor:
                cursor.execute(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) {sql}")
                plan = "\n".join(f"        {row[0]}" for row in cursor.fetchall())
            lines.append(f"\n{plan}")
    return "\n".join(lines) + "\n"


def explain_queries(name: str, captured: list[dict[str, str]]) -> str:
    from django.db import connection

    lines = [f"### {name}"]
    for query in captured:
        sql = query["sql"]
        if not sql.startswith("SELECT") or "tasks_task" not in sql:
            continue
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) {sql}")
            plan = "\n".join(row[0] for row in cursor.fetchall())
        indented = "\n".join(f"    {line}" for line in plan.split("\n"))
        lines.append(f"\n    {sql[:300]}\n\n{indented}")
    return "\n".join(lines) + "\n"


# -- the run ----------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summarize(timings: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    return {
        name: {"p50": statistics.median(times), "p95": percentile(times, 0.95)}
        for name, times in timings.items()
    }


def run_sizes(args: argparse.Namespace, key: str, key_id: str, template: str) -> dict[str, Any]:
    from a2ahub.asgi import application

    start = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=max(args.size_list) + 86400)
    results: dict[str, Any] = {}
    loaded = 0
    for size in args.size_list:
        t0 = time.monotonic()
        load_tasks(template, loaded + 1, size, start)
        load_push(template, loaded + 1, size, start)
        vacuum_analyze()
        loaded = size
        print(f"\n{size:,} tasks loaded in {time.monotonic() - t0:.0f} s", flush=True)
        timings = asyncio.run(measure_protocol(application, key, size, start, args.samples))
        timings |= measure_admin(size, args.admin_samples)
        timings |= measure_push_admin(size, args.admin_samples)
        timings |= measure_dashboard(args.admin_samples)
        # Last: the tasks it adds are not among those the reads above were timed on.
        timings |= asyncio.run(measure_sends(application, key, args.samples))
        results[str(size)] = summarize(timings)
        print(size_table(results[str(size)]), flush=True)
        if args.explain:
            print(explain_all(key_id, size, start), flush=True)
    return results


def size_table(numbers: dict[str, dict[str, float]]) -> str:
    lines = ["| What | p50 ms | p95 ms |", "|---|---|---|"]
    lines += [f"| {name} | {v['p50']:.2f} | {v['p95']:.2f} |" for name, v in numbers.items()]
    return "\n".join(lines)


def comparison(results: dict[str, Any], old: dict[str, Any] | None) -> str:
    """One table: each case's p50 (p95) at each size, with the old run's beside it."""
    sizes = list(results)
    head = "| What | " + " | ".join(f"{int(s):,} tasks" for s in sizes) + " |"
    lines = [head, "|---" * (len(sizes) + 1) + "|"]
    names = list(next(iter(results.values())))
    for name in names:
        cells = []
        for size in sizes:
            new = results[size].get(name)
            before = matching_case(old.get(size, {}), name) if old else None
            text = f"{new['p50']:.1f} ({new['p95']:.1f})" if new else "—"
            if before:
                text = f"{before['p50']:.1f} ({before['p95']:.1f}) → {text}"
            cells.append(text)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def matching_case(numbers: dict[str, Any], name: str) -> dict[str, float] | None:
    return dict(numbers[name]) if name in numbers else None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logs = Path(tempfile.mkdtemp(prefix="a2ahub-scale-"))
    bench = bench_run.Bench(args, logs, pin=False, tag=f"scale{os.getpid()}")
    try:
        env = prepare(bench)
        os.environ.update(env)
        import django

        django.setup()
        from agents.models import Agent, ApiKey
        from tasks import runner

        # The hub here is embedded: its maintenance thread would run the periodic jobs, and
        # the push sweep would send the pending deliveries loaded above and retention prune
        # the old ones while they are timed. Stopped before it starts: the bench only reads.
        runner.stop_maintenance(timeout=0)

        api_key, key = ApiKey.issue("scale bench", agent=Agent.objects.get(slug=SLUG))
        from a2ahub.asgi import application

        template = asyncio.run(send_template(application, key))
        results = run_sizes(args, key, api_key.principal, template)
    finally:
        with contextlib.suppress(Exception):
            from django.db import connections

            connections.close_all()
            connections["default"].close_pool()
        bench_run.drop_databases(bench)
        if not args.keep_logs:
            shutil.rmtree(logs, ignore_errors=True)
    old = json.loads(args.compare.read_text()) if args.compare else None
    text = "p50 (p95) in ms" + (", old → new" if old else "") + "\n\n" + comparison(results, old)
    print(f"\n{text}")
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=1))
    if args.markdown:
        args.markdown.write_text(f"# Scale bench\n\n{text}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

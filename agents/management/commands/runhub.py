"""Serve the hub: daphne on HOST:PORT, plus Celery worker processes, Celery beat (the
periodic jobs: recovery, the push sweep) and the bulk process (daphne on a Unix socket, for
requests with big bodies: `protocol.bulk`) when REDIS_URL is set. Each is started again when
it dies (`a2ahub.supervisor`); SIGTERM or SIGINT stops them all.

gRPC on GRPC_PORT (unless 0): distributed, a `rungrpc` process beside daphne; embedded,
inside daphne (`GRPC_IN_WEB`), since an embedded hub's task events live in that one
process's memory."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from a2ahub.supervisor import Child, Supervisor

# Read by `a2ahub.asgi`: the web process serves gRPC on its own event loop.
GRPC_IN_WEB = "A2AHUB_GRPC_IN_WEB"
# Read by the settings: this process is the bulk process.
BULK_PROCESS = "A2AHUB_BULK_PROCESS"
APPLICATION = "a2ahub.asgi:application"


class Command(BaseCommand):
    help = "Run the web server and, in distributed mode, the Celery workers and beat beside it."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default=settings.HOST)
        parser.add_argument("--port", type=int, default=settings.PORT)
        parser.add_argument("--workers", type=int, default=1, help="Celery worker processes")
        parser.add_argument(
            "--no-beat", dest="beat", action="store_false",
            help="start no Celery beat (another runhub of this hub runs one)",
        )  # fmt: skip

    def handle(self, *args: Any, **options: Any) -> None:
        children = [Child("web", self.daphne_command(options["host"], options["port"]))]
        if settings.GRPC_PORT and settings.EMBEDDED:
            os.environ[GRPC_IN_WEB] = "1"  # the web child inherits it
        elif settings.GRPC_PORT:
            children.append(Child("grpc", self.grpc_command(options["host"])))
        if not settings.EMBEDDED:
            children.append(self.bulk())
            children += self.workers(options["workers"])
            if options["beat"]:
                children.append(Child("beat", self.beat_command()))
        self.stdout.write(f"A2A Hub on http://{options['host']}:{options['port']}/")
        if settings.GRPC_PORT:
            self.stdout.write(f"A2A gRPC on {options['host']}:{settings.GRPC_PORT}")
        sys.exit(Supervisor(children).run())

    def daphne_command(self, host: str, port: int) -> list[str]:
        return [sys.executable, "-m", "a2ahub.daphne", "-b", host, "-p", str(port), APPLICATION]

    def bulk(self) -> Child:
        """The bulk process, on a socket of this runhub's (the web child inherits its path);
        `lockfile` has it remove the socket a bulk process that died left behind."""
        path = os.environ.setdefault(
            "A2A_BULK_SOCKET", str(Path(tempfile.gettempdir()) / f"a2ahub-bulk-{os.getpid()}.sock")
        )
        command = [sys.executable, "-m", "a2ahub.daphne", "-e", f"unix:{path}:lockfile=1"]
        return Child("bulk", [*command, APPLICATION], env={BULK_PROCESS: "1"})

    def grpc_command(self, host: str) -> list[str]:
        manage = Path(settings.BASE_DIR) / "manage.py"
        return [sys.executable, str(manage), "rungrpc", "--host", host]

    def celery_command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "celery", "-A", "a2ahub", *args, "-l", "INFO"]

    def beat_command(self) -> list[str]:
        return self.celery_command("beat")

    def workers(self, count: int) -> list[Child]:
        concurrency = str(settings.CELERY_WORKER_CONCURRENCY)
        quiet = ["--without-gossip", "--without-mingle", "--without-heartbeat"]
        command = self.celery_command("worker", "-P", "threads", "-c", concurrency, *quiet)
        return [Child(f"worker hub{i}", [*command, "-n", f"hub{i}@%h"]) for i in range(count)]

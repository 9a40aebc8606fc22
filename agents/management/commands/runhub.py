"""Serve the hub: daphne on HOST:PORT, plus Celery worker processes when REDIS_URL is set."""

from __future__ import annotations

import signal
import subprocess
import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Run the web server and, in distributed mode, the Celery workers beside it."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default=settings.HOST)
        parser.add_argument("--port", type=int, default=settings.PORT)
        parser.add_argument("--workers", type=int, default=1, help="Celery worker processes")

    def handle(self, *args: Any, **options: Any) -> None:
        children = [] if settings.EMBEDDED else self.start_workers(options["workers"])
        web = subprocess.Popen(self.daphne_command(options["host"], options["port"]))
        self.stdout.write(f"A2A Hub on http://{options['host']}:{options['port']}/")
        self.forward_signals([web, *children])
        code = web.wait()
        for child in children:
            child.terminate()
        for child in children:
            child.wait(timeout=30)
        sys.exit(code)

    def daphne_command(self, host: str, port: int) -> list[str]:
        return [
            sys.executable,
            "-m",
            "a2ahub.daphne",
            "-b",
            host,
            "-p",
            str(port),
            "a2ahub.asgi:application",
        ]

    def start_workers(self, count: int) -> list[subprocess.Popen[bytes]]:
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "a2ahub",
            "worker",
            "-P",
            "threads",
            "-c",
            str(settings.CELERY_WORKER_CONCURRENCY),
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-l",
            "INFO",
        ]
        return [subprocess.Popen([*command, "-n", f"hub{i}@%h"]) for i in range(count)]

    def forward_signals(self, processes: list[subprocess.Popen[bytes]]) -> None:
        def stop(signum: int, _frame: Any) -> None:
            for process in processes:
                process.send_signal(signal.SIGTERM)

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)

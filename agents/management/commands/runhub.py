"""Serve the hub: daphne on HOST:PORT, plus Celery worker processes and Celery beat (the
periodic jobs: recovery, the push sweep) when REDIS_URL is set."""

from __future__ import annotations

import signal
import subprocess
import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand


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
        children = [] if settings.EMBEDDED else self.start_workers(options["workers"])
        if not settings.EMBEDDED and options["beat"]:
            children.append(subprocess.Popen(self.beat_command()))
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

    def beat_command(self) -> list[str]:
        return [sys.executable, "-m", "celery", "-A", "a2ahub", "beat", "-l", "INFO"]

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

"""Settings come from the environment; a bad value stops start-up and names the variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


PRINT_PORT = "import django; django.setup(); from django.conf import settings; print(settings.PORT)"


def load_settings(
    tmp_path: Path, code: str = PRINT_PORT, **env: str
) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG"}
    }
    clean |= {"DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "a2ahub.settings"} | env
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PORT", "eighty"),
        ("PORT", "70000"),
        ("DEBUG", "maybe"),
        ("REDIS_URL", "http://127.0.0.1:6379"),
        ("PUBLIC_BASE_URL", "hub.example.com"),
        ("PUBLIC_BASE_URL", "https://hub.example.com/sub/path"),
        ("DATABASE_URL", "mysql://u@h/db"),
        ("DATABASE_URL", "not a url"),
        ("SECRET_KEY", "short"),
        ("LOG_LEVEL", "LOUD"),
    ],
)
def test_a_bad_value_stops_start_up_naming_the_variable(
    tmp_path: Path, name: str, value: str
) -> None:
    result = load_settings(tmp_path, **{name: value})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert name in result.stderr.splitlines()[-1]


def test_defaults_start_an_embedded_hub_on_port_8000(tmp_path: Path) -> None:
    result = load_settings(tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "8000"


def test_a_generated_secret_key_is_kept_between_starts(tmp_path: Path) -> None:
    load_settings(tmp_path)
    first = (tmp_path / "secret_key").read_text()
    load_settings(tmp_path)
    assert (tmp_path / "secret_key").read_text() == first
    assert len(first) >= 50


def test_a_distributed_hub_needs_an_explicit_secret_key(tmp_path: Path) -> None:
    result = load_settings(tmp_path, DATABASE_URL="postgres://u@127.0.0.1/db")
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr.splitlines()[-1]
    assert not (tmp_path / "secret_key").exists()

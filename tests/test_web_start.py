"""What a web process does before it serves: the imports that the first page or card request
would otherwise make on its event loop, holding every other request of the process (streams,
sends, probes) for as long as they take."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT, embedded_env

# The site's URLconf and what it brings: every app's views, and the model client's types
# (about 240 ms of imports on a quick machine).
SITE = ("a2ahub.urls", "agents.urls", "push.urls", "registry.urls", "operators_api.urls",
        "developers.urls", "openai")  # fmt: skip


def test_the_web_application_has_imported_the_whole_site_before_it_serves(tmp_path: Path) -> None:
    code = f"import sys, a2ahub.asgi\nprint(','.join(m for m in {SITE!r} if m not in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=embedded_env(tmp_path),
                          capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    assert done.stdout.strip() == "", f"imported only at the first request: {done.stdout}"

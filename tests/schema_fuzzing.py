"""What the schemathesis tests share: how many cases a run makes, and running one operation's
cases against a live server until the first failure (shrunk), reported as text so that a test
can list every operation's failure at once."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings

DEEP = os.environ.get("HYPOTHESIS_PROFILE") == "deep"
# Derandomized and bounded in `make test`; `make fuzz` makes many more, with fresh randomness.
EXAMPLES = int(os.environ.get("SCHEMA_FUZZ_EXAMPLES", 1000 if DEEP else 12))
TIMEOUT = 0 if DEEP else 300


def fuzz(
    operation: Any, strategy: Any, base_url: str, headers: dict[str, str],
    checks: Sequence[Callable[..., Any]],
) -> str | None:  # fmt: skip
    """The first failure schemathesis finds for one operation, shrunk, or None."""

    @given(case=strategy)
    @settings(
        max_examples=EXAMPLES, derandomize=not DEEP, database=None, deadline=None,
        suppress_health_check=list(HealthCheck), phases=[Phase.generate, Phase.shrink],
    )  # fmt: skip
    def run(case: Any) -> None:
        response = case.call(base_url=base_url, headers=headers)
        case.validate_response(response, checks=list(checks))

    try:
        run()
    except (Exception, BaseExceptionGroup) as exc:  # a report of schemathesis: list them all
        return f"{operation.label}: {exc}"
    return None

"""Reading `/metrics` as Prometheus does: the text parsed with prometheus_client's own parser,
one sample looked up by its name and labels."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


def sample(text: str, name: str, **labels: str) -> float:
    """The value of the sample `name` with exactly these labels, 0 if there is none yet."""
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == name and found.labels == labels:
                return float(found.value)
    return 0.0

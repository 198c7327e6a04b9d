"""Fixtures every unit test gets."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kumo.ports import markers

#: The cluster ID of the unit tests: what Kumo's markers name (kumo.ports.markers).
CLUSTER = "c1a55e5c1a55"

# Set at import too: test modules build marker constants (``OURS = marker_tags(UID)``)
# while they are collected, before any fixture runs.
markers.set_cluster(CLUSTER)


@pytest.fixture(autouse=True)
def cluster_id() -> Iterator[str]:
    """Kumo's process-wide cluster ID, as ``kumo run`` sets it at start
    (runtime/cluster.py); a test that changes it gets it back afterwards."""
    markers.set_cluster(CLUSTER)
    yield CLUSTER
    markers.set_cluster(CLUSTER)

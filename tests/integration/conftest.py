"""Integration fixtures: the real local kube-apiserver, the real local OpenStack, Kumo.

Everything here talks to real servers on 127.0.0.1; the fixtures start them when
they are not running (dev/kube/up.sh, dev/openstack/lab.sh up).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from kumo.ports import markers
from tests.integration.capi_fixtures import *  # noqa: F403
from tests.integration.helpers import cluster_id
from tests.integration.kube_fixtures import *  # noqa: F403
from tests.integration.kumo_fixtures import *  # noqa: F403
from tests.integration.openstack_fixtures import *  # noqa: F403

# Cluster API's tests (issue 42) run on a management cluster of their own, in their own
# target (make test-clusters sets KUMO_TEST_CLUSTERS=1): `make test` does not collect them
# at all (deselected, not skipped).
CLUSTERS_ONLY = ["test_capi_lab.py", "test_boot_shim.py"]
collect_ignore = [] if os.environ.get("KUMO_TEST_CLUSTERS") == "1" else CLUSTERS_ONLY


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "clusters: Cluster API on the lab's CAPI management cluster (make test-clusters)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test here is an integration test. Those marked ``long`` (bigger fleets,
    longer windows of a check ``make test`` keeps small) are deselected, not skipped,
    unless KUMO_TEST_LONG=1 (``make test-long``)."""
    for item in items:
        item.add_marker(pytest.mark.integration)
    if os.environ.get("KUMO_TEST_LONG") == "1":
        return
    long = [item for item in items if item.get_closest_marker("long")]
    if long:
        config.hook.pytest_deselected(items=long)
        items[:] = [item for item in items if not item.get_closest_marker("long")]


@pytest.fixture(scope="session", autouse=True)
def markers_of_the_lab_cluster(request: pytest.FixtureRequest) -> Iterator[None]:
    """Markers the tests write or read by Kumo's own functions name the lab's cluster,
    as the suite's Kumo does (the test process is not ``kumo run``: nothing else sets it).
    A session of Cluster API tests only (make test-clusters) does not start the main lab."""
    if all(item.get_closest_marker("clusters") for item in request.session.items):
        yield
        return
    request.getfixturevalue("kube_env")
    markers.set_cluster(cluster_id())
    yield
    markers.set_cluster(None)

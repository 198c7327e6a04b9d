"""Integration fixtures: the real local kube-apiserver, the real local OpenStack, Kumo.

Everything here talks to real servers on 127.0.0.1; the fixtures start them when
they are not running (dev/kube/up.sh, dev/openstack/lab.sh up).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kumo.ports import markers
from tests.integration.helpers import cluster_id
from tests.integration.kube_fixtures import *  # noqa: F403
from tests.integration.kumo_fixtures import *  # noqa: F403
from tests.integration.openstack_fixtures import *  # noqa: F403


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session", autouse=True)
def markers_of_the_lab_cluster(kube_env: KubeEnv) -> Iterator[None]:  # noqa: F405
    """Markers the tests write or read by Kumo's own functions name the lab's cluster,
    as the suite's Kumo does (the test process is not ``kumo run``: nothing else sets it)."""
    markers.set_cluster(cluster_id())
    yield
    markers.set_cluster(None)

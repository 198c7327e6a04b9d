"""Integration fixtures: the real local kube-apiserver, the real local OpenStack, Kumo.

Everything here talks to real servers on 127.0.0.1; the fixtures start them when
they are not running (dev/kube/up.sh, dev/openstack/lab.sh up).
"""

from __future__ import annotations

import pytest

from tests.integration.kube_fixtures import *  # noqa: F403
from tests.integration.kumo_fixtures import *  # noqa: F403
from tests.integration.openstack_fixtures import *  # noqa: F403


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.integration)

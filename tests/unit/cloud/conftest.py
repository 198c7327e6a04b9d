"""Fixtures of the cloud adapter's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests_mock as rm

from kumo.cloud import credentials
from kumo.cloud.adapter import OpenStackCloud
from tests.unit.cloud.rest import SOURCE, stub_discovery, stub_keystone


@pytest.fixture
def cloud(requests_mock: rm.Mocker) -> Iterator[OpenStackCloud]:
    """An OpenStackCloud authenticated against recorded Keystone responses."""
    stub_keystone(requests_mock)
    stub_discovery(requests_mock)
    conn = credentials.connect(SOURCE)
    yield OpenStackCloud(conn, concurrency=2, rate=1000.0)
    conn.close()

"""The per-service cloud metrics (cloud/telemetry.py): the operation template, what the
real connection's requests record, errors and waits by the classifier, the bucket's
waits, watch listings, and the cap on the label set."""

from __future__ import annotations

import asyncio
import itertools
import uuid

import pytest
import requests_mock as rm
from prometheus_client import REGISTRY

from kumo.cloud import credentials, telemetry
from kumo.cloud.adapter import OpenStackCloud
from kumo.cloud.ratelimit import TokenBucket
from tests.unit.cloud.rest import NOVA, OCTAVIA, SOURCE, recorded, stub_discovery, stub_keystone
from tests.unit.cloud.test_adapter import GONE_ID, LB_ID, SERVER_ID, fails, run


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def series(name: str) -> int:
    """How many label sets a family has (every sample name of it counted once)."""
    for family in REGISTRY.collect():
        if family.name == name.removesuffix("_total"):
            return len({tuple(sorted(s.labels.items())) for s in family.samples})
    return 0


@pytest.mark.parametrize(
    ("method", "url", "template"),
    [
        ("GET", f"{NOVA}/servers/{SERVER_ID}", "GET /servers/{id}"),
        ("get", f"{NOVA}/servers/detail?tags=kumo&changes-since=x", "GET /servers/detail"),
        ("POST", f"{NOVA}/servers", "POST /servers"),
        ("POST", f"{NOVA}/servers/{SERVER_ID}/action", "POST /servers/{id}/action"),
        ("GET", f"{NOVA}/flavors/m1.small", "GET /flavors/{id}"),
        ("GET", f"{NOVA}/os-keypairs/my-key", "GET /os-keypairs/{id}"),
        ("PUT", f"{OCTAVIA}/v2.0/lbaas/loadbalancers/{LB_ID}", "PUT /lbaas/loadbalancers/{id}"),
        ("GET", "http://n:9696/v2.0/security-groups.json?project_id=x", "GET /security-groups"),
        ("GET", "http://c:8776/v3/0a1b2c3d4e5f/volumes/detail", "GET /volumes/detail"),
        ("GET", "http://d:9001/v2/zones/z-1/recordsets/r-2", "GET /zones/{id}/recordsets/{id}"),
        ("POST", "http://k:5000/v3/auth/tokens", "POST /auth/tokens"),
        ("GET", "http://127.0.0.1:8774/v2.1", "GET /"),
    ],
)
def test_the_operation_is_a_template_without_ids_names_versions_or_query(
    method: str, url: str, template: str
) -> None:
    assert telemetry.operation(method, url) == template


def test_a_request_is_counted_by_service_operation_and_status_class(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    requests_mock.get(
        f"{NOVA}/servers/{GONE_ID}", status_code=404, json=recorded("nova_server_not_found.json")
    )
    labels = {"service": "compute", "operation": "GET /servers/{id}"}
    before = sample("kumo_cloud_requests_total", **labels, status_class="4xx")
    buckets = sample("kumo_cloud_request_seconds_count", **labels)
    errors = sample("kumo_cloud_errors_total", service="compute", category="NotFound")

    assert run(cloud.get_server(GONE_ID)) is None

    assert sample("kumo_cloud_requests_total", **labels, status_class="4xx") == before + 1
    assert sample("kumo_cloud_request_seconds_count", **labels) == buckets + 1
    assert sample("kumo_cloud_request_seconds_bucket", **labels, le="+Inf") >= 1
    assert sample("kumo_cloud_errors_total", service="compute", category="NotFound") == errors + 1


def test_the_token_request_counts_as_identity(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """The fixture authenticated already: its token POST went through the hook."""
    requests_mock.get(
        f"{NOVA}/servers/{SERVER_ID}", status_code=404, json=recorded("nova_server_not_found.json")
    )
    run(cloud.get_server(SERVER_ID))
    assert (
        sample(
            "kumo_cloud_requests_total",
            service="identity",
            operation="POST /auth/tokens",
            status_class="2xx",
        )
        >= 1
    )


def test_a_409_is_a_busy_wait_of_its_service(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    requests_mock.put(
        f"{OCTAVIA}/lbaas/loadbalancers/{LB_ID}",
        status_code=409,
        json=recorded("octavia_pending_update_409.json"),
    )
    busy = sample("kumo_cloud_waits_total", service="load-balancer", reason="busy")
    errors = sample("kumo_cloud_errors_total", service="load-balancer", category="CloudBusy")
    fails(cloud.update_load_balancer(LB_ID, description="new"))
    assert sample("kumo_cloud_waits_total", service="load-balancer", reason="busy") == busy + 1
    assert (
        sample("kumo_cloud_errors_total", service="load-balancer", category="CloudBusy")
        == errors + 1
    )


def test_a_429_is_a_rate_limit_wait(cloud: OpenStackCloud, requests_mock: rm.Mocker) -> None:
    requests_mock.get(
        f"{NOVA}/servers/detail",
        status_code=429,
        json=recorded("nova_over_limit_429.json"),
        headers={"Retry-After": "7"},
    )
    before = sample("kumo_cloud_waits_total", service="compute", reason="rate_limited")
    fails(cloud.list_servers_since(None))
    assert sample("kumo_cloud_waits_total", service="compute", reason="rate_limited") == before + 1


def test_the_token_bucket_says_when_it_made_a_call_wait() -> None:
    now = [0.0]

    async def sleep(seconds: float) -> None:
        now[0] += seconds

    async def two() -> tuple[bool, bool]:
        bucket = TokenBucket(1.0, burst=1, clock=lambda: now[0], sleep=sleep)
        return await bucket.acquire(), await bucket.acquire()

    assert asyncio.run(two()) == (False, True)


def test_a_throttled_call_is_counted(requests_mock: rm.Mocker) -> None:
    stub_keystone(requests_mock)
    stub_discovery(requests_mock)
    requests_mock.get(
        f"{NOVA}/servers/{SERVER_ID}", status_code=404, json=recorded("nova_server_not_found.json")
    )
    conn = credentials.connect(SOURCE)
    cloud = OpenStackCloud(conn, concurrency=1, rate=1000.0)
    cloud._bucket = TokenBucket(1000.0, burst=1)
    before = sample("kumo_cloud_waits_total", service="any", reason="throttled")

    async def three() -> None:
        await asyncio.gather(*(cloud.get_server(SERVER_ID) for _ in range(3)))

    run(three())
    conn.close()
    assert sample("kumo_cloud_waits_total", service="any", reason="throttled") >= before + 1


def test_many_distinct_urls_keep_the_series_bounded(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """A thousand IDs are one operation; a thousand unknown paths stop at the cap."""
    requests_mock.get(rm.ANY, status_code=404, json=recorded("nova_server_not_found.json"))
    run(cloud.get_server(str(uuid.uuid4())))
    start = series("kumo_cloud_requests_total")

    async def many() -> None:
        for _ in range(500):
            await cloud.get_server(str(uuid.uuid4()))

    run(many())
    assert series("kumo_cloud_requests_total") == start, "IDs never make a series"

    recorder = telemetry.Recorder(cloud.conn.session)
    words = sorted(telemetry.WORDS)
    names = {
        recorder.operation("capped", "GET", f"{NOVA}/{a}/{b}/{i}")
        for i, (a, b) in enumerate(itertools.product(words, words))
    }
    assert len(names) == telemetry.MAX_OPERATIONS + 1
    assert telemetry.OTHER in names

"""Endpoint overrides that send one clouds.yaml entry's services through the fault proxy."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chaos.routing import (
    SERVICES,
    override_key,
    override_url,
    proxied_entry,
    service_endpoints,
    upstream_of,
)

PROXY = "http://127.0.0.1:40001"


@pytest.mark.parametrize(
    ("service_type", "endpoint", "expected"),
    [
        ("compute", "http://127.0.0.1:8774/v2.1", f"{PROXY}/v2.1"),
        ("compute", "http://127.0.0.1:8774/v2.1/", f"{PROXY}/v2.1"),
        ("compute", "http://127.0.0.1:8774", f"{PROXY}/v2.1"),
        ("network", "http://127.0.0.1:9696/v2.0", f"{PROXY}/v2.0"),
        ("network", "http://127.0.0.1:9696/", f"{PROXY}/v2.0"),
        ("load-balancer", "http://127.0.0.1:9876/v2", PROXY),  # the root: see ROOT_ONLY
        ("image", "http://127.0.0.1:9292/v2/", f"{PROXY}/v2"),
        ("dns", "http://127.0.0.1:9001/v2", f"{PROXY}/v2"),
        ("dns", "http://127.0.0.1:9001/", PROXY),  # unversioned: the SDK discovers
    ],
)
def test_override_keeps_the_path_and_adds_the_version_the_sdk_would(
    service_type: str, endpoint: str, expected: str
) -> None:
    assert override_url(service_type, endpoint, PROXY) == expected


def test_override_keys_are_openstacksdk_spelling() -> None:
    assert override_key("load-balancer") == "load_balancer_endpoint_override"
    assert override_key("compute") == "compute_endpoint_override"


def test_upstream_is_scheme_host_port() -> None:
    assert upstream_of("http://127.0.0.1:8774/v2.1") == "http://127.0.0.1:8774"


def test_proxied_entry_adds_overrides_and_leaves_auth_alone() -> None:
    entry = {"region_name": "tokyo1", "auth": {"auth_url": "http://127.0.0.1:5000/v3"}}
    endpoints = {"compute": "http://127.0.0.1:8774/v2.1", "dns": "http://127.0.0.1:9001/v2"}
    proxies = {"compute": "http://127.0.0.1:40001", "dns": "http://127.0.0.1:40002"}
    got = proxied_entry(entry, endpoints, proxies)
    assert got == {
        **entry,
        "compute_endpoint_override": "http://127.0.0.1:40001/v2.1",
        "dns_endpoint_override": "http://127.0.0.1:40002/v2",
    }
    assert "compute_endpoint_override" not in entry  # a copy


def test_overrides_are_what_openstacksdk_uses() -> None:
    """The keys really route: openstacksdk's config resolves them per service."""
    import openstack.config

    entry: dict[str, Any] = {
        "auth_type": "none",
        "auth": {},
        **{
            override_key(t): override_url(t, f"http://127.0.0.1:{9000 + i}", PROXY)
            for i, t in enumerate(SERVICES)
        },
    }
    region = openstack.config.OpenStackConfig(
        config_files=[], vendor_files=[], secure_files=[], load_envvars=False
    ).get_one(**entry)
    assert region.get_endpoint("load-balancer") == PROXY
    assert region.get_endpoint("compute") == f"{PROXY}/v2.1"
    assert region.get_endpoint("dns") == PROXY


def test_service_endpoints_ask_each_proxy() -> None:
    class Proxy:
        def __init__(self, url: str) -> None:
            self.url = url

        def get_endpoint(self) -> str:
            return self.url

    class Conn:
        compute = Proxy("http://127.0.0.1:8774/v2.1")
        network = Proxy("http://127.0.0.1:9696/v2.0")
        image = Proxy("http://127.0.0.1:9292/v2/")
        load_balancer = Proxy("http://127.0.0.1:9876/v2.0")
        dns = Proxy("http://127.0.0.1:9001/v2")

    assert service_endpoints(Conn())["load-balancer"] == "http://127.0.0.1:9876/v2.0"
    assert set(service_endpoints(Conn())) == set(SERVICES)

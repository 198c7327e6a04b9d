"""Smoke tests of the local OpenStack lab (dev/openstack), through openstacksdk.

Why: Kumo's integration tests rely on the lab behaving like a real cloud — servers with
user data, metadata and tags go ACTIVE; anti-affinity is enforced over the 3 fake
compute hosts (a 4th hard member fails with "No valid host", a soft one is accepted);
projects are isolated; quotas are what the tests expect. Every test waits by polling a
condition with a timeout and deletes what it created, even when it fails.
"""

from __future__ import annotations

import base64
import contextlib
import uuid

import pytest
from openstack import exceptions as os_exc

from tests.integration.polling import wait_until

pytestmark = pytest.mark.integration

IMAGE = "centos79"
FLAVOR = "m1.tiny"
NETWORK = "kumo-demo-net"
TIMEOUT = 180


def _name(kind: str) -> str:
    return f"kumo-labtest-{kind}-{uuid.uuid4().hex[:8]}"


class Servers:
    """Creates servers in one project and deletes all of them (and a group) at exit."""

    def __init__(self, conn):
        self.conn = conn
        self.ids: list[str] = []
        self.groups: list[str] = []
        self.image = conn.image.find_image(IMAGE, ignore_missing=False)
        self.flavor = conn.compute.find_flavor(FLAVOR, ignore_missing=False)
        self.network = conn.network.find_network(NETWORK, ignore_missing=False)

    def group(self, policy: str):
        sg = self.conn.compute.create_server_group(name=_name("sg"), policy=policy)
        self.groups.append(sg.id)
        return sg

    def create(self, group=None, **kwargs):
        attrs = dict(
            name=_name("vm"),
            image_id=self.image.id,
            flavor_id=self.flavor.id,
            networks=[{"uuid": self.network.id}],
        )
        if group is not None:
            attrs["scheduler_hints"] = {"group": group.id}
        attrs.update(kwargs)
        server = self.conn.compute.create_server(**attrs)
        self.ids.append(server.id)
        return server

    def wait(self, server, status="ACTIVE"):
        failures = ["ERROR"] if status != "ERROR" else ["ACTIVE"]
        return self.conn.compute.wait_for_server(
            server, status=status, failures=failures, interval=1, wait=TIMEOUT
        )

    def cleanup(self):
        for sid in self.ids:
            with contextlib.suppress(os_exc.NotFoundException):
                self.conn.compute.delete_server(sid)
        for sid in self.ids:
            wait_until(
                f"server {sid} to be deleted",
                lambda sid=sid: self.conn.compute.find_server(sid, ignore_missing=True) is None,
                TIMEOUT,
                tolerate=(),
            )
        for gid in self.groups:
            with contextlib.suppress(os_exc.NotFoundException):
                self.conn.compute.delete_server_group(gid)


@pytest.fixture
def demo_servers(demo_conn):
    servers = Servers(demo_conn)
    try:
        yield servers
    finally:
        servers.cleanup()


def test_server_with_user_data_metadata_tags(demo_servers, admin_conn):
    script = "#!/bin/sh\necho hello from kumo\n"
    server = demo_servers.create(
        user_data=base64.b64encode(script.encode()).decode(),
        metadata={"kumo.dev:owner": "smoke-test"},
        tags=["kumo", "smoke"],
    )
    server = demo_servers.wait(server)
    assert server.status == "ACTIVE"
    assert server.metadata == {"kumo.dev:owner": "smoke-test"}
    assert sorted(server.tags) == ["kumo", "smoke"]
    ips = [a["addr"] for net in server.addresses.values() for a in net]
    assert ips and ips[0].startswith("10.10."), server.addresses
    as_admin = admin_conn.compute.get_server(server.id)
    assert base64.b64decode(as_admin.user_data).decode() == script
    assert as_admin.compute_host.startswith("fake-compute-")


def test_hard_anti_affinity_uses_three_hosts_and_rejects_a_fourth(demo_servers, admin_conn):
    group = demo_servers.group("anti-affinity")
    members = [demo_servers.create(group=group) for _ in range(3)]
    members = [demo_servers.wait(s) for s in members]
    hosts = {admin_conn.compute.get_server(s.id).compute_host for s in members}
    assert len(hosts) == 3, hosts
    fourth = demo_servers.wait(demo_servers.create(group=group), status="ERROR")
    assert "No valid host" in (fourth.fault or {}).get("message", ""), fourth.fault


def test_soft_anti_affinity_accepts_a_fourth_member(demo_servers):
    group = demo_servers.group("soft-anti-affinity")
    members = [demo_servers.create(group=group) for _ in range(4)]
    for server in members:
        assert demo_servers.wait(server).status == "ACTIVE"


def test_projects_are_isolated(demo_servers, other_conn):
    server = demo_servers.wait(demo_servers.create())
    assert server.id not in {s.id for s in other_conn.compute.servers()}
    assert other_conn.compute.find_server(server.id, ignore_missing=True) is None
    with pytest.raises(os_exc.NotFoundException):
        other_conn.compute.get_server(server.id)


def test_quotas(admin_conn):
    def instances(project):
        pid = admin_conn.identity.find_project(project, ignore_missing=False).id
        return admin_conn.compute.get_quota_set(pid).instances

    assert instances("kumo-other") == 10  # Nova's default: quota errors stay real
    assert instances("kumo-demo") >= 1000
    assert instances("kumo-bench") >= 1000


def test_catalog_is_local_and_in_tokyo1(demo_conn):
    for service in ("compute", "image", "network", "placement"):
        endpoint = demo_conn.endpoint_for(service, interface="public", region_name="tokyo1")
        assert endpoint and endpoint.startswith("http://127.0.0.1:"), (service, endpoint)
    assert demo_conn.image.find_image(IMAGE) is not None
    assert demo_conn.compute.find_flavor("n3-1vcpu-2gb") is not None
    public = demo_conn.network.find_network("public")
    assert public is not None and public.is_router_external


def test_networking_kinds_have_what_they_need(admin_conn):
    """Issue 22's lab part: Neutron's router and port-security extensions, the external
    network's floating-IP range in TEST-NET-3 (203.0.113.0/24, documentation space, never
    routed), and the big projects' quotas for groups, rules, floating IPs and routers."""
    import ipaddress

    aliases = {e.alias for e in admin_conn.network.extensions()}
    assert {"router", "port-security", "security-group"} <= aliases, aliases
    public = admin_conn.network.find_network("public", ignore_missing=False)
    assert public.is_router_external
    subnets = list(admin_conn.network.subnets(network_id=public.id))
    assert subnets, "the external network has no subnet"
    testnet = [
        ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")
    ]
    for subnet in subnets:
        assert any(ipaddress.ip_network(subnet.cidr).subnet_of(t) for t in testnet), subnet.cidr
        for pool in subnet.allocation_pools:
            assert ipaddress.ip_address(pool["start"]) in ipaddress.ip_network(subnet.cidr)
    for project in ("kumo-demo", "kumo-bench"):
        pid = admin_conn.identity.find_project(project, ignore_missing=False).id
        q = admin_conn.network.get_quota(pid)
        assert q.security_groups >= 200 and q.security_group_rules >= 2000, project
        assert q.floating_ips >= 200 and q.routers >= 50, project

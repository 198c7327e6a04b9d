"""Smoke tests of the lab's Octavia and Designate, through openstacksdk.

Why: Kumo's load-balancer and DNS controllers assume that objects really walk
PENDING_* -> ACTIVE, that Octavia answers 409 while a load balancer is PENDING_*, that a
cascade delete removes the whole tree, and that projects are isolated. These tests check
exactly that against the running lab (dev/openstack/lab.sh up), so a broken lab fails
here rather than as a mysterious operator test failure. The connections (demo_conn,
other_conn, admin_conn) come from openstack_fixtures.py via conftest.py.

Every wait polls a condition with a deadline; every created object is removed in a
finaliser, also when an assertion fails.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from openstack import exceptions as os_exc

from tests.integration.polling import wait_until

pytestmark = pytest.mark.integration

LB_TIMEOUT = 120.0
DNS_TIMEOUT = 120.0
POLL = 0.25
DEMO_SUBNET = "kumo-demo-subnet"


def retry_conflict(call: Callable[[], Any], timeout: float = LB_TIMEOUT) -> Any:
    """Run ``call``, retrying while Octavia answers 409 (parent load balancer PENDING_*)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except os_exc.ConflictException:
            if time.monotonic() > deadline:
                raise
            time.sleep(POLL)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# --------------------------------------------------------------------------- Octavia


def lb_status(conn, lb_id: str) -> str:
    """provisioning_status of a load balancer, or "GONE" once Octavia forgot it."""
    try:
        return conn.load_balancer.get_load_balancer(lb_id).provisioning_status
    except os_exc.NotFoundException:
        return "GONE"


def wait_lb(conn, lb_id: str, want: str = "ACTIVE", timeout: float = LB_TIMEOUT) -> None:
    def probe() -> bool:
        status = lb_status(conn, lb_id)
        if status == "ERROR" and want != "ERROR":
            pytest.fail(f"load balancer {lb_id} went ERROR")
        return status == want or (want == "GONE" and status == "DELETED")

    wait_until(f"load balancer {lb_id} {want}", probe, timeout, POLL, tolerate=())


def delete_lb_tree(conn, lb_id: str) -> None:
    """Cascade-delete a load balancer (waiting out PENDING_*) and wait until it is gone."""

    def settled() -> bool:
        return not lb_status(conn, lb_id).startswith("PENDING_")

    wait_until(f"load balancer {lb_id} not PENDING_*", settled, LB_TIMEOUT, POLL, tolerate=())
    if lb_status(conn, lb_id) in ("GONE", "DELETED"):
        return
    retry_conflict(lambda: conn.load_balancer.delete_load_balancer(lb_id, cascade=True))
    wait_lb(conn, lb_id, "GONE")


@pytest.fixture
def demo_subnet(demo_conn):
    subnet = demo_conn.network.find_subnet(DEMO_SUBNET, ignore_missing=True)
    assert subnet is not None, f"subnet {DEMO_SUBNET} missing: is the demo cloud set up?"
    return subnet


@pytest.fixture
def lb_factory(demo_conn, demo_subnet) -> Iterator[Callable[..., Any]]:
    """Create load balancers in kumo-demo; all of them are cascade-deleted at teardown."""
    created: list[str] = []

    def create(**kwargs: Any):
        lb = demo_conn.load_balancer.create_load_balancer(
            name=unique("kumo-smoke-lb"), vip_subnet_id=demo_subnet.id, **kwargs
        )
        created.append(lb.id)
        return lb

    yield create
    errors = []
    for lb_id in created:
        try:
            delete_lb_tree(demo_conn, lb_id)
        except BaseException as exc:  # keep cleaning the others
            errors.append(f"{lb_id}: {exc!r}")
    assert not errors, f"cleanup failed: {errors}"


def test_lb_tree_goes_active_and_cascade_deletes(demo_conn, demo_subnet, lb_factory):
    lbs = demo_conn.load_balancer
    t0 = time.monotonic()
    lb = lb_factory(description="kumo smoke test")
    assert lb.provisioning_status == "PENDING_CREATE"

    def make_listener():
        return lbs.create_listener(
            name=unique("kumo-smoke-listener"),
            loadbalancer_id=lb.id,
            protocol="HTTP",
            protocol_port=80,
        )

    # While the LB is PENDING_CREATE, Octavia answers 409 to children (Kumo relies on
    # that); the LB may be ACTIVE already, so a 409 is expected but not required.
    try:
        listener, saw_409 = make_listener(), False
    except os_exc.ConflictException:
        listener, saw_409 = None, True
    wait_lb(demo_conn, lb.id)
    t_lb = time.monotonic() - t0
    if listener is None:
        listener = retry_conflict(make_listener)
    wait_lb(demo_conn, lb.id)
    pool = retry_conflict(
        lambda: lbs.create_pool(
            name=unique("kumo-smoke-pool"),
            listener_id=listener.id,
            protocol="HTTP",
            lb_algorithm="ROUND_ROBIN",
        )
    )
    wait_lb(demo_conn, lb.id)
    for address in ("10.10.0.101", "10.10.0.102"):
        retry_conflict(
            lambda a=address: lbs.create_member(
                pool, address=a, protocol_port=8080, subnet_id=demo_subnet.id
            )
        )
        wait_lb(demo_conn, lb.id)
    retry_conflict(
        lambda: lbs.create_health_monitor(
            pool_id=pool.id, type="HTTP", delay=5, timeout=3, max_retries=3, url_path="/healthz"
        )
    )
    wait_lb(demo_conn, lb.id)
    t_tree = time.monotonic() - t0

    # Everything in the tree is ACTIVE.
    assert lbs.get_listener(listener.id).provisioning_status == "ACTIVE"
    assert lbs.get_pool(pool.id).provisioning_status == "ACTIVE"
    members = list(lbs.members(pool))
    assert sorted(m.address for m in members) == ["10.10.0.101", "10.10.0.102"]
    assert all(m.provisioning_status == "ACTIVE" for m in members)
    monitors = list(lbs.health_monitors(pool_id=pool.id))
    assert len(monitors) == 1 and monitors[0].provisioning_status == "ACTIVE"

    t1 = time.monotonic()
    delete_lb_tree(demo_conn, lb.id)
    t_delete = time.monotonic() - t1
    with pytest.raises(os_exc.NotFoundException):
        lbs.get_listener(listener.id)
    print(
        f"\n[timing] LB ACTIVE {t_lb:.1f}s; + listener, pool, 2 members, monitor "
        f"{t_tree:.1f}s; cascade delete {t_delete:.1f}s; 409 while PENDING_CREATE: {saw_409}"
    )


def test_lb_in_availability_zone_dev(demo_conn, lb_factory):
    t0 = time.monotonic()
    lb = lb_factory(availability_zone="dev")
    wait_lb(demo_conn, lb.id)
    assert demo_conn.load_balancer.get_load_balancer(lb.id).availability_zone == "dev"
    print(f"\n[timing] LB in zone dev ACTIVE {time.monotonic() - t0:.1f}s")


def test_lb_flavor_large_and_unknown_zone(demo_conn, lb_factory):
    flavor = demo_conn.load_balancer.find_flavor("large", ignore_missing=True)
    assert flavor is not None and flavor.is_enabled, "Octavia flavor `large` missing"
    lb = lb_factory(flavor_id=flavor.id)
    wait_lb(demo_conn, lb.id)
    # An unknown availability zone is refused up front (400), not left PENDING.
    with pytest.raises(os_exc.BadRequestException):
        lb_factory(availability_zone="no-such-zone")


def test_octavia_quotas(admin_conn):
    demo = admin_conn.identity.find_project("kumo-demo", domain_id="default")
    quota = admin_conn.load_balancer.get_quota(demo.id)
    assert quota.load_balancers == 50


# ------------------------------------------------------------------------- Designate


def zone_status(conn, zone_id: str) -> str:
    try:
        return conn.dns.get_zone(zone_id).status
    except os_exc.NotFoundException:
        return "GONE"


@pytest.fixture
def demo_zone(demo_conn) -> Iterator[Any]:
    """A fresh zone owned by kumo-demo, deleted (and waited for) at teardown."""
    zone = demo_conn.dns.create_zone(
        name=f"{unique('kumo-smoke')}.test.", email="admin@kumo-demo.test", ttl=300
    )
    yield zone
    if zone_status(demo_conn, zone.id) != "GONE":
        with contextlib.suppress(os_exc.NotFoundException):
            demo_conn.dns.delete_zone(zone.id)
    wait_until(
        f"zone {zone.name} deleted",
        lambda: zone_status(demo_conn, zone.id) == "GONE",
        DNS_TIMEOUT,
        POLL,
        tolerate=(),
    )


def test_zone_and_recordset_go_active(demo_conn, demo_zone):
    dns = demo_conn.dns
    t0 = time.monotonic()
    wait_until(
        f"zone {demo_zone.name} ACTIVE",
        lambda: zone_status(demo_conn, demo_zone.id) == "ACTIVE",
        DNS_TIMEOUT,
        POLL,
        tolerate=(),
    )
    t_zone = time.monotonic() - t0

    t1 = time.monotonic()
    rs = dns.create_recordset(
        demo_zone, name=f"www.{demo_zone.name}", type="A", records=["192.0.2.10"], ttl=60
    )

    def rs_status() -> str:
        try:
            return dns.get_recordset(rs, demo_zone).status
        except os_exc.NotFoundException:
            return "GONE"

    wait_until("recordset ACTIVE", lambda: rs_status() == "ACTIVE", DNS_TIMEOUT, POLL, tolerate=())
    t_rs = time.monotonic() - t1
    got = dns.get_recordset(rs, demo_zone)
    assert got.records == ["192.0.2.10"] and got.type == "A"

    dns.delete_recordset(rs, demo_zone)
    wait_until("recordset deleted", lambda: rs_status() == "GONE", DNS_TIMEOUT, POLL, tolerate=())
    print(f"\n[timing] zone ACTIVE {t_zone:.1f}s; A recordset ACTIVE {t_rs:.1f}s")


def test_projects_cannot_see_each_others_zones(demo_conn, other_conn, demo_zone):
    other_names = {z.name for z in other_conn.dns.zones()}
    assert demo_zone.name not in other_names
    assert "kumo-demo.test." not in other_names
    assert "kumo-other.test." in other_names  # created by designate_cloud_setup
    with pytest.raises(os_exc.NotFoundException):
        other_conn.dns.get_zone(demo_zone.id)
    assert demo_zone.name in {z.name for z in demo_conn.dns.zones()}


def test_seed_zones_active(admin_conn):
    for project in ("kumo-demo", "kumo-other", "kumo-bench"):
        zones = list(admin_conn.dns.zones(all_projects=True, name=f"{project}.test."))
        assert len(zones) == 1, f"zone {project}.test. missing"
        assert zones[0].status == "ACTIVE"
        owner = admin_conn.identity.find_project(project, domain_id="default")
        assert zones[0].project_id == owner.id

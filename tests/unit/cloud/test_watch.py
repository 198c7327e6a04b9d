"""CloudWatch over the in-process fakes: what it asks of the cloud, what it reports.

The fakes answer the watch's list calls the way the services do (FakeServers's
``list_servers_since`` has changes-since semantics: deleted servers included, times
from Nova's own clock). The real services are exercised by the integration tests.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from prometheus_client import REGISTRY

from kumo.cloud import model
from kumo.cloud.cache import GONE
from kumo.cloud.services import WATCHERS
from kumo.cloud.services.compute.watch import (
    KeyPairWatcher,
    ServerWatcher,
    format_since,
    next_since,
    server_time,
)
from kumo.cloud.services.dns.watch import ZoneWatcher
from kumo.cloud.services.loadbalancing.watch import LoadBalancerWatcher
from kumo.cloud.services.sharedfs.watch import ShareWatcher
from kumo.cloud.watch import CloudWatch
from kumo.engine.errors import TransientError
from kumo.ports.times import parse_updated
from tests.unit.fakes import FakeServers
from tests.unit.fakes.dns import ZONE_ID, FakeDns
from tests.unit.fakes.keypairs import KEY, OTHER_KEY, FakeKeyPairs
from tests.unit.fakes.loadbalancing import FakeLoadBalancing
from tests.unit.fakes.sharedfs import FakeSharedFS
from tests.unit.waiting import until


class Lists:
    """One project's services for a watch, from the fakes of the ports it serves; a
    service left out answers 503."""

    def __init__(self, *parts: Any) -> None:
        """``parts``: fakes of tests/unit/fakes (a call goes to the first that has it)."""
        self.parts = list(parts)

    def __getattr__(self, name: str) -> Any:
        for part in self.parts:
            if hasattr(part, name):
                return getattr(part, name)

        async def missing(*args: Any) -> Any:
            raise TransientError("ServiceUnavailable", f"{name}: no such service here")

        return missing


class Recorder:
    def __init__(self) -> None:
        self.owners: list[set[str]] = []
        self.duplicated: set[str] = set()
        self.woken: list[set[str]] = []

    def __call__(self, owners: set[str], duplicated: set[str], woken: set[str]) -> None:
        if owners:
            self.owners.append(owners)
        self.duplicated |= duplicated
        if woken:
            self.woken.append(woken)


def refresh(watch: CloudWatch, service: str, full: bool = False) -> None:
    asyncio.run(watch._refresh(watch._services[service], full))


def synced(lists: Lists, clock: Callable[[], float] | None = None) -> tuple[CloudWatch, Recorder]:
    watch = CloudWatch(lists, clock=clock, watchers=WATCHERS)  # type: ignore[arg-type]
    asyncio.run(watch.sync())
    seen = Recorder()
    watch._notify = seen
    return watch, seen


def one_active_server() -> tuple[FakeServers, str, CloudWatch, list[float], Recorder]:
    """Nova with one of Kumo's servers ACTIVE, and a synced watch on a clock the test
    moves (``now[0]``) that reports to the returned recorder."""
    nova = FakeServers()
    server = nova.add_server("vm", tags=model.marker_tags("uid-vm"))
    nova.settle()
    now = [0.0]
    watch, seen = synced(Lists(nova), clock=lambda: now[0])
    return nova, server.id, watch, now, seen


# -- Nova: changes-since -------------------------------------------------------------------------


def test_a_building_server_is_seen_active_by_the_next_incremental_list_not_a_poll() -> None:
    nova = FakeServers()
    server = nova.add_server("vm", tags=model.marker_tags("uid-vm"))
    watch, seen = synced(Lists(nova))
    assert watch.of(ServerWatcher).servers.lookup(server.id).status == "BUILD"  # type: ignore[union-attr]
    nova.calls.clear()

    nova.tick(5)
    nova.settle()
    refresh(watch, "compute")
    assert watch.of(ServerWatcher).servers.lookup(server.id).status == "ACTIVE"  # type: ignore[union-attr]
    assert seen.owners == [{"uid-vm"}]
    assert nova.calls == ["list_servers_since"], "one list for the fleet, no per-server GET"


def test_a_server_reaching_a_host_wakes_the_vm_waiting_for_its_turn() -> None:
    nova = FakeServers()
    server = nova.add_server("vm-a", tags=model.marker_tags("uid-a"))
    watch, seen = synced(Lists(nova))
    watch.of(ServerWatcher).builds.limit = 1

    async def admit(uid: str) -> bool:
        return watch.of(ServerWatcher).builds.admit(uid, watch.of(ServerWatcher).queued_builds())

    assert not asyncio.run(admit("uid-b")), "vm-a is queued in Nova: vm-b waits"
    assert watch.of(ServerWatcher).queued_builds() == 1
    nova.tick(1)
    refresh(watch, "compute")  # nothing moved
    assert seen.woken == []
    nova.tick(5)
    nova.place()
    refresh(watch, "compute")
    assert watch.of(ServerWatcher).servers.lookup(server.id).status == "BUILD"  # type: ignore[union-attr]
    assert seen.owners == [{"uid-a"}]
    assert seen.woken == [{"uid-b"}], "the listing that saw vm-a on a host wakes vm-b"
    assert watch.of(ServerWatcher).queued_builds() == 0, "counted again after the cache changed"
    assert asyncio.run(admit("uid-b"))


def test_a_deleted_server_is_reported_gone_from_changes_since() -> None:
    nova = FakeServers()
    server = nova.add_server("vm", tags=model.marker_tags("uid-vm"))
    nova.settle()
    watch, seen = synced(Lists(nova))
    nova.tick(5)
    asyncio.run(nova.delete_server(server.id))  # someone deletes it; Nova finishes later
    nova.settle()
    assert nova.servers == {}
    refresh(watch, "compute")
    assert watch.of(ServerWatcher).servers.lookup(server.id) is GONE
    assert seen.owners == [{"uid-vm"}]


def test_changes_since_is_asked_from_novas_clock_with_a_margin_for_lagging_nodes() -> None:
    nova = FakeServers()
    nova.node_lag = 8.0  # a compute node stamps changes 8 s behind the API's clock
    server = nova.add_server("vm", tags=model.marker_tags("uid-vm"))
    asked: list[str | None] = []
    real = nova.list_servers_since

    async def spy(since: str | None) -> Any:
        asked.append(since)
        return await real(since)

    nova.list_servers_since = spy  # type: ignore[method-assign]
    watch, _ = synced(Lists(nova))
    nova.tick(10)
    nova.settle()  # ACTIVE, stamped 8 s before Nova's "now"
    refresh(watch, "compute")
    margin = timedelta(seconds=10 + 10)  # the tick, the margin (and under 1 s the call took)
    assert asked[1] in (format_since(nova.now - margin), format_since(nova.now - margin * 1.05)), (
        "from the Date of the previous answer minus the margin — never the local clock"
    )
    assert watch.of(ServerWatcher).servers.lookup(server.id).status == "ACTIVE", (
        "the lagging stamp is not missed"
    )  # type: ignore[union-attr]


def test_next_since_never_goes_back_and_falls_back_to_updated_stamps() -> None:
    t0 = parse_updated("2026-11-01T00:00:00Z")
    assert t0 is not None
    date = server_time("Sun, 01 Nov 2026 00:01:00 GMT")
    assert next_since(None, date, [], skew=30) == t0 + timedelta(seconds=30)
    later = t0 + timedelta(seconds=50)
    assert next_since(later, date, [], skew=30) == later, "never backwards"
    stamped = [model.Server("s", "s", "ACTIVE", updated="2026-11-01T00:02:00Z")]
    assert next_since(None, None, stamped, skew=30) == t0 + timedelta(seconds=90)
    assert next_since(None, date, [], skew=10, took=35) == t0 + timedelta(seconds=15), (
        "an answer that took 35 s may hold a database read from 35 s before its Date"
    )


def test_a_server_deleted_while_a_slow_answer_was_on_its_way_is_not_missed() -> None:
    """Under a mass delete nova-api read its database, then held the answer for 30 s
    (its view asks a queued Neutron). A server deleted in between is in none of the
    answers unless the next one starts before the call began, not at its Date."""
    nova, server_id, watch, now, _ = one_active_server()
    nova.tick(30.0)
    asyncio.run(nova.delete_server(server_id))  # task_state deleting
    refresh(watch, "compute")  # the watch sees it deleting
    listing = nova.list_servers_since

    async def slow(since: str | None) -> Any:
        listed, _ = await listing(since)  # Nova reads its database here...
        nova.tick(5.0)
        nova.settle()  # ...the delete ends 5 s later...
        nova.tick(25.0)
        now[0] += 30.0
        return listed, format_datetime(nova.now, usegmt=True)  # ...and the answer leaves

    nova.list_servers_since = slow  # type: ignore[method-assign]
    refresh(watch, "compute")
    assert watch.of(ServerWatcher).servers.lookup(server_id).status == "DELETING"  # type: ignore[union-attr]
    nova.list_servers_since = listing  # type: ignore[method-assign]
    nova.calls.clear()
    refresh(watch, "compute")
    assert watch.of(ServerWatcher).servers.lookup(server_id) is GONE
    assert "fetch_server" not in nova.calls


def test_an_idle_fleet_costs_one_list_per_interval_and_reports_nothing() -> None:
    nova = FakeServers()
    for i in range(50):
        nova.add_server(f"vm-{i}", tags=model.marker_tags(f"uid-{i}"))
    nova.settle()
    watch, seen = synced(Lists(nova))
    nova.calls.clear()
    for _ in range(5):
        nova.tick(60)
        refresh(watch, "compute")
    assert nova.calls == ["list_servers_since"] * 5
    assert seen.owners == []


def test_foreign_servers_are_not_cached_and_a_removed_marker_is_seen() -> None:
    nova = FakeServers()
    ours = nova.add_server("vm", tags=model.marker_tags("uid-vm"))
    watch, seen = synced(Lists(nova))
    nova.tick(5)
    foreign = nova.add_server("theirs", tags=[])
    nova.servers[ours.id]["metadata"]["edited"] = "1"
    nova._touch(nova.servers[ours.id])
    refresh(watch, "compute")
    assert watch.of(ServerWatcher).servers.lookup(foreign.id) is None, (
        "not Kumo's: unknown, read by ID if named"
    )
    assert seen.owners == [{"uid-vm"}]


def test_two_servers_with_one_marker_are_reported_as_duplicates() -> None:
    nova = FakeServers()
    nova.add_server("vm", tags=model.marker_tags("uid-vm"))
    watch, seen = synced(Lists(nova))
    nova.tick(5)
    nova.add_server("vm", tags=model.marker_tags("uid-vm"))  # a retried create
    refresh(watch, "compute")
    assert seen.duplicated == {"uid-vm"}


def test_a_failing_service_does_not_stop_the_others() -> None:
    nova = FakeServers()
    nova.add_server("vm", tags=model.marker_tags("uid-vm"))
    watch, _ = synced(Lists(nova))  # no Octavia, no Designate in this cloud
    assert watch.of(ServerWatcher).servers.synced
    assert not watch.of(LoadBalancerWatcher).load_balancers.synced, (
        "reads of load balancers go to the API"
    )
    assert watch._services["loadbalancing"].failures == 1


# -- Octavia: a cheap probe, then the whole tree at once ---------------------------------------


def octavia_with_pool() -> tuple[FakeLoadBalancing, str, str]:
    octavia = FakeLoadBalancing()
    fake = octavia.add_lb(model.marker_tags("uid-lb"))
    asyncio.run(octavia.create_listener(fake.lb.id, name="l", protocol="http", port=80, tags=[]))
    fake.lb = model.LoadBalancer(fake.lb.id, "lb", "ACTIVE", "ONLINE", "10.9.0.5", fake.lb.tags)
    (listener_id,) = fake.listeners
    asyncio.run(octavia.create_pool(listener_id, name="p", protocol="http", tags=[]))
    fake.lb = model.LoadBalancer(fake.lb.id, "lb", "ACTIVE", "ONLINE", "10.9.0.5", fake.lb.tags)
    (pool_id,) = fake.pools
    return octavia, fake.lb.id, pool_id


def test_an_unchanged_octavia_costs_one_probe() -> None:
    octavia, _, _ = octavia_with_pool()
    watch, seen = synced(Lists(octavia))
    octavia.calls.clear()
    refresh(watch, "loadbalancing")
    refresh(watch, "loadbalancing")
    assert octavia.calls == ["load_balancer_versions"] * 2
    assert seen.owners == []


def test_a_member_removed_by_hand_reaches_the_load_balancers_owner() -> None:
    octavia, lb_id, pool_id = octavia_with_pool()
    octavia.add_member(pool_id, "vm", "10.0.0.5", 8080)
    watch, seen = synced(Lists(octavia))
    (pool,) = [p for p in watch.of(LoadBalancerWatcher).pools.items() if p.id == pool_id]
    assert pool.lb_id == lb_id and len(pool.member_ids) == 1
    (member_id,) = pool.member_ids
    octavia.remove_member_out_of_band(pool_id, member_id)
    octavia.calls.clear()
    refresh(watch, "loadbalancing")
    assert octavia.calls == ["load_balancer_versions", "fetch_load_balancer_tree"]
    assert seen.owners == [{"uid-lb"}], "the pool has no marker: its load balancer's owner"
    assert watch.of(LoadBalancerWatcher).pools.lookup(pool_id).member_ids == []  # type: ignore[union-attr]


def test_a_pending_load_balancer_is_listed_fast_until_it_settles() -> None:
    octavia, lb_id, _ = octavia_with_pool()
    watch, _ = synced(Lists(octavia))
    watch.of(LoadBalancerWatcher).changing(lb_id)
    watch.nudge(LoadBalancerWatcher.service)
    assert (
        watch.of(LoadBalancerWatcher).load_balancers.lookup(lb_id).provisioning_status
        == "PENDING_UPDATE"
    )  # type: ignore[union-attr]
    refresh(watch, "loadbalancing")  # the probe did not move, but Kumo knows it is pending
    assert (
        watch.of(LoadBalancerWatcher).load_balancers.lookup(lb_id).provisioning_status == "ACTIVE"
    )  # type: ignore[union-attr]


def test_a_load_balancer_octavia_still_holds_pending_costs_one_probe_a_pass() -> None:
    """Seconds of PENDING_UPDATE (a batch of 100 members) are probed, not listed: Kumo's
    own change entering PENDING_UPDATE, as the cache expects, lists nothing; the tree is
    read once the probe shows the LB in another state, with all that changed."""
    octavia, lb_id, pool_id = octavia_with_pool()
    watch, seen = synced(Lists(octavia))
    fake = octavia.lbs[lb_id]
    octavia.add_member(pool_id, "vm", "10.0.0.5", 8080)  # Kumo's batch, still applying
    fake.lb = dataclasses.replace(fake.lb, provisioning_status="PENDING_UPDATE")
    watch.of(LoadBalancerWatcher).changing(lb_id)
    watch.nudge(LoadBalancerWatcher.service)
    octavia.calls.clear()
    for _ in range(3):
        refresh(watch, "loadbalancing")
    assert octavia.calls == ["load_balancer_versions"] * 3
    assert watch.of(LoadBalancerWatcher).pools.lookup(pool_id).member_ids == []  # type: ignore[union-attr]
    fake.lb = dataclasses.replace(fake.lb, provisioning_status="ACTIVE")
    refresh(watch, "loadbalancing")
    assert octavia.calls[-1] == "fetch_load_balancer_tree"
    assert (
        watch.of(LoadBalancerWatcher).load_balancers.lookup(lb_id).provisioning_status == "ACTIVE"
    )  # type: ignore[union-attr]
    assert len(watch.of(LoadBalancerWatcher).pools.lookup(pool_id).member_ids) == 1  # type: ignore[union-attr]
    assert seen.owners[-1] == {"uid-lb"}


def test_a_load_balancer_going_pending_that_kumo_did_not_change_is_listed() -> None:
    """Someone else's change (the cache holds the LB ACTIVE) is listed as soon as the
    probe moves, pending or not; so is Kumo's change when the probe shows another state
    than the one the cache expects."""
    octavia, lb_id, pool_id = octavia_with_pool()
    watch, _ = synced(Lists(octavia))
    fake = octavia.lbs[lb_id]
    octavia.add_member(pool_id, "by-hand", "10.0.0.6", 80)
    fake.lb = dataclasses.replace(fake.lb, provisioning_status="PENDING_UPDATE")
    octavia.calls.clear()
    refresh(watch, "loadbalancing")
    assert octavia.calls == ["load_balancer_versions", "fetch_load_balancer_tree"]
    fake.lb = dataclasses.replace(fake.lb, provisioning_status="ACTIVE")
    refresh(watch, "loadbalancing")
    watch.of(LoadBalancerWatcher).changing(lb_id, "PENDING_DELETE")
    watch.nudge(LoadBalancerWatcher.service)
    fake.lb = dataclasses.replace(fake.lb, provisioning_status="PENDING_UPDATE")
    octavia.calls.clear()
    refresh(watch, "loadbalancing")
    assert octavia.calls == ["load_balancer_versions", "fetch_load_balancer_tree"]


# -- Designate: zones first ---------------------------------------------------------------------


def test_only_a_zone_that_changed_is_listed_again() -> None:
    dns = FakeDns()
    description = f"web {model.owner_word('uid-rec')}"
    rs = dns.add("www.kumo-demo.test.", "A", ["10.0.0.1"], description)
    watch, seen = synced(Lists(dns))
    assert watch.of(ZoneWatcher).watches_zone(ZONE_ID)
    dns.calls.clear()
    refresh(watch, "dns")
    assert dns.calls == ["zone_versions"], "nothing moved: no recordset listing"
    dns.delete_out_of_band(rs.id)
    refresh(watch, "dns")
    assert dns.calls == ["zone_versions", "zone_versions", f"list_zone_recordsets:{ZONE_ID}"]
    assert watch.of(ZoneWatcher).recordsets.lookup(rs.id) is GONE
    assert seen.owners == [{"uid-rec"}]


# -- Manila: Kumo's shares, then their rules ----------------------------------------------------


def test_a_rule_removed_by_hand_reaches_the_shares_owner() -> None:
    manila = FakeSharedFS()
    share = asyncio.run(
        manila.create_share(
            name="data",
            size=1,
            protocol="NFS",
            share_type_id=None,
            description=None,
            availability_zone=None,
            metadata=model.marker_metadata("uid-share"),
        )
    )
    rule = manila.add_rule(share.id, "10.0.0.5")
    watch, seen = synced(Lists(manila))
    assert watch.of(ShareWatcher).share_rules[share.id] == [rule]
    refresh(watch, "sharedfs")
    assert seen.owners == [], "nothing moved"
    del manila.rules[share.id][rule.id]
    refresh(watch, "sharedfs")
    assert seen.owners == [{"uid-share"}]
    assert watch.of(ShareWatcher).share_rules[share.id] == []


# -- Nova keypairs: the user's whole list, one call --------------------------------------------


def test_keypairs_cost_one_list_per_interval_and_a_deleted_one_reaches_its_owner() -> None:
    keypairs = FakeKeyPairs()
    keypairs.add("team-a-deploy", f"{KEY} {model.owner_word('uid-kp')}")
    keypairs.add("theirs", f"{OTHER_KEY} me@laptop")
    watch, seen = synced(Lists(keypairs))
    assert {k.name for k in watch.of(KeyPairWatcher).keypairs.items()} == {
        "team-a-deploy",
        "theirs",
    }
    keypairs.calls.clear()
    for _ in range(3):
        refresh(watch, "compute.keypairs")
    assert keypairs.calls == ["fetch_keypairs"] * 3, "one list a pass, whatever the count"
    assert seen.owners == [], "nothing moved"

    keypairs.delete_out_of_band("team-a-deploy")
    refresh(watch, "compute.keypairs")
    assert seen.owners == [{"uid-kp"}]
    assert watch.of(KeyPairWatcher).keypairs.lookup("team-a-deploy") is GONE
    keypairs.delete_out_of_band("theirs")
    refresh(watch, "compute.keypairs")
    assert seen.owners == [{"uid-kp"}], "a keypair that is nobody's concerns no object"


def test_a_keypair_made_again_with_another_key_reaches_its_owner() -> None:
    """A replacement (or an Orphan release) deletes and creates under one name: the
    listing sees the name's key change, which concerns both the old and the new owner."""
    keypairs = FakeKeyPairs()
    keypairs.add("kp", f"{KEY} {model.owner_word('uid-old')}")
    watch, seen = synced(Lists(keypairs))
    keypairs.delete_out_of_band("kp")
    keypairs.add("kp", f"{KEY} {model.owner_word('uid-new')}")
    refresh(watch, "compute.keypairs")
    assert seen.owners == [{"uid-old", "uid-new"}]


def test_leading_again_lists_everything_before_any_reconcile_reads() -> None:
    """A process that lost and regained leadership must not act on what it cached then."""
    nova = FakeServers()
    server = nova.add_server("vm", tags=model.marker_tags("uid-vm"))
    watch = CloudWatch(Lists(nova), watchers=WATCHERS)  # type: ignore[arg-type]

    async def lead_twice() -> list[str]:
        first = asyncio.ensure_future(watch.run(Recorder()))
        await watch.synced()
        first.cancel()  # leadership lost: the controller's stop() cancels and gathers
        await asyncio.gather(first, return_exceptions=True)
        nova.tick(5)
        nova.settle()  # meanwhile the server became ACTIVE
        nova.calls.clear()
        # As the controller leads again: start the run and at once wait for the
        # listing, with no chance for run() to take a step in between.
        second = asyncio.ensure_future(watch.run(Recorder()))
        await watch.synced()
        second.cancel()
        await asyncio.gather(second, return_exceptions=True)
        return list(nova.calls)

    calls = asyncio.run(lead_twice())
    assert calls[0] == "list_servers", "a full listing first"
    assert watch.of(ServerWatcher).servers.lookup(server.id).status == "ACTIVE"  # type: ignore[union-attr]


def test_the_fault_of_a_server_in_error_is_read_once() -> None:
    """Nova's listings leave the fault out; NoValidHost vs others decides the report."""
    nova = FakeServers()
    server = nova.add_server("vm", tags=model.marker_tags("uid-vm"))
    watch, _ = synced(Lists(nova))
    nova.tick(5)
    nova.settle(status="ERROR")
    nova.servers[server.id]["fault"] = "No valid host was found."
    nova.calls.clear()
    refresh(watch, "compute")
    refresh(watch, "compute")
    assert watch.of(ServerWatcher).servers.lookup(server.id).fault == "No valid host was found."  # type: ignore[union-attr]
    assert nova.calls.count("fetch_server") == 1


def test_a_server_gone_without_a_trace_in_changes_since_is_read_by_id() -> None:
    """Deleted while still a build request: Nova never lists it as DELETED."""
    nova = FakeServers()
    server = nova.add_server("vm", tags=model.marker_tags("uid-vm"))
    now = [0.0]
    watch = CloudWatch(Lists(nova), clock=lambda: now[0], watchers=WATCHERS)  # type: ignore[arg-type]
    asyncio.run(watch.sync())
    seen = Recorder()
    watch._notify = seen
    asyncio.run(nova.delete_server(server.id))
    del nova.servers[server.id]  # gone at once, and not in nova.deleted
    watch.of(ServerWatcher).servers.update(
        server.id, lambda s: replace(s, status="DELETING")
    )  # Kumo's delete
    nova.calls.clear()
    refresh(watch, "compute")
    assert "fetch_server" not in nova.calls, "not at once: the listing may still show it"
    now[0] = 6.0
    refresh(watch, "compute")
    assert nova.calls.count("fetch_server") == 1
    assert watch.of(ServerWatcher).servers.lookup(server.id) is GONE
    assert seen.owners == [{"uid-vm"}]


# -- pokes: the cloud's notifications --------------------------------------------------------


def test_a_server_nova_lists_as_deleting_is_not_read_by_id_however_long_it_takes() -> None:
    """A mass delete: Nova shows each server deleting for 30 s and more. The listings
    say so, and they will show its end; no GET per server meanwhile."""
    nova, server_id, watch, now, seen = one_active_server()
    asyncio.run(nova.delete_server(server_id))  # task_state deleting
    watch.of(ServerWatcher).servers.update(
        server_id, lambda s: replace(s, status="DELETING")
    )  # Kumo's delete
    nova.calls.clear()
    for second in range(0, 60, 2):
        now[0] = float(second)
        nova.tick(2.0)
        refresh(watch, "compute")
    assert "fetch_server" not in nova.calls
    assert watch.of(ServerWatcher).servers.lookup(server_id).status == "DELETING"  # type: ignore[union-attr]
    nova.tick(1.0)
    nova.settle()  # Nova is done: changes-since lists it DELETED
    refresh(watch, "compute")
    assert "fetch_server" not in nova.calls
    assert watch.of(ServerWatcher).servers.lookup(server_id) is GONE
    assert {"uid-vm"} in seen.owners


def test_a_delete_no_listing_confirms_is_read_by_id() -> None:
    """Kumo's mark alone says DELETING (a delete Nova dropped): the server is read by
    ID after a while and found as it was, so the finalizer asks again."""
    nova, server_id, watch, now, _ = one_active_server()
    nova.tick(30.0)
    refresh(watch, "compute")  # the next answers leave the unchanged server out
    watch.of(ServerWatcher).servers.update(
        server_id, lambda s: replace(s, status="DELETING")
    )  # Kumo's delete
    nova.calls.clear()
    refresh(watch, "compute")
    assert "fetch_server" not in nova.calls, "not at once: the listing may still show it"
    assert watch.of(ServerWatcher).servers.lookup(server_id).status == "DELETING"  # type: ignore[union-attr]
    now[0] = 6.0
    refresh(watch, "compute")
    assert nova.calls.count("fetch_server") == 1
    assert watch.of(ServerWatcher).servers.lookup(server_id).status == "ACTIVE"  # type: ignore[union-attr]


def test_a_listing_that_took_long_sets_the_pace_while_something_builds() -> None:
    """A slowed API is not listed back to back: the next listing waits twice as long as
    this one took (at least the fast interval)."""
    now = [0.0]
    nova = FakeServers()
    nova.add_server("vm", tags=model.marker_tags("uid-vm"))  # BUILD: fast listings
    watch = CloudWatch(Lists(nova), fast=1.0, clock=lambda: now[0], watchers=WATCHERS)  # type: ignore[arg-type]
    asyncio.run(watch.sync())
    listing = nova.list_servers_since

    async def slow(since: str | None) -> Any:
        now[0] += 2.0  # the answer took 2 s
        return await listing(since)

    nova.list_servers_since = slow  # type: ignore[method-assign]
    now[0] = 100.0
    refresh(watch, "compute")
    assert 102.0 + 4.0 * 0.9 <= watch._services["compute"].next_due <= 102.0 + 4.0 * 1.1
    nova.list_servers_since = listing  # type: ignore[method-assign]
    now[0] = 110.0
    refresh(watch, "compute")
    assert watch._services["compute"].next_due <= 110.0 + 1.1, "a quick answer: fast again"


@pytest.mark.parametrize(
    ("interval", "fast", "pause"),
    [
        (10.0, 1.0, 5.0),  # the pace stops at 5 s, below the idle interval
        (30.0, 8.0, 8.0),  # a fast interval above that cap is still the least pause
    ],
)
def test_a_very_slow_listing_never_leaves_the_watch_blind_long_in_a_transition(
    interval: float, fast: float, pause: float
) -> None:
    """A 40-s answer (Nova in a mass delete) is followed by the next listing 5 s later
    (or the fast interval, if longer), not 80 s or an idle interval later."""
    now = [0.0]
    nova = FakeServers()
    nova.add_server("vm", tags=model.marker_tags("uid-vm"))  # BUILD: fast listings
    watch = CloudWatch(
        Lists(nova), interval=interval, fast=fast, clock=lambda: now[0], watchers=WATCHERS
    )  # type: ignore[arg-type]
    asyncio.run(watch.sync())
    listing = nova.list_servers_since

    async def slow(since: str | None) -> Any:
        now[0] += 40.0
        return await listing(since)

    nova.list_servers_since = slow  # type: ignore[method-assign]
    now[0] = 100.0
    refresh(watch, "compute")
    assert 140.0 + pause * 0.9 <= watch._services["compute"].next_due <= 140.0 + pause * 1.1


def test_a_poke_lists_at_once_instead_of_at_the_next_interval() -> None:
    """A notification (instance.delete.end) makes an idle watch look now: the delete is
    reported long before the 60 s interval would have shown it."""
    nova = FakeServers()
    server = nova.add_server("vm", tags=model.marker_tags("uid-vm"))
    nova.settle()
    watch = CloudWatch(Lists(nova), interval=60.0, fast=0.05, watchers=WATCHERS)  # type: ignore[arg-type]
    seen = asyncio.Event()

    def changed(owners: set[str], duplicated: set[str], woken: set[str]) -> None:
        seen.set()

    async def scenario() -> None:
        running = asyncio.ensure_future(watch.run(changed))
        await watch.synced()
        await nova.delete_server(server.id)
        nova.settle()
        watch.poke("compute")
        try:
            await asyncio.wait_for(seen.wait(), timeout=5)
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)

    asyncio.run(scenario())
    assert watch.of(ServerWatcher).servers.lookup(server.id) is GONE


def test_a_burst_of_pokes_costs_one_listing_per_fast_interval() -> None:
    now = [100.0]
    watch = CloudWatch(Lists(FakeServers()), fast=1.0, clock=lambda: now[0], watchers=WATCHERS)  # type: ignore[arg-type]
    asyncio.run(watch.sync())
    nova = watch._services["compute"]
    assert nova.next_due > 105.0, "idle: the next listing is an interval away"
    now[0] = 100.2
    for _ in range(50):  # fifty notices while a fleet builds
        watch.poke("compute")
    assert nova.next_due == pytest.approx(101.0), "one listing, a fast interval after the last"
    now[0] = 101.0
    refresh(watch, "compute")  # that listing
    assert nova.next_due > 105.0
    now[0] = 103.0
    watch.poke("compute")
    assert nova.next_due == 103.0, "long enough after the last listing: at once"
    watch.poke("no-such-service")  # a notice for a service this watch does not list


def test_a_poke_during_a_listing_is_kept_for_after_it() -> None:
    """The listing in flight may have been answered before the announced change."""
    now = [100.0]
    nova = FakeServers()
    watch = CloudWatch(
        Lists(nova), interval=60.0, fast=1.0, clock=lambda: now[0], watchers=WATCHERS
    )  # type: ignore[arg-type]
    asyncio.run(watch.sync())
    listing = nova.list_servers_since

    async def list_while_poked(since: str | None) -> Any:
        answer = await listing(since)
        now[0] += 0.5
        watch.poke("compute")  # the notice arrives while the answer is on its way
        return answer

    nova.list_servers_since = list_while_poked  # type: ignore[method-assign]
    now[0] = 200.0
    refresh(watch, "compute")
    assert watch._services["compute"].next_due == pytest.approx(201.0)


def test_a_service_whose_listing_hangs_does_not_hold_the_others_back() -> None:
    """Each service lists on its own: while one listing hangs (a Neutron slowed down by
    a fleet's delete), Nova's changes-since listings go on at their pace."""
    nova = FakeServers()
    nova.add_server("vm", tags=model.marker_tags("uid-vm"))
    watch = CloudWatch(Lists(nova), interval=0.02, fast=0.01, watchers=WATCHERS)  # type: ignore[arg-type]
    listings = []
    listing = nova.list_servers_since

    async def counted(since: str | None) -> Any:
        listings.append(since)
        return await listing(since)

    nova.list_servers_since = counted  # type: ignore[method-assign]
    hung = asyncio.Event()

    async def main() -> None:
        task = asyncio.create_task(watch.run(lambda *_: None))
        await watch.synced()
        octavia = watch._services["loadbalancing"].watcher

        async def hang(full: bool) -> Any:
            hung.set()
            await asyncio.Event().wait()  # never answers

        octavia.refresh = hang  # type: ignore[method-assign]
        await until(hung.is_set, "octavia's listing started")
        before = len(listings)
        await until(lambda: len(listings) >= before + 5, "nova listed while octavia hangs")
        watch.close()
        await asyncio.wait_for(task, timeout=5)

    asyncio.run(main())


# -- metrics -------------------------------------------------------------------------------------


def test_each_listing_is_counted_with_its_outcome_and_timed() -> None:
    def value(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    ok = {"service": "compute", "resource": "servers", "outcome": "ok"}
    failed = {"service": "load-balancer", "resource": "loadbalancers", "outcome": "error"}
    timed = {"service": "compute", "resource": "servers"}
    before = (
        value("kumo_watch_listings_total", **ok),
        value("kumo_watch_listings_total", **failed),
        value("kumo_watch_listing_seconds_count", **timed),
    )
    nova = FakeServers()
    watch, _ = synced(Lists(nova))  # one listing per service; Octavia's fails here
    refresh(watch, "compute")
    assert value("kumo_watch_listings_total", **ok) == before[0] + 2
    assert value("kumo_watch_listings_total", **failed) >= before[1] + 1
    assert value("kumo_watch_listing_seconds_count", **timed) == before[2] + 2

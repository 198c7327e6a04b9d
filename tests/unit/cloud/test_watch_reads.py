"""Which servers the cloud watch reads by ID, and when (issue 24): a fleet that builds,
however long its servers wait in Nova's queue, costs listings and no per-server GET; a
queued server deleted without a trace is still noticed.

Nova answers every changes-since listing with every build request (FakeServers does too);
a server its conductor has made an instance that no compute has started yet has no
``updated_at`` and is in no changes-since answer (``FakeServers.schedule``).
"""

from __future__ import annotations

import asyncio
import dataclasses

from kumo.cloud import model
from kumo.cloud.cache import GONE
from kumo.cloud.services import WATCHERS
from kumo.cloud.services.compute.watch import LINGER_QUEUED, ServerWatcher
from kumo.cloud.services.loadbalancing.watch import LoadBalancerWatcher
from kumo.cloud.watch import CloudWatch
from tests.unit.cloud.test_watch import Lists, Recorder, refresh
from tests.unit.fakes import FakeServers
from tests.unit.fakes.loadbalancing import FakeLoadBalancing


def watching(nova: FakeServers) -> tuple[CloudWatch, Recorder, list[float]]:
    """A synced watch on ``nova`` whose clock the test moves (``now[0]``)."""
    now = [0.0]
    watch = CloudWatch(Lists(nova), clock=lambda: now[0], watchers=WATCHERS)  # type: ignore[arg-type]
    asyncio.run(watch.sync())
    seen = Recorder()
    watch._notify = seen
    nova.calls.clear()
    return watch, seen, now


def build_fleet(nova: FakeServers, n: int) -> list[model.Server]:
    return [nova.add_server(f"vm-{i}", tags=model.marker_tags(f"uid-{i}")) for i in range(n)]


def listen(watch: CloudWatch, nova: FakeServers, now: list[float], seconds: int) -> None:
    """The watch lists Nova once a second (its fast interval while servers build)."""
    for _ in range(seconds):
        now[0] += 1.0
        nova.tick(1)
        refresh(watch, "compute")


def test_servers_queued_for_minutes_cost_no_read_by_id() -> None:
    """Turns to build keep servers queued far longer than any threshold: each is in every
    changes-since answer (a build request), so none is read by ID."""
    nova = FakeServers()
    fleet = build_fleet(nova, 50)
    watch, _seen, now = watching(nova)
    listen(watch, nova, now, 300)
    assert set(nova.calls) == {"list_servers_since"}, "listings only, no GET"
    nova.settle()
    listen(watch, nova, now, 1)
    assert all(watch.of(ServerWatcher).servers.lookup(s.id).status == "ACTIVE" for s in fleet)  # type: ignore[union-attr]
    assert "fetch_server" not in nova.calls


def test_a_server_built_on_its_host_for_minutes_costs_no_read_by_id() -> None:
    """On a host its server changes with every step; a slow spawn is no reason to ask
    (the rule it replaces read every BUILD server unchanged for 120 s)."""
    nova = FakeServers()
    build_fleet(nova, 3)
    nova.place()
    watch, _seen, now = watching(nova)
    listen(watch, nova, now, 300)
    assert set(nova.calls) == {"list_servers_since"}


def test_servers_waiting_for_a_build_slot_cost_one_listing_not_a_get_each() -> None:
    """Scheduled, not started: out of every changes-since answer. After ``LINGER_QUEUED``
    one listing of Kumo's servers in BUILD vouches for them all, and again only after
    another ``LINGER_QUEUED``."""
    nova = FakeServers()
    fleet = build_fleet(nova, 30)
    watch, seen, now = watching(nova)
    nova.schedule()
    listen(watch, nova, now, int(LINGER_QUEUED) - 1)
    assert set(nova.calls) == {"list_servers_since"}, "not before LINGER_QUEUED"
    listen(watch, nova, now, 1)
    assert nova.calls.count("list_building_servers") == 1
    listen(watch, nova, now, int(LINGER_QUEUED) - 1)
    assert nova.calls.count("list_building_servers") == 1, "vouched for: not every second"
    listen(watch, nova, now, 1)
    assert nova.calls.count("list_building_servers") == 2
    assert "fetch_server" not in nova.calls
    assert all(watch.of(ServerWatcher).servers.lookup(s.id) is not GONE for s in fleet)
    assert seen.owners == [], "nothing changed"
    nova.settle()
    listen(watch, nova, now, 1)
    assert all(watch.of(ServerWatcher).servers.lookup(s.id).status == "ACTIVE" for s in fleet)  # type: ignore[union-attr]


def test_a_server_deleted_out_of_band_while_queued_is_noticed() -> None:
    """A build request deleted leaves no DELETED trace in changes-since: missing from the
    answers and from the BUILD listing, it is read by ID and found gone."""
    nova = FakeServers()
    kept, doomed = build_fleet(nova, 2)
    watch, seen, now = watching(nova)
    listen(watch, nova, now, 5)
    del nova.servers[doomed.id]  # gone at once, and not in nova.deleted
    listen(watch, nova, now, int(LINGER_QUEUED) - 1)
    assert "fetch_server" not in nova.calls, "not at once: it may be on its way to a host"
    assert watch.of(ServerWatcher).servers.lookup(doomed.id) is not GONE
    listen(watch, nova, now, 1)
    assert nova.calls.count("list_building_servers") == 1
    assert nova.calls.count("fetch_server") == 1, "only the missing one"
    assert watch.of(ServerWatcher).servers.lookup(doomed.id) is GONE
    assert watch.of(ServerWatcher).servers.lookup(kept.id) is not GONE
    assert seen.owners == [{"uid-1"}]
    listen(watch, nova, now, 60)
    assert nova.calls.count("fetch_server") == 1
    assert nova.calls.count("list_building_servers") == 1


def test_a_server_kumo_created_after_a_listing_began_is_not_missing() -> None:
    """Its clock starts when the watch first sees it queued, not at the listing before."""
    nova = FakeServers()
    watch, _seen, now = watching(nova)
    listen(watch, nova, now, 30)
    server = nova.add_server("late", tags=model.marker_tags("uid-late"))
    watch.of(ServerWatcher).servers.put(server)  # Kumo's create put it in the cache
    listen(watch, nova, now, 60)
    assert set(nova.calls) == {"list_servers_since"}


def test_a_listing_that_failed_does_not_count_as_missing() -> None:
    """A Nova outage longer than LINGER_QUEUED: the first answer after it shows the queued
    servers again, and nothing is read."""
    nova = FakeServers()
    build_fleet(nova, 3)
    watch, _seen, now = watching(nova)
    listen(watch, nova, now, 2)
    listing = nova.list_servers_since

    async def down(since: str | None) -> tuple[list[model.Server], str | None]:
        from kumo.engine.errors import TransientError

        raise TransientError("ServiceUnavailable", "nova-api is down")

    nova.list_servers_since = down  # type: ignore[method-assign]
    listen(watch, nova, now, 60)
    nova.list_servers_since = listing  # type: ignore[method-assign]
    listen(watch, nova, now, 1)
    assert "fetch_server" not in nova.calls
    assert "list_building_servers" not in nova.calls


# -- foreign servers an import or an Observe names (issue 24, item 8) -----------------------------


def test_a_foreign_server_read_once_is_kept_fresh_by_the_listings() -> None:
    """The adapter caches the foreign server an observed object named at its first read;
    from then on changes-since shows its edits and its deletion, and the full relist
    lists the project's servers (Kumo's tag would leave it out) — no GET."""
    nova = FakeServers()
    ours = nova.add_server("ours", tags=model.marker_tags("uid-ours"))
    theirs = nova.add_server("legacy", tags=["team-a"])
    other = nova.add_server("unnamed", tags=[])
    nova.settle()
    watch, _seen, now = watching(nova)
    assert watch.of(ServerWatcher).servers.lookup(theirs.id) is None, "not named by anyone yet"
    watch.of(ServerWatcher).servers.apply(
        watch.of(ServerWatcher).servers.begin(), [asyncio.run(nova.get_server(theirs.id))]
    )  # type: ignore[list-item]
    listen(watch, nova, now, 60)
    nova.servers[theirs.id]["description"] = "edited by hand"
    nova._touch(nova.servers[theirs.id])
    listen(watch, nova, now, 1)
    assert watch.of(ServerWatcher).servers.lookup(theirs.id).description == "edited by hand"  # type: ignore[union-attr]
    assert set(nova.calls) == {"list_servers_since"}

    nova.servers[theirs.id]["metadata"]["role"] = "db"  # as a change Nova's updated misses
    refresh(watch, "compute", full=True)
    assert nova.calls[-1] == "list_project_servers"
    assert watch.of(ServerWatcher).servers.lookup(theirs.id).metadata == {"role": "db"}  # type: ignore[union-attr]
    assert watch.of(ServerWatcher).servers.lookup(ours.id) is not None
    assert watch.of(ServerWatcher).servers.lookup(other.id) is None, "still none of Kumo's business"
    assert "fetch_server" not in nova.calls

    asyncio.run(nova.delete_server(theirs.id))
    nova.settle()
    listen(watch, nova, now, 1)
    assert watch.of(ServerWatcher).servers.lookup(theirs.id) is GONE
    refresh(watch, "compute", full=True)
    assert nova.calls[-1] == "list_servers", "no foreign server left: Kumo's tag again"


def test_a_foreign_server_building_takes_no_turn_of_kumos() -> None:
    nova = FakeServers()
    theirs = nova.add_server("legacy", tags=[])
    watch, _seen, _now = watching(nova)
    watch.of(ServerWatcher).servers.apply(
        watch.of(ServerWatcher).servers.begin(), [asyncio.run(nova.get_server(theirs.id))]
    )  # type: ignore[list-item]
    assert watch.of(ServerWatcher).queued_builds() == 0


def foreign_lb_with_pool(octavia: FakeLoadBalancing) -> tuple[str, str]:
    """A load balancer made by hand (no Kumo tag) with a listener and a pool."""
    fake = octavia.add_lb(["team-a"], name="legacy")
    asyncio.run(octavia.create_listener(fake.lb.id, name="l", protocol="http", port=80, tags=[]))
    fake.lb = dataclasses.replace(fake.lb, provisioning_status="ACTIVE")
    (listener_id,) = fake.listeners
    asyncio.run(octavia.create_pool(listener_id, name="p", protocol="http", tags=[]))
    fake.lb = dataclasses.replace(fake.lb, provisioning_status="ACTIVE")
    (pool_id,) = fake.pools
    return fake.lb.id, pool_id


def test_a_foreign_load_balancer_read_once_is_watched_with_its_tree() -> None:
    """What an Observe names: once cached, the probe covers it, its listeners and pools
    are listed with Kumo's, a member removed by hand shows, and its deletion too."""
    octavia = FakeLoadBalancing()
    lb_id, pool_id = foreign_lb_with_pool(octavia)
    octavia.add_member(pool_id, "vm", "10.0.0.5", 8080)
    watch = CloudWatch(Lists(octavia), watchers=WATCHERS)  # type: ignore[arg-type]
    asyncio.run(watch.sync())
    assert watch.of(LoadBalancerWatcher).load_balancers.lookup(lb_id) is None, (
        "not Kumo's, not named yet"
    )
    # What the adapter does at the first read of it:
    lb = asyncio.run(octavia.get_load_balancer(lb_id))
    watch.of(LoadBalancerWatcher).load_balancers.apply(
        watch.of(LoadBalancerWatcher).load_balancers.begin(), [lb]
    )  # type: ignore[list-item]
    watch.of(LoadBalancerWatcher).watch(lb_id)
    assert not watch.of(LoadBalancerWatcher).listeners.answers_for(lb_id), (
        "its children: from the API until listed"
    )
    octavia.calls.clear()
    refresh(watch, "loadbalancing")
    assert octavia.calls == ["load_balancer_versions", "fetch_load_balancer_tree"]
    assert [p.id for p in watch.of(LoadBalancerWatcher).pools.items()] == [pool_id]
    assert len(watch.of(LoadBalancerWatcher).pools.lookup(pool_id).member_ids) == 1  # type: ignore[union-attr]
    refresh(watch, "loadbalancing")
    assert octavia.calls[-1] == "load_balancer_versions", "idle: one probe"

    (member_id,) = watch.of(LoadBalancerWatcher).pools.lookup(pool_id).member_ids  # type: ignore[union-attr]
    octavia.remove_member_out_of_band(pool_id, member_id)
    refresh(watch, "loadbalancing")
    assert watch.of(LoadBalancerWatcher).pools.lookup(pool_id).member_ids == []  # type: ignore[union-attr]
    octavia.delete_out_of_band(lb_id)
    refresh(watch, "loadbalancing")
    assert watch.of(LoadBalancerWatcher).load_balancers.lookup(lb_id) is GONE
    assert watch.of(LoadBalancerWatcher).foreign() == frozenset()


def test_a_failed_check_on_missing_servers_keeps_what_the_listing_found() -> None:
    """The BUILD listing fails (a 5xx): the changes-since answer's news is still
    reported, and the check is made again at the next refresh."""
    nova = FakeServers()
    kept, doomed = build_fleet(nova, 2)
    watch, seen, now = watching(nova)
    del nova.servers[doomed.id]
    listen(watch, nova, now, int(LINGER_QUEUED) - 1)

    async def failing() -> list[model.Server]:
        from kumo.engine.errors import TransientError

        raise TransientError("ServiceUnavailable", "nova-api answered 503")

    building = nova.list_building_servers
    nova.list_building_servers = failing  # type: ignore[method-assign]
    nova.settle()  # the kept one goes ACTIVE: news in this very listing
    listen(watch, nova, now, 1)
    assert watch.of(ServerWatcher).servers.lookup(kept.id).status == "ACTIVE"  # type: ignore[union-attr]
    assert seen.owners == [{"uid-0"}]
    nova.list_building_servers = building  # type: ignore[method-assign]
    listen(watch, nova, now, 1)
    assert watch.of(ServerWatcher).servers.lookup(doomed.id) is GONE
    assert seen.owners == [{"uid-0"}, {"uid-1"}]

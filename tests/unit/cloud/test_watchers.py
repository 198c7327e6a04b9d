"""The CloudWatch's watchers: one per service, registered once in ``WATCHERS``.

The CloudWatch only schedules them; these tests check that every registered watcher is
listed and reported, that a service is named only through them, and what ``marked()``
gives the orphan sweep.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kumo.cloud import model
from kumo.cloud.cache import ResourceCache
from kumo.cloud.services import WATCHERS
from kumo.cloud.services.blockstorage.watch import VolumeWatcher
from kumo.cloud.services.compute.watch import ServerWatcher
from kumo.cloud.services.loadbalancing.watch import LoadBalancerWatcher
from kumo.cloud.services.networking.watch import FloatingIPWatcher, NetworkWatcher, PortWatcher
from kumo.cloud.watch import Changes, CloudWatch
from kumo.cloud.watcher import WatchEnv, Watcher, metadata_marker
from kumo.engine.errors import TransientError
from kumo.engine.sweep import OrphanKept
from kumo.ports import Cloud
from kumo.ports.model import Marked
from tests.unit.cloud.test_watch import Lists, Recorder, octavia_with_pool, refresh, synced
from tests.unit.fakes import FakeServers, fakes
from tests.unit.fakes.blockstorage import FakeBlockStorage
from tests.unit.fakes.dns import FakeDns
from tests.unit.fakes.floating_ips import FakeFloatingIPs
from tests.unit.fakes.keypairs import KEY, FakeKeyPairs
from tests.unit.fakes.loadbalancing import FakeLoadBalancing
from tests.unit.fakes.networks import FakeNetworks
from tests.unit.fakes.sharedfs import FakeSharedFS


class Gadgets(Watcher):
    """A made-up service: what adding one takes (a class, and its entry in the list)."""

    service = "gadgets"

    def __init__(self, cloud: Cloud, env: WatchEnv) -> None:
        super().__init__(env)
        self.gadgets: ResourceCache[model.Share] = ResourceCache(
            "gadgets", lambda g: g.id, lambda g: model.metadata_owner(g.metadata)
        )
        self.caches = self.singles = (self.gadgets,)
        self.marks = (("gadget", self.gadgets, metadata_marker),)
        self.refreshes: list[bool] = []
        self.busy = False

    async def refresh(self, full: bool) -> Changes:
        self.refreshes.append(full)
        token = self.gadgets.begin()
        gadget = model.Share(
            "g-1",
            "gadget",
            "ok",
            len(self.refreshes),
            "NFS",
            metadata=model.marker_metadata("uid-g"),
        )
        return [(self.gadgets, c) for c in self.gadgets.replace(token, [gadget])]

    def transitional(self) -> bool:
        return self.busy


def gadgets_of(watch: CloudWatch) -> Gadgets:
    (gadgets,) = [w for w in watch.watchers if isinstance(w, Gadgets)]
    return gadgets


def every_service() -> Lists:
    """Every port's fake (tests/unit/fakes): every service a watch lists."""
    return Lists(*(fake() for fake in fakes().values()))


def test_every_registered_watcher_is_listed_at_start() -> None:
    watch = CloudWatch(every_service(), watchers=WATCHERS)  # type: ignore[arg-type]
    asyncio.run(watch.sync())
    # One instance of each registered watcher, in the order of WATCHERS.
    assert [w.service for w in watch.watchers] == [w.service for w in WATCHERS]
    assert len({w.service for w in watch.watchers}) == len(WATCHERS), "one per service"
    assert len(watch.watchers) == len(WATCHERS)
    for watcher in watch.watchers:
        if isinstance(watcher, PortWatcher):  # lists only once a Port asks
            assert not watcher.ports.synced
            continue
        assert all(cache.synced for cache in watcher.caches), watcher.service
    assert "ports" not in watch.stats.lists, "no Port: no ports listing at start"
    assert {
        "servers-full",
        "server-groups",
        "load-balancers-probe",
        "zones-probe",
        "shares",
        "security-groups",
        "keypairs-list",
        "floating-ips",
        "volumes-list",
        "networks-list",
        "routers-list",
    } <= set(watch.stats.lists), "each service's first listing"


def test_a_new_service_is_listed_scheduled_and_reported_through_its_watcher() -> None:
    now = [100.0]
    watch = CloudWatch(
        Lists(FakeServers()),  # type: ignore[arg-type]
        fast=1.0,
        interval=60.0,
        clock=lambda: now[0],
        watchers=(*WATCHERS, Gadgets),
    )
    asyncio.run(watch.sync())
    gadgets = gadgets_of(watch)
    assert gadgets.refreshes == [True], "the first listing is a full one"
    assert watch._services["gadgets"].next_due > 150.0, "idle: an interval away"
    watch.nudge("gadgets")
    assert watch._services["gadgets"].next_due == pytest.approx(101.0)

    seen = Recorder()
    watch._notify = seen
    gadgets.busy = True
    refresh(watch, "gadgets")  # the gadget's size moved
    assert seen.owners == [{"uid-g"}]
    assert watch._services["gadgets"].next_due <= 100.0 + 1.1, "in flight: listed fast"
    watch.poke("gadgets")
    assert watch.stats.lists["gadgets-poked"] == 1
    assert Marked("gadget", "g-1", "gadget", "uid-g") in watch.marked()


def test_the_run_loop_lists_every_watcher_when_due() -> None:
    watch = CloudWatch(
        Lists(FakeServers()),  # type: ignore[arg-type]
        interval=0.01,
        watchers=(*WATCHERS, Gadgets),
    )
    gadgets = gadgets_of(watch)

    def listed_again() -> bool:
        return len(gadgets.refreshes) > 1 and "servers-changes-since" in watch.stats.lists

    async def scenario() -> None:
        running = asyncio.ensure_future(watch.run(Recorder()))
        try:
            async with asyncio.timeout(5):
                while not listed_again():
                    await asyncio.sleep(0.005)
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)

    asyncio.run(scenario())
    assert gadgets.refreshes[1:2] == [False], "when due: an incremental listing"


def test_a_service_no_watcher_lists_cannot_be_nudged_and_its_pokes_are_ignored() -> None:
    watch = CloudWatch(every_service(), watchers=WATCHERS)  # type: ignore[arg-type]
    with pytest.raises(KeyError):
        watch.nudge("glance")
    watch.poke("glance")  # the cloud announces services Kumo does not watch
    assert "glance-poked" not in watch.stats.lists


def test_two_watchers_for_one_service_are_refused() -> None:
    with pytest.raises(ValueError, match="gadgets"):
        CloudWatch(every_service(), watchers=(*WATCHERS, Gadgets, Gadgets))  # type: ignore[arg-type]


def test_marked_lists_the_marked_resources_of_every_service_and_nothing_else() -> None:
    nova = FakeServers()
    server = nova.add_server("vm", tags=model.marker_tags("uid-vm"))
    nova.add_server("unowned", tags=[model.MANAGED_TAG])  # listed, but no owner
    nova.add_server("theirs", tags=[])
    going = nova.add_server("going", tags=model.marker_tags("uid-going"))
    asyncio.run(nova.delete_server(going.id))  # DELETING: on its way out already
    group = asyncio.run(nova.create_server_group(f"web {model.owner_word('uid-vmg')}", "anti"))
    asyncio.run(nova.create_server_group("theirs", "affinity"))
    octavia = FakeLoadBalancing()
    lb = octavia.add_lb(model.marker_tags("uid-lb"), name="front").lb
    octavia.add_lb([model.MANAGED_TAG], name="unowned")
    octavia.add_lb([], name="theirs")
    dns = FakeDns()
    rs = dns.add("www.kumo-demo.test.", "A", ["10.0.0.1"], f"web {model.owner_word('uid-rec')}")
    dns.add("mail.kumo-demo.test.", "A", ["10.0.0.2"], "by hand")
    manila = FakeSharedFS()
    share = asyncio.run(make_share(manila, "data", model.marker_metadata("uid-share")))
    asyncio.run(make_share(manila, "unowned", {"kumo": "managed"}))
    keypairs = FakeKeyPairs()
    keypairs.add("team-a-deploy", f"{KEY} me {model.owner_word('uid-kp')}")
    keypairs.add("released", f"{KEY} kumo-orphan=uid-gone")  # Orphan: nobody's, not swept
    keypairs.add("theirs", f"{KEY} me@laptop")
    neutron = FakeFloatingIPs()
    fip = neutron.add_fip("203.0.113.5", model.marker_tags("uid-fip"))
    untagged = neutron.add_fip("203.0.113.6", [], f"kept {model.owner_word('uid-fip2')}")
    neutron.add_fip("203.0.113.7", [model.MANAGED_TAG])  # no owner
    neutron.add_fip("203.0.113.8")  # someone else's
    watch, _ = synced(Lists(nova, octavia, dns, manila, keypairs, neutron))

    assert watch.marked() == [
        Marked("server", server.id, "vm", "uid-vm"),
        Marked("server_group", group.id, group.name, "uid-vmg"),
        Marked("keypair", "team-a-deploy", "team-a-deploy", "uid-kp"),
        Marked("loadbalancer", lb.id, "front", "uid-lb"),
        Marked("recordset", rs.id, "www.kumo-demo.test.", "uid-rec", zone_id=rs.zone_id),
        Marked("share", share.id, "data", "uid-share", busy=True),  # Manila: "creating"
        Marked("floatingip", fip.id, "203.0.113.5", "uid-fip"),
        Marked("floatingip", untagged.id, "203.0.113.6", "uid-fip2"),  # description's marker
    ]


def test_marked_lists_only_this_clusters_current_markers() -> None:
    """The orphan sweep acts on what ``marked()`` lists: never another cluster's resource
    (tags, metadata or a marker word naming it), nor a legacy one (no cluster: only its
    object takes it over, and re-marks it). Theirs are indexed apart from this
    cluster's owners, so no object of this cluster holds them, not even as duplicates."""
    other = "0123456789ab"
    theirs_tags = ["kumo", "kumo-owner=uid-a", f"kumo-cluster={other}"]
    legacy_tags = ["kumo", "kumo-owner=uid-a"]
    nova = FakeServers()
    ours = nova.add_server("ours", tags=model.marker_tags("uid-a"))
    nova.add_server("theirs", tags=theirs_tags)
    nova.add_server("legacy", tags=legacy_tags)
    asyncio.run(nova.create_server_group(f"theirs kumo-owner=uid-a@{other}", "anti"))
    asyncio.run(nova.create_server_group("legacy kumo-owner=uid-a", "anti"))
    dns = FakeDns()
    dns.add("a.kumo-demo.test.", "A", ["10.0.0.1"], f"kumo-owner=uid-a@{other}")
    dns.add("b.kumo-demo.test.", "A", ["10.0.0.2"], "kumo-owner=uid-a")
    cinder = FakeBlockStorage()
    cinder.add_volume("theirs", metadata={**model.marker_metadata("uid-a"), "kumo-cluster": other})
    cinder.add_volume("legacy", metadata={"kumo": "managed", "kumo-owner": "uid-a"})
    floating = FakeFloatingIPs()
    floating.add_fip("203.0.113.5", theirs_tags)
    floating.add_fip("203.0.113.6", [], f"kumo-owner=uid-a@{other}")
    floating.add_fip("203.0.113.7", legacy_tags)
    watch, _ = synced(Lists(nova, dns, cinder, floating))
    assert watch.marked() == [Marked("server", ours.id, "ours", "uid-a")]
    assert watch.of(ServerWatcher).servers.live_count("uid-a") == 2, (
        "ours and the legacy one: not theirs"
    )
    assert (
        watch.of(VolumeWatcher).volumes.live_count("uid-a") == 1
        and watch.of(FloatingIPWatcher).floating_ips.live_count("uid-a") == 1
    )


def test_marked_holds_only_what_the_caches_hold() -> None:
    """A service that failed to list (here: absent) contributes nothing, not an error."""
    nova = FakeServers()
    server = nova.add_server("vm", tags=model.marker_tags("uid-vm"))
    watch, _ = synced(Lists(nova))
    assert watch.marked() == [Marked("server", server.id, "vm", "uid-vm")]


def test_delete_marked_goes_through_the_watcher_that_listed_it() -> None:
    """The orphan sweep deletes by what ``marked()`` said: a recordset in its zone."""
    nova = FakeServers()
    dns = FakeDns()
    neutron = FakeFloatingIPs()
    rs = dns.add("www.kumo-demo.test.", "A", ["10.0.0.1"], model.owner_word("uid-gone"))
    server = nova.add_server("vm", tags=model.marker_tags("uid-gone"))
    keypairs = FakeKeyPairs()
    keypairs.add("kp", f"{KEY} {model.owner_word('uid-gone')}")
    watch, _ = synced(Lists(nova, dns, keypairs))
    for found in watch.marked():
        asyncio.run(watch.delete_marked(found))
    assert rs.id not in dns.recordsets
    assert keypairs.keypairs == {}, "a keypair is deleted by its name"
    fip = neutron.add_fip("203.0.113.9", model.marker_tags("uid-gone"))
    watch, _ = synced(Lists(nova, dns, neutron))
    for found in watch.marked():
        asyncio.run(watch.delete_marked(found))
    assert rs.id not in dns.recordsets
    assert fip.id not in neutron.fips
    assert nova.calls.count("delete_server") == 1 and server.id in nova.servers
    with pytest.raises(KeyError, match="gadget"):
        asyncio.run(watch.delete_marked(Marked("gadget", "g-1", "g", "uid-g")))


def test_owner_of_still_answers_for_every_cache() -> None:
    octavia, lb_id, pool_id = octavia_with_pool()
    watch, _ = synced(Lists(octavia))
    pool = watch.of(LoadBalancerWatcher).pools.lookup(pool_id)
    assert isinstance(pool, model.Pool) and not pool.tags
    assert watch.owner_of(watch.of(LoadBalancerWatcher).pools, pool) == "uid-lb", (
        "an unmarked child: its LB's owner"
    )
    assert watch.of(LoadBalancerWatcher).pool_lb(pool_id) == lb_id
    stray: ResourceCache[Any] = ResourceCache("stray", lambda r: r.id, lambda r: "uid-x")
    assert watch.owner_of(stray, pool) == "uid-x", "a cache no watcher holds: its own reading"


async def make_share(manila: FakeSharedFS, name: str, metadata: dict[str, str]) -> model.Share:
    return await manila.create_share(
        name=name,
        size=1,
        protocol="NFS",
        share_type_id=None,
        description=None,
        availability_zone=None,
        metadata=metadata,
    )


def test_cinder_is_one_filtered_listing_per_interval_whatever_the_volumes() -> None:
    """Idle cost constant in the number of volumes: one listing (by Kumo's metadata),
    no per-volume GET; a volume deleted out of band is seen as gone."""
    cinder = FakeBlockStorage()
    mine = [
        cinder.add_volume(f"v{i}", metadata=model.marker_metadata(f"uid-{i}")) for i in range(5)
    ]
    cinder.add_volume("theirs")  # no marker: never in Kumo's cache
    watch, _ = synced(Lists(FakeServers(), cinder))
    lists_before = watch.stats.lists.get("volumes-list", 0)
    refresh(watch, "blockstorage")
    assert watch.stats.lists.get("volumes-list", 0) == lists_before + 1
    assert "get_volume" not in cinder.calls
    assert sorted(v.id for v in watch.of(VolumeWatcher).volumes.items()) == sorted(
        v.id for v in mine
    )
    cinder.delete_volume_out_of_band(mine[0].id)
    refresh(watch, "blockstorage")
    assert mine[0].id not in {v.id for v in watch.of(VolumeWatcher).volumes.items()}
    assert Marked("volume", mine[1].id, "v1", "uid-1") in watch.marked()


@pytest.mark.parametrize(
    ("service", "counted", "per_interval"),
    [
        ("blockstorage", "volumes-list", 1),
        ("networking.floating-ips", "floating-ips", 1),
        ("compute.keypairs", "keypairs-list", 1),
        ("compute.server-groups", "server-groups", 0),  # only the full relist lists them
    ],
)
def test_a_one_listing_watcher_costs_one_listing_per_interval(
    service: str, counted: str, per_interval: int
) -> None:
    watch, _ = synced(every_service())
    before = dict(watch.stats.lists)
    refresh(watch, service)
    assert watch.stats.lists[counted] == before[counted] + per_interval
    assert sum(watch.stats.lists.values()) == sum(before.values()) + per_interval, "no other"
    refresh(watch, service, full=True)
    assert watch.stats.lists[counted] == before[counted] + per_interval + 1


def test_networks_cost_two_listings_per_interval_whatever_their_number() -> None:
    """Idle cost constant in the number of networks and routers (the adapter makes each
    listing two calls: networks + their subnets, routers + their interface ports); a
    subnet deleted out of band reaches the owner as a change; the orphan sweep lists a
    marked router before its network."""
    neutron = FakeNetworks()
    for i in range(20):
        neutron.add_network(f"n{i}", tags=model.marker_tags(f"uid-{i}"))
    neutron.add_network("theirs")  # no marker: never in Kumo's cache
    mine = neutron.add_network("mine", tags=model.marker_tags("uid-mine"))
    asyncio.run(
        neutron.create_subnet(
            mine.id, name="s", cidr="10.9.0.0/24", ip_version=4, gateway=None,
            dns_nameservers=[], allocation_pools=[], enable_dhcp=True,
        )
    )  # fmt: skip
    router = asyncio.run(
        neutron.create_router(
            name="r",
            description=model.owner_word("uid-mine"),
            external_network_id="ext",
            enable_snat=True,
            tags=model.marker_tags("uid-mine"),
        )
    )
    # Kumo killed between the POST and the tag call: marked by its description only.
    untagged = neutron.add_network("lost", description=f"app {model.owner_word('uid-lost')}")
    watch, seen = synced(Lists(FakeServers(), neutron))
    neutron.calls.clear()
    refresh(watch, "networking.networks")
    assert sorted(neutron.calls) == ["fetch_networks", "fetch_routers"]
    assert len(watch.of(NetworkWatcher).networks.items()) == 22
    assert watch.of(NetworkWatcher).networks.owned_by("uid-lost") == [untagged], (
        "seen by its description"
    )
    assert Marked("network", untagged.id, "lost", "uid-lost") in watch.marked()
    (subnet,) = neutron.networks[mine.id].subnets
    neutron.delete_subnet_out_of_band(subnet.id)
    refresh(watch, "networking.networks")
    assert {"uid-mine"} in seen.owners
    kinds = [(m.kind, m.id) for m in watch.marked() if m.owner == "uid-mine"]
    assert kinds == [("router", router.id), ("network", mine.id)]


def test_a_project_without_networks_pays_one_neutron_network_listing() -> None:
    neutron = FakeNetworks()
    watch, _ = synced(Lists(FakeServers(), neutron))
    neutron.calls.clear()
    refresh(watch, "networking.networks")
    assert neutron.calls == ["fetch_networks"]
    refresh(watch, "networking.networks", full=True)  # the relist still looks for leaked routers
    assert neutron.calls == ["fetch_networks", "fetch_networks", "fetch_routers"]


def test_routers_are_listed_by_what_the_networks_listing_answered_not_by_the_cache() -> None:
    """A network Kumo creates while the networks listing runs is in the cache but not in
    that listing's answer: the routers are not listed for it (the next interval's
    listing shows it, and lists the routers then)."""
    created = model.Network("net-new", "new", tags=model.marker_tags("uid-new"))

    class CreatedWhileListed(FakeNetworks):
        cache: ResourceCache[model.Network] | None = None

        async def fetch_networks(self) -> list[model.Network]:
            listed = await super().fetch_networks()
            if self.cache is not None:
                self.cache.put(created)  # Kumo's create, while the listing runs
            return listed

    neutron = CreatedWhileListed()
    watch, _ = synced(Lists(FakeServers(), neutron))
    neutron.cache = watch.of(NetworkWatcher).networks
    neutron.calls.clear()
    refresh(watch, "networking.networks")
    assert neutron.calls == ["fetch_networks"]
    assert watch.of(NetworkWatcher).networks.lookup("net-new") == created, "kept: written after"


# -- what the orphan sweep asks of the watch ---------------------------------------------------


def test_synced_since_needs_a_full_listing_of_every_service_started_after_the_moment() -> None:
    """After leadership is regained the sweep asks it with that moment: caches kept from
    the previous term are judged only once every service has been listed in full since.
    A service that fails counts only while it caches nothing (the cloud lacks it)."""
    nova = FakeServers()
    nova.add_server("vm", tags=model.marker_tags("uid-vm"))
    now = [0.0]
    watch, _ = synced(Lists(nova), clock=lambda: now[0])  # every other service: 503
    assert watch.synced_since(0.0)
    now[0] = 50.0
    assert not watch.synced_since(50.0), "listed before the moment"
    refresh(watch, "compute")  # an incremental listing is not a full one
    assert not watch.synced_since(50.0)
    for name in watch._services:
        refresh(watch, name, full=True)
    assert watch.synced_since(50.0), "the absent services hold nothing"
    now[0] = 100.0

    async def broken(*args: Any) -> Any:
        raise TransientError("CloudUnavailable", "nova is down")

    nova.list_servers_since = broken  # type: ignore[method-assign]
    for name in watch._services:
        refresh(watch, name, full=True)
    assert watch.of(ServerWatcher).servers.items(), "the failed listing kept what was cached"
    assert not watch.synced_since(100.0), "so it is not fresh"


def fake_neutron_with_leaked_router() -> tuple[FakeNetworks, model.Router, dict[str, str]]:
    """A router of a Network object that is gone, on a subnet of its own network, one of
    another Network object's, one of the same UID's in another cluster and one of a
    network Kumo does not know (a user's)."""
    neutron = FakeNetworks()
    subnets = {}
    for name, tags in (
        ("own", model.marker_tags("uid-gone")),
        ("other", model.marker_tags("uid-other")),
        ("cluster", ["kumo", model.owner_tag("uid-gone"), "kumo-cluster=elsewhere"]),
        ("users", []),
    ):
        network = neutron.add_network(name, tags=tags)
        subnet = asyncio.run(
            neutron.create_subnet(
                network.id, name=name, cidr=f"10.{len(subnets)}.0.0/24", ip_version=4,
                gateway=None, dns_nameservers=[], allocation_pools=[], enable_dhcp=True,
            )
        )  # fmt: skip
        subnets[name] = subnet.id
    router = asyncio.run(
        neutron.create_router(
            name="r", description=model.owner_word("uid-gone"), external_network_id="ext",
            enable_snat=True, tags=model.marker_tags("uid-gone"),
        )
    )  # fmt: skip
    return neutron, router, subnets


def test_a_leaked_router_is_detached_only_from_its_own_networks_subnets() -> None:
    neutron, router, subnets = fake_neutron_with_leaked_router()
    for name in ("own", "other", "cluster", "users"):
        asyncio.run(neutron.add_router_interface(router.id, subnets[name]))
    watch, _ = synced(Lists(FakeServers(), neutron))
    (marked,) = [m for m in watch.marked() if m.kind == "router"]
    foreign = sorted(subnets[name] for name in ("other", "cluster", "users"))
    with pytest.raises(OrphanKept, match=", ".join(foreign)):
        asyncio.run(watch.delete_marked(marked))
    assert neutron.routers[router.id].interfaces == tuple(foreign), (
        "the foreign subnets stay attached, and so does the router"
    )
    assert "delete_router" not in neutron.calls


def test_a_leaked_router_on_its_own_subnet_only_is_detached_and_deleted() -> None:
    neutron, router, subnets = fake_neutron_with_leaked_router()
    asyncio.run(neutron.add_router_interface(router.id, subnets["own"]))
    watch, _ = synced(Lists(FakeServers(), neutron))
    (marked,) = [m for m in watch.marked() if m.kind == "router"]
    asyncio.run(watch.delete_marked(marked))
    assert router.id not in neutron.routers

"""Which servers the cloud watch reads by ID, and when (issue 24): a fleet that builds,
however long its servers wait in Nova's queue, costs listings and no per-server GET; a
queued server deleted without a trace is still noticed.

Nova answers every changes-since listing with every build request (FakeNova does too);
a server its conductor has made an instance that no compute has started yet has no
``updated_at`` and is in no changes-since answer (``FakeNova.schedule``).
"""

from __future__ import annotations

import asyncio

from kumo.cloud import model
from kumo.cloud.cache import GONE
from kumo.cloud.watch import LINGER_QUEUED, CloudWatch
from tests.unit.cloud.test_watch import Lists, Recorder, refresh
from tests.unit.fakes import FakeNova


def watching(nova: FakeNova) -> tuple[CloudWatch, Recorder, list[float]]:
    """A synced watch on ``nova`` whose clock the test moves (``now[0]``)."""
    now = [0.0]
    watch = CloudWatch(Lists(nova), clock=lambda: now[0])  # type: ignore[arg-type]
    asyncio.run(watch.sync())
    seen = Recorder()
    watch._notify = seen
    nova.calls.clear()
    return watch, seen, now


def build_fleet(nova: FakeNova, n: int) -> list[model.Server]:
    return [nova.add_server(f"vm-{i}", tags=model.marker_tags(f"uid-{i}")) for i in range(n)]


def listen(watch: CloudWatch, nova: FakeNova, now: list[float], seconds: int) -> None:
    """The watch lists Nova once a second (its fast interval while servers build)."""
    for _ in range(seconds):
        now[0] += 1.0
        nova.tick(1)
        refresh(watch, "nova")


def test_servers_queued_for_minutes_cost_no_read_by_id() -> None:
    """Turns to build keep servers queued far longer than any threshold: each is in every
    changes-since answer (a build request), so none is read by ID."""
    nova = FakeNova()
    fleet = build_fleet(nova, 50)
    watch, _seen, now = watching(nova)
    listen(watch, nova, now, 300)
    assert set(nova.calls) == {"list_servers_since"}, "listings only, no GET"
    nova.settle()
    listen(watch, nova, now, 1)
    assert all(watch.servers.lookup(s.id).status == "ACTIVE" for s in fleet)  # type: ignore[union-attr]
    assert "fetch_server" not in nova.calls


def test_a_server_built_on_its_host_for_minutes_costs_no_read_by_id() -> None:
    """On a host its server changes with every step; a slow spawn is no reason to ask
    (the rule it replaces read every BUILD server unchanged for 120 s)."""
    nova = FakeNova()
    build_fleet(nova, 3)
    nova.place()
    watch, _seen, now = watching(nova)
    listen(watch, nova, now, 300)
    assert set(nova.calls) == {"list_servers_since"}


def test_servers_waiting_for_a_build_slot_cost_one_listing_not_a_get_each() -> None:
    """Scheduled, not started: out of every changes-since answer. After ``LINGER_QUEUED``
    one listing of Kumo's servers in BUILD vouches for them all, and again only after
    another ``LINGER_QUEUED``."""
    nova = FakeNova()
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
    assert all(watch.servers.lookup(s.id) is not GONE for s in fleet)
    assert seen.owners == [], "nothing changed"
    nova.settle()
    listen(watch, nova, now, 1)
    assert all(watch.servers.lookup(s.id).status == "ACTIVE" for s in fleet)  # type: ignore[union-attr]


def test_a_server_deleted_out_of_band_while_queued_is_noticed() -> None:
    """A build request deleted leaves no DELETED trace in changes-since: missing from the
    answers and from the BUILD listing, it is read by ID and found gone."""
    nova = FakeNova()
    kept, doomed = build_fleet(nova, 2)
    watch, seen, now = watching(nova)
    listen(watch, nova, now, 5)
    del nova.servers[doomed.id]  # gone at once, and not in nova.deleted
    listen(watch, nova, now, int(LINGER_QUEUED) - 1)
    assert "fetch_server" not in nova.calls, "not at once: it may be on its way to a host"
    assert watch.servers.lookup(doomed.id) is not GONE
    listen(watch, nova, now, 1)
    assert nova.calls.count("list_building_servers") == 1
    assert nova.calls.count("fetch_server") == 1, "only the missing one"
    assert watch.servers.lookup(doomed.id) is GONE
    assert watch.servers.lookup(kept.id) is not GONE
    assert seen.owners == [{"uid-1"}]
    listen(watch, nova, now, 60)
    assert nova.calls.count("fetch_server") == 1
    assert nova.calls.count("list_building_servers") == 1


def test_a_server_kumo_created_after_a_listing_began_is_not_missing() -> None:
    """Its clock starts when the watch first sees it queued, not at the listing before."""
    nova = FakeNova()
    watch, _seen, now = watching(nova)
    listen(watch, nova, now, 30)
    server = nova.add_server("late", tags=model.marker_tags("uid-late"))
    watch.servers.put(server)  # Kumo's create put it in the cache
    listen(watch, nova, now, 60)
    assert set(nova.calls) == {"list_servers_since"}


def test_a_listing_that_failed_does_not_count_as_missing() -> None:
    """A Nova outage longer than LINGER_QUEUED: the first answer after it shows the queued
    servers again, and nothing is read."""
    nova = FakeNova()
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

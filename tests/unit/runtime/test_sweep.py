"""The orphan sweep as the leader runs it: report, confirm with the API server, delete."""

from __future__ import annotations

import asyncio
from typing import Any

from kumo.api.kinds import KINDS, VIRTUAL_MACHINE
from kumo.ports.model import Marked
from kumo.runtime.sweep import Sweeper, SweepOptions


class Watch:
    """What the sweep asks of a cloud watch: what is marked, and to delete one of them."""

    def __init__(self, *marked: Marked) -> None:
        self.listed = list(marked)
        self.deleted: list[tuple[str, ...]] = []
        self.full_listing_at = 0.0  # when its latest full listing started

    def synced_since(self, moment: float) -> bool:
        return self.full_listing_at >= moment

    def marked(self) -> list[Marked]:
        return list(self.listed)

    async def delete_marked(self, resource: Marked) -> None:
        where = (resource.zone_id,) if resource.zone_id else ()
        self.deleted.append((resource.kind, *where, resource.id))
        self.listed.remove(resource)


class Cloud:
    def __init__(self, *marked: Marked) -> None:
        self.watch = Watch(*marked)

    @property
    def deleted(self) -> list[tuple[str, ...]]:
        return self.watch.deleted


class Kube:
    def __init__(self, uids: dict[str, list[str]] | None = None) -> None:
        self.uids = uids or {}
        self.events: list[tuple[str, str, str]] = []
        self.lists = 0

    async def list(self, info: Any, namespace: str | None = None) -> list[dict[str, Any]]:
        self.lists += 1
        return [{"metadata": {"uid": u}} for u in self.uids.get(info.kind, [])]

    async def post_namespace_event(self, namespace: str, type_: str, reason: str, msg: str) -> None:
        self.events.append((namespace, reason, msg))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


LEAK = Marked("server", "srv-leak", "default-gone", "uid-gone")
MINE = [Marked("server", f"srv-{i}", f"vm-{i}", f"uid-{i}") for i in range(4)]
LIVE = {f"uid-{i}" for i in range(4)}


def sweeper(
    kube: Kube, cloud: Cloud, clock: Clock, mode: str = "delete", namespace: str | None = None
) -> Sweeper:
    found = Sweeper(
        kube,
        KINDS,
        lambda: set(LIVE),
        SweepOptions(mode=mode, grace=600),  # type: ignore[arg-type]
        namespace=namespace,
        clock=clock,
    )
    found.watching(cloud, "team-a")
    return found


def sweeps_at(sweep: Sweeper, clock: Clock, *moments: float) -> None:
    """One sweep at each moment."""
    for clock.now in moments:
        asyncio.run(sweep.sweep_once())


def test_an_orphan_is_reported_once_then_deleted_after_the_grace() -> None:
    kube, cloud, clock = Kube(), Cloud(*MINE, LEAK), Clock()
    sweep = sweeper(kube, cloud, clock)
    asyncio.run(sweep.sweep_once())
    asyncio.run(sweep.sweep_once())
    assert [e[:2] for e in kube.events] == [("team-a", "OrphanFound")], "reported once"
    assert "srv-leak" in kube.events[0][2] and "uid-gone" in kube.events[0][2]
    assert cloud.deleted == [] and kube.lists == 0, "no deletion due: no API call"
    clock.now = 600
    asyncio.run(sweep.sweep_once())
    assert cloud.deleted == [("server", "srv-leak")]
    assert kube.lists == len(KINDS), "owners confirmed by a fresh list of every kind"
    assert kube.events[-1][1] == "OrphanDeleted"


def test_an_owner_the_fresh_list_finds_saves_the_resource() -> None:
    """The informer cache lagged: the API server has the object, so nothing is deleted."""
    kube, cloud, clock = Kube({VIRTUAL_MACHINE.kind: ["uid-gone"]}), Cloud(*MINE, LEAK), Clock()
    sweep = sweeper(kube, cloud, clock)
    asyncio.run(sweep.sweep_once())
    clock.now = 600
    asyncio.run(sweep.sweep_once())
    assert cloud.deleted == []


def test_report_mode_and_a_namespaced_operator_never_delete() -> None:
    for mode, namespace in (("report", None), ("delete", "team-a")):
        kube, cloud, clock = Kube(), Cloud(*MINE, LEAK), Clock()
        sweep = sweeper(kube, cloud, clock, mode, namespace)
        asyncio.run(sweep.sweep_once())
        clock.now = 10_000
        asyncio.run(sweep.sweep_once())
        assert cloud.deleted == []
        assert "reported only" in kube.events[0][2]


def test_a_recordset_is_deleted_in_its_zone() -> None:
    rs = Marked("recordset", "rs-1", "www.example.org.", "uid-gone", zone_id="zone-9")
    kube, cloud, clock = Kube(), Cloud(*MINE, rs), Clock()
    sweep = sweeper(kube, cloud, clock)
    asyncio.run(sweep.sweep_once())
    clock.now = 600
    asyncio.run(sweep.sweep_once())
    assert cloud.deleted == [("recordset", "zone-9", "rs-1")]


def test_the_circuit_breaker_posts_why_it_deletes_nothing() -> None:
    strays = [Marked("server", f"x{i}", f"x{i}", f"gone-{i}") for i in range(6)]
    kube, cloud, clock = Kube(), Cloud(*MINE, *strays), Clock()
    sweep = sweeper(kube, cloud, clock)
    asyncio.run(sweep.sweep_once())
    clock.now = 600
    asyncio.run(sweep.sweep_once())
    assert cloud.deleted == []
    assert [e[1] for e in kube.events].count("OrphanSweepSuspended") == 1


def test_a_delete_the_cloud_refuses_is_retried_next_sweep_and_the_others_go_on() -> None:
    """Neutron refuses to delete a security group ports still use: that one waits for the
    next sweep; the other orphans of this sweep are still deleted."""
    first, second = Marked("server", "a", "a", "gone-a"), Marked("server", "b", "b", "gone-b")
    kube, cloud, clock = Kube(), Cloud(*MINE, first, second), Clock()
    refusals = ["a"]
    delete = cloud.watch.delete_marked

    async def refusing(resource: Marked) -> None:
        if resource.id in refusals:
            refusals.remove(resource.id)
            raise RuntimeError("409 in use")
        await delete(resource)

    cloud.watch.delete_marked = refusing  # type: ignore[method-assign]
    sweep = sweeper(kube, cloud, clock)
    asyncio.run(sweep.sweep_once())
    clock.now = 600
    asyncio.run(sweep.sweep_once())
    assert cloud.deleted == [("server", "b")]
    asyncio.run(sweep.sweep_once())
    assert cloud.deleted == [("server", "b"), ("server", "a")]


def test_the_suspended_gauge_holds_for_any_project_not_only_the_last_judged() -> None:
    from kumo.runtime import metrics

    strays = [Marked("server", f"x{i}", f"x{i}", f"gone-{i}") for i in range(6)]
    kube, clock = Kube(), Clock()
    suspended, calm = Cloud(*MINE, *strays), Cloud(*MINE)
    sweep = sweeper(kube, suspended, clock)
    sweep.watching(calm, "team-b")  # judged after the suspended project
    asyncio.run(sweep.sweep_once())
    assert metrics.ORPHAN_SWEEP_SUSPENDED._value.get() == 1


def gauge(kind: str, kept: str) -> float:
    from kumo.runtime import metrics

    return float(metrics.ORPHANS.labels(kind, kept)._value.get())


VOLUME = Marked("volume", "vol-leak", "pgdata", "uid-vol-gone")


def test_an_orphaned_volume_is_reported_with_how_to_import_or_delete_it_and_kept() -> None:
    from kumo.runtime import metrics

    kube, cloud, clock = Kube(), Cloud(*MINE, LEAK, VOLUME), Clock()
    sweep = sweeper(kube, cloud, clock)
    sweeps = metrics.ORPHAN_SWEEPS._value.get()
    sweeps_at(sweep, clock, 0, 600, 1200, 10_000)
    assert cloud.deleted == [("server", "srv-leak")], "the server goes, the volume stays"
    assert metrics.ORPHAN_SWEEPS._value.get() == sweeps + 4
    (found,) = [m for _, reason, m in kube.events if reason == "OrphanFound" and "vol-leak" in m]
    assert "uid-vol-gone" in found and "never deleted by the sweep" in found
    assert "--orphan-sweep-data volume" in found
    assert "volume unset --property kumo-owner --property kumo-cluster vol-leak" in found
    assert "kind: Volume" in found and "import:\n    id: vol-leak" in found
    assert "openstack volume delete vol-leak" in found
    assert len(found) <= 1000, "an event's message is cut at 1,000 characters"
    assert gauge("volume", "true") == 1 and gauge("server", "false") == 0


def test_an_orphaned_volume_is_deleted_when_the_operator_names_volumes() -> None:
    kube, cloud, clock = Kube(), Cloud(*MINE, VOLUME), Clock()
    sweep = Sweeper(
        kube,
        KINDS,
        lambda: set(LIVE),
        SweepOptions(grace=600, delete_data=frozenset({"volume"})),
        clock=clock,
    )
    sweep.watching(cloud, "team-a")
    sweeps_at(sweep, clock, 0)
    assert gauge("volume", "false") == 1
    sweeps_at(sweep, clock, 600)
    assert cloud.deleted == [("volume", "vol-leak")]


def test_after_leadership_is_regained_the_sweep_waits_for_a_fresh_full_listing() -> None:
    """The watch's caches may be from the previous term: nothing is judged on them."""
    kube, cloud, clock = Kube(), Cloud(*MINE, LEAK), Clock()
    sweep = sweeper(kube, cloud, clock)
    sweep.lead()
    sweep.watching(cloud, "team-a")
    sweeps_at(sweep, clock, 0)  # the leak is seen at 0: its grace begins
    sweep.step_down()
    assert sweep.targets == {}, "its memory goes with leadership"
    clock.now = 500
    sweep.lead()  # the watch's last full listing started at 0: before this term
    sweep.watching(cloud, "team-a")
    kube.events.clear()
    sweeps_at(sweep, clock, 600, 700, 2000)
    assert kube.events == [] and cloud.deleted == [], "not judged: no fresh listing"
    cloud.watch.full_listing_at = 2000  # the watch has listed every service since
    sweeps_at(sweep, clock, 2000)
    assert [e[1] for e in kube.events] == ["OrphanFound"] and cloud.deleted == []
    sweeps_at(sweep, clock, 2599)
    assert cloud.deleted == [], "the grace began again at 2000, not at 0"
    sweeps_at(sweep, clock, 2600)
    assert cloud.deleted == [("server", "srv-leak")]


def test_losing_leadership_clears_the_gauges() -> None:
    kube, cloud, clock = Kube(), Cloud(*MINE, VOLUME), Clock()
    sweep = sweeper(kube, cloud, clock)
    sweeps_at(sweep, clock, 0)
    assert gauge("volume", "true") == 1
    sweep.step_down()
    assert gauge("volume", "true") == 0


def test_a_router_kept_for_a_foreign_subnet_is_reported_once_and_tried_again() -> None:
    from kumo.engine.sweep import OrphanKept

    router = Marked("router", "rtr-1", "r", "uid-gone")
    kube, cloud, clock = Kube(), Cloud(*MINE, router), Clock()
    foreign = ["sub-theirs"]

    async def keeping(resource: Marked) -> None:
        if foreign:
            raise OrphanKept("router rtr-1 keeps an interface on subnet(s) sub-theirs")
        cloud.watch.deleted.append((resource.kind, resource.id))

    cloud.watch.delete_marked = keeping  # type: ignore[method-assign]
    sweep = sweeper(kube, cloud, clock)
    sweeps_at(sweep, clock, 0, 600, 700)
    assert [e[1] for e in kube.events].count("OrphanKept") == 1
    assert cloud.deleted == []
    foreign.clear()  # the user detached it
    sweeps_at(sweep, clock, 800)
    assert cloud.deleted == [("router", "rtr-1")]


def test_a_long_name_never_pushes_the_commands_out_of_the_event() -> None:
    long = Marked("volume", "vol-long", "n" * 255, "uid-gone")
    kube, cloud, clock = Kube(), Cloud(*MINE, long), Clock()
    sweeps_at(sweeper(kube, cloud, clock), clock, 0)
    (message,) = [m for _, reason, m in kube.events if reason == "OrphanFound"]
    assert len(message) <= 1000 and message.endswith("openstack volume delete vol-long")

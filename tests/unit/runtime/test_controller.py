"""The controller loop: events → cache → queue, dependents, no ghosts after deletion."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import pytest
from prometheus_client import REGISTRY

from kumo.api.kinds import VIRTUAL_MACHINE, VIRTUAL_MACHINE_GROUP
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Key, copy_body
from kumo.engine.queue import WorkQueue
from kumo.engine.result import Result
from kumo.kinds import registry
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from kumo.runtime import metrics
from kumo.runtime.controller import Controller
from tests.unit.fakes import FakeKube, FakeServers, make_body
from tests.unit.waiting import ManualClock, until

SPEC = {"image": "centos79", "flavor": "n3-1vcpu-2gb"}


class OneCloud:
    def __init__(self) -> None:
        self.cloud = FakeServers()

    async def for_namespace(self, namespace: str) -> Any:
        return self.cloud


def compute_only() -> list[Any]:
    """The actuators of the kinds on Nova first (a VM's volumes are Cinder's, but none
    is named here): FakeServers is the only cloud here."""
    return [r.actuator() for r in registry.RECORDS if r.services[:1] == ("compute",)]


def controller() -> Controller:
    ctl = Controller(compute_only(), None, OneCloud())
    ctl.kube = FakeKube(ctl.store)
    ctl.events.emit = lambda *args: None  # type: ignore[method-assign]
    return ctl


def test_event_enqueues_object_and_its_owner() -> None:
    ctl = controller()
    group = make_body(VIRTUAL_MACHINE_GROUP, "g", {"template": SPEC})
    ctl.observe("VirtualMachineGroup", "ADDED", group)
    member = member_of_g("g-1")
    ctl.observe("VirtualMachine", "ADDED", member)
    assert len(ctl.queue) == 2


def test_status_only_echo_does_not_requeue_the_object() -> None:
    ctl = controller()
    body = make_body(VIRTUAL_MACHINE, "vm", SPEC)
    ctl.observe("VirtualMachine", "ADDED", body)
    key = asyncio.run(ctl.queue.get())
    ctl.queue.done(key)
    echoed = copy.deepcopy(body)
    echoed["metadata"]["resourceVersion"] = "5"
    echoed["status"] = {"phase": "Building"}
    ctl.observe("VirtualMachine", "MODIFIED", echoed)
    assert len(ctl.queue) == 0
    changed = copy.deepcopy(echoed)
    changed["spec"] = {**SPEC, "description": "new"}
    changed["metadata"]["resourceVersion"] = "6"
    ctl.observe("VirtualMachine", "MODIFIED", changed)
    assert len(ctl.queue) == 1


def test_finalized_object_does_not_linger_in_the_cache() -> None:
    ctl = controller()
    body = make_body(
        VIRTUAL_MACHINE,
        "vm",
        SPEC,
        finalizers=["virtualmachine.kumo.dev/finalizer"],
        deletionTimestamp="2026-11-22T00:00:00Z",
    )
    ctl.observe("VirtualMachine", "MODIFIED", body)
    asyncio.run(ctl.process(Key("VirtualMachine", "default", "vm")))
    assert ctl.store.get("VirtualMachine", "default", "vm") is None


class ListingKube:
    """An API server that only lists and gets (what the startup barrier uses)."""

    def __init__(self, *bodies: dict[str, Any]) -> None:
        self.objects = {(b["kind"], b["metadata"]["name"]): b for b in bodies}
        self.gets = 0

    async def list(self, info: Any, namespace: str | None = None) -> list[dict[str, Any]]:
        return [copy.deepcopy(b) for (kind, _), b in self.objects.items() if kind == info.kind]

    async def get(self, info: Any, namespace: str, name: str) -> dict[str, Any] | None:
        self.gets += 1
        body = self.objects.get((info.kind, name))
        return copy.deepcopy(body) if body else None


def test_prime_fills_the_cache_with_every_kind_before_work_starts() -> None:
    ctl = controller()
    group = make_body(VIRTUAL_MACHINE_GROUP, "g", {"template": SPEC, "replicas": 2})
    members = [make_body(VIRTUAL_MACHINE, f"g-{i}", SPEC) for i in range(2)]
    ctl.kube = ListingKube(group, *members)
    asyncio.run(ctl.prime())
    assert len(ctl.store.list("VirtualMachine")) == 2
    assert ctl.store.get("VirtualMachineGroup", "default", "g") is not None
    assert len(ctl.queue) == 0, "priming enqueues nothing: only the leader works"


def test_an_object_deleted_after_the_listing_is_not_reconciled_as_a_ghost() -> None:
    ctl = controller()
    vm = make_body(VIRTUAL_MACHINE, "gone", SPEC)
    api = ListingKube(vm)
    ctl.kube = api
    asyncio.run(ctl.prime())
    del api.objects[("VirtualMachine", "gone")]  # deleted before the watch started
    asyncio.run(ctl.process(Key("VirtualMachine", "default", "gone")))
    assert ctl.store.get("VirtualMachine", "default", "gone") is None
    assert ctl.clouds.cloud.servers == {}, "nothing was created for it"


def test_an_object_seen_by_the_watch_needs_no_extra_get() -> None:
    ctl = controller()
    vm = make_body(VIRTUAL_MACHINE, "vm", SPEC)
    api = ListingKube(vm)
    ctl.kube = api
    asyncio.run(ctl.prime())
    ctl.observe("VirtualMachine", None, vm)  # kopf's own listing confirms it
    ctl.kube = FakeKube(ctl.store)
    asyncio.run(ctl.process(Key("VirtualMachine", "default", "vm")))
    assert api.gets == 0


def test_stop_lets_a_reconcile_in_flight_finish() -> None:
    async def scenario() -> list[str]:
        ctl = controller()
        steps: list[str] = []
        started, finish = asyncio.Event(), asyncio.Event()

        async def process(key: Key) -> None:
            started.set()
            try:
                await finish.wait()  # in flight until the test lets it finish
            except asyncio.CancelledError:
                steps.append(f"cancelled {key.name}")
                raise
            steps.append(f"finished {key.name}")

        ctl.process = process  # type: ignore[method-assign]
        ctl.queue.add(Key("VirtualMachine", "default", "a"))
        ctl.start()
        await until(started.is_set, "a is in flight")
        stopping = asyncio.create_task(ctl.stop(grace=5))
        await until(lambda: ctl._stopping, "stop has begun")
        # A stop that did not wait would have cancelled a by now, and be done.
        assert not stopping.done() and steps == [], "stop waits for the reconcile in flight"
        finish.set()
        await asyncio.wait_for(stopping, 5)
        steps.append("stopped")
        ctl.queue.add(Key("VirtualMachine", "default", "b"))
        assert not ctl._tasks, "no worker survived stop to take b"
        assert len(ctl.queue) == 1, "b waits for the next leader"
        return steps

    assert asyncio.run(scenario()) == ["finished a", "stopped"]


def _config_map(data: dict[str, str] | None) -> dict[str, Any]:
    return {"metadata": {"name": "boot", "namespace": "default"}, "data": data or {}}


def test_cloud_changes_do_not_defeat_the_terminal_backoff() -> None:
    """A VM stuck in a permanent error is not reconciled again at every change its cloud
    watch reports; a spec change (new generation) or the elapsed backoff lets it through."""
    ctl = controller()
    key = Key("VirtualMachine", "default", "vm")
    spec = {**SPEC, "initScript": {"configMapRef": {"name": "boot", "key": "s"}}}
    ctl.store.put("ConfigMap", _config_map({"s": "echo hi"}))
    ctl.observe("VirtualMachine", "ADDED", make_body(VIRTUAL_MACHINE, "vm", spec))
    asyncio.run(ctl.process(key))
    ctl.clouds.cloud.settle()
    asyncio.run(ctl.process(key))
    assert ctl.store.get("VirtualMachine", "default", "vm")["status"]["phase"] == "Running"

    ctl.store.remove("ConfigMap", "default", "boot")  # permanent: ConfigMapNotFound
    clock = ManualClock()
    ctl.queue = WorkQueue(clock=clock)  # forget the earlier passes' requeues
    asyncio.run(ctl.process(key))
    body = ctl.store.get("VirtualMachine", "default", "vm")
    assert body["status"]["conditions"][0]["reason"] == "ConfigMapNotFound"
    retry = ctl.queue._due[key]
    assert retry == (clock.now + ctl.engine.backoff.terminal_delay, False)
    uid = body["metadata"]["uid"]
    assert ctl.cloud_changed({uid}, set()) == []
    assert ctl.queue._due[key] == retry, "a cloud change moved the retry earlier"

    body["metadata"]["generation"] = 2  # the user changed the spec
    assert ctl.cloud_changed({uid}, set()) == [key]


def test_terminal_hold_ends_when_its_backoff_elapses() -> None:
    ctl = controller()
    now = [1_000.0]
    ctl.engine.backoff.clock = lambda: now[0]
    key = Key("VirtualMachine", "default", "vm")
    spec = {**SPEC, "initScript": {"configMapRef": {"name": "boot", "key": "s"}}}
    ctl.store.put("ConfigMap", _config_map({"s": "echo hi"}))
    ctl.observe("VirtualMachine", "ADDED", make_body(VIRTUAL_MACHINE, "vm", spec))
    asyncio.run(ctl.process(key))
    ctl.clouds.cloud.settle()
    asyncio.run(ctl.process(key))
    ctl.store.remove("ConfigMap", "default", "boot")
    asyncio.run(ctl.process(key))
    uid = ctl.store.get("VirtualMachine", "default", "vm")["metadata"]["uid"]
    assert ctl.cloud_changed({uid}, set()) == []
    now[0] += ctl.engine.backoff.terminal_delay + 1
    assert ctl.cloud_changed({uid}, set()) == [key]


def test_cloud_changes_enqueue_their_owners_and_duplicates_are_audited() -> None:
    ctl = controller()
    for name in ("a", "b"):
        ctl.observe("VirtualMachine", "ADDED", make_body(VIRTUAL_MACHINE, name, SPEC))
    ctl.queue = WorkQueue()
    uid_a = ctl.store.get("VirtualMachine", "default", "a")["metadata"]["uid"]
    key_a = Key("VirtualMachine", "default", "a")
    assert ctl.cloud_changed({uid_a, "uid-of-nobody"}, {uid_a}) == [key_a]
    assert list(ctl.queue._due) == [key_a], "only the owner, not b"
    assert key_a in ctl._audit, "two resources carry a's marker: look for the second"


def test_an_object_being_deleted_is_reconciled_before_the_queued_creates() -> None:
    """A thousand VMs queued to be created; the user deletes their group: its deletion
    (which stops them) goes first."""

    async def scenario() -> Key:
        ctl = controller()
        for i in range(50):
            ctl.observe("VirtualMachine", "ADDED", make_body(VIRTUAL_MACHINE, f"vm-{i}", SPEC))
        going = make_body(VIRTUAL_MACHINE, "vm-7", SPEC)
        going["metadata"]["deletionTimestamp"] = "2026-11-23T00:00:00Z"
        going["metadata"]["resourceVersion"] = "99"
        ctl.observe("VirtualMachine", "MODIFIED", going)
        return await asyncio.wait_for(ctl.queue.get(), 1)

    assert asyncio.run(scenario()) == Key("VirtualMachine", "default", "vm-7")


class OneBrokenNamespace:
    """team-a's credentials blow up (with anything); team-b's cloud works."""

    def __init__(self, error: Exception) -> None:
        self.cloud = FakeServers()
        self.error = error

    async def for_namespace(self, namespace: str) -> Any:
        if namespace == "team-a":
            raise self.error
        return self.cloud


def two_namespaces(error: Exception) -> Controller:
    ctl = Controller([VirtualMachineActuator()], None, OneBrokenNamespace(error))
    ctl.kube = FakeKube(ctl.store)
    ctl.events.emit = lambda *args: None  # type: ignore[method-assign]
    for namespace in ("team-a", "team-b"):
        body = make_body(VIRTUAL_MACHINE, "vm", SPEC, namespace=namespace)
        body["status"] = {"id": "srv-gone", "phase": "Running"}  # its server was deleted
        ctl.observe("VirtualMachine", "ADDED", body)
    return ctl


@pytest.mark.parametrize(
    "error",
    [
        TerminalError("CredentialsInvalid", "Secret team-a/kumo-cloud-credentials: not YAML"),
        RuntimeError("a bug in a secret reader"),
    ],
)
def test_a_namespace_credentials_fault_stays_in_that_namespace(error: Exception) -> None:
    ctl = two_namespaces(error)
    asyncio.run(ctl.process(Key("VirtualMachine", "team-a", "vm")))
    status = ctl.store.get("VirtualMachine", "team-a", "vm")["status"]
    assert status["conditions"][0]["reason"] == "CredentialsInvalid"
    asyncio.run(ctl.process(Key("VirtualMachine", "team-b", "vm")))
    assert ctl.store.get("VirtualMachine", "team-b", "vm")["status"]["phase"] == "Building"


def test_a_controller_stopped_mid_reconcile_resumes_every_key_when_started_again() -> None:
    """Leadership lost and regained in one process: the cancelled key is not stuck."""

    async def scenario() -> list[str]:
        ctl = controller()
        seen: list[str] = []
        block = asyncio.Event()

        async def process(key: Key) -> None:
            seen.append(key.name)
            if len(seen) == 1:
                await block.wait()  # in flight when leadership is lost

        ctl.process = process  # type: ignore[method-assign]
        ctl.queue.add(Key("VirtualMachine", "default", "a"))
        ctl.start()
        await until(lambda: seen, "a is in flight")
        await ctl.stop(grace=0)
        ctl.start()
        await until(lambda: len(seen) >= 2, "a is taken again after the restart")
        await ctl.stop(grace=0)
        return seen

    assert asyncio.run(asyncio.wait_for(scenario(), 5)) == ["a", "a"]


def test_the_sweep_starts_each_term_of_leadership_from_nothing() -> None:
    """Its clocks go with leadership; a new term judges only what is listed after it
    began (the sweep asks the watch ``synced_since`` that moment)."""
    from kumo.runtime.sweep import Target

    async def scenario() -> tuple[float, float]:
        ctl = controller()
        now = [10.0]
        ctl.sweeper.clock = lambda: now[0]
        ctl.start()
        first = ctl.sweeper.leading_since
        ctl.sweeper.targets[1] = Target(cloud=None)
        await ctl.stop(grace=0)
        assert ctl.sweeper.targets == {}, "forgotten when leadership is lost"
        now[0] = 20.0
        ctl.start()
        second = ctl.sweeper.leading_since
        await ctl.stop(grace=0)
        return first, second

    assert asyncio.run(scenario()) == (10.0, 20.0)


class WatchedCloud:
    """A cloud whose watch runs until cancelled, in project ``p-1``."""

    class Watch:
        def __init__(self) -> None:
            self.poked: list[str] = []

        async def run(self, notify: Any) -> None:
            await asyncio.Event().wait()

        async def synced(self) -> None:
            return None

        def poke(self, service: str) -> None:
            self.poked.append(service)

    def __init__(self) -> None:
        self.watch = self.Watch()

    async def project_id(self) -> str:
        return "p-1"


def test_notices_reach_a_running_watch_of_their_project_and_no_stopped_one() -> None:
    from kumo.cloud.notifications import Notice, NoticeBoard

    notice = Notice("instance.delete.end", "compute", "p-1", "server-1")

    async def scenario() -> tuple[int, int]:
        board = NoticeBoard()
        ctl = controller()
        ctl.notices = board
        cloud = WatchedCloud()
        await ctl._watching(cloud)
        await ctl._watching(cloud)  # every reconcile asks; the watch starts once
        running = board.deliver(notice)
        await ctl.stop()  # a standby's watches do not run: nothing to poke
        return running, board.deliver(notice)  # from the moment stop() returns

    assert asyncio.run(scenario()) == (1, 0)


def test_a_vm_whose_turn_to_build_came_is_enqueued_without_counting_as_drift() -> None:
    ctl = controller()
    for name in ("a", "b"):
        ctl.observe("VirtualMachine", "ADDED", make_body(VIRTUAL_MACHINE, name, SPEC))
    ctl.queue = WorkQueue()
    uid_b = ctl.store.get("VirtualMachine", "default", "b")["metadata"]["uid"]
    drifted = metrics.DRIFTED.labels("VirtualMachine")._value.get()
    assert ctl.cloud_changed(set(), set(), {uid_b, "uid-of-nobody"}) == []
    assert list(ctl.queue._due) == [Key("VirtualMachine", "default", "b")]
    assert metrics.DRIFTED.labels("VirtualMachine")._value.get() == drifted


class Waiter:
    """A VirtualMachine actuator whose cloud is always still busy: every pass asks to
    look again in 2 s and changes nothing."""

    info = VIRTUAL_MACHINE

    async def reconcile(self, ctx: Any, obj: Any, spec: Any) -> Any:
        return Result.waiting("Building", "Building", "server is building", after=2.0)

    async def finalize(self, ctx: Any, obj: Any, spec: Any) -> Any:
        return Result.waiting("Deleting", "Deleting", "server is being deleted", after=2.0)

    def dependents(self, kind: str, body: Any, store: Any) -> list[Key]:
        return []


def test_a_deletion_poll_that_changes_nothing_backs_off_and_any_event_resets_it() -> None:
    """Only deletions back off; a live object's wait keeps the delay it asks for (what it
    waits for may be something no watch reports, e.g. a new server's port)."""
    ctl = Controller([Waiter()], None, OneCloud())
    ctl.kube = FakeKube(ctl.store)
    key = Key("VirtualMachine", "default", "vm")
    body = make_body(VIRTUAL_MACHINE, "vm", SPEC)
    ctl.observe("VirtualMachine", "ADDED", body)

    def delays(passes: int) -> list[int]:
        return _delays(ctl, key, passes)

    assert delays(8) == [2] * 8, "a live object does not back off"
    body = json.loads(json.dumps(ctl.store.get("VirtualMachine", "default", "vm")))
    body["metadata"]["deletionTimestamp"] = "2026-11-25T00:00:00Z"
    body["metadata"]["finalizers"] = ["virtualmachine.kumo.dev/finalizer"]
    body["metadata"]["resourceVersion"] = str(int(body["metadata"]["resourceVersion"]) + 1)
    ctl.observe("VirtualMachine", "MODIFIED", body)
    assert delays(8) == [2, 2, 2, 4, 8, 16, 16, 16]
    uid = body["metadata"]["uid"]
    ctl.cloud_changed({uid}, set())  # the watch saw its server change
    assert delays(5) == [2, 2, 2, 4, 8]
    ctl.observe("VirtualMachine", "MODIFIED", {**body, "spec": {**SPEC, "description": "x"}})
    assert delays(1) == [2]


def test_events_and_passes_copy_bodies_without_copy_deepcopy(monkeypatch: Any) -> None:
    """The controller copies a body per event and per pass; with a group's or a pool's
    status listing every member, copy.deepcopy was a third of Kumo's CPU per event."""
    ctl = Controller([Waiter()], None, OneCloud())
    ctl.kube = FakeKube(ctl.store)
    body = make_body(VIRTUAL_MACHINE, "vm", SPEC)
    body["status"] = {"members": [{"name": f"m{i}", "ip": "10.0.0.1"} for i in range(3)]}

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("copy.deepcopy called")

    monkeypatch.setattr(copy, "deepcopy", forbidden)
    ctl.observe("VirtualMachine", "ADDED", body)
    cached = ctl.store.get("VirtualMachine", "default", "vm")
    assert cached == body and cached is not body
    assert cached["status"]["members"][0] is not body["status"]["members"][0]
    monkeypatch.undo()
    odd = {"a": [1, {"b": (1, [2])}], "n": None}
    copied = copy_body(odd)
    assert copied == odd and copied["a"][1]["b"][1] is not odd["a"][1]["b"][1]


def test_a_burst_of_member_changes_costs_the_group_one_pass() -> None:
    """The group's pass over all its members waits coalesce_seconds after a member's
    change: its members turning ACTIVE one after another make one pass, not one each."""
    ctl = controller()
    group = make_body(VIRTUAL_MACHINE_GROUP, "g", {"template": SPEC})
    ctl.observe("VirtualMachineGroup", "ADDED", group)
    clock = ManualClock()
    ctl.queue = WorkQueue(clock=clock)
    first_member_at = clock.now
    for i in range(20):
        member = member_of_g(f"g-{i}")
        ctl.observe("VirtualMachine", "ADDED", member)
        clock.advance(0.01)  # the members' events come one after another
    key = Key("VirtualMachineGroup", "default", "g")
    assert ctl.queue._due[key] == (first_member_at + 0.5, False), "the first change's wait"
    assert len(ctl.queue._heaps[1]) == 21, "one entry for the group, one per member"


def test_copy_body_copies_plain_bodies_in_one_c_round_trip(monkeypatch: Any) -> None:
    """A body of plain builtins is copied by one marshal round trip (C), not a walk per
    node; anything marshal refuses (a dict subclass, a datetime) still takes the walk,
    and either way nothing mutable is shared with the original."""
    import datetime
    import marshal

    from kumo.engine import objects

    walked: list[Any] = []
    original_walk = objects._copy_walk

    def walk(value: Any) -> Any:
        walked.append(value)
        return original_walk(value)

    monkeypatch.setattr(objects, "_copy_walk", walk)
    plain = {"status": {"members": [{"name": f"m{i}", "weight": 1} for i in range(300)]}}
    copied = copy_body(plain)
    assert copied == plain and walked == []
    assert copied["status"]["members"][7] is not plain["status"]["members"][7]
    copied["status"]["members"][7]["weight"] = 0
    assert plain["status"]["members"][7]["weight"] == 1

    class Sub(dict):  # type: ignore[type-arg]
        pass

    moment = datetime.datetime(2026, 11, 25, tzinfo=datetime.UTC)
    odd = Sub(a=[{"b": 1}], when=moment)
    with pytest.raises(ValueError):
        marshal.dumps(odd)
    copied = copy_body(odd)
    assert walked and copied == odd and type(copied) is dict
    assert copied["a"][0] is not odd["a"][0] and copied["when"] == moment


def _delays(ctl: Controller, key: Key, passes: int) -> list[int]:
    """The requeue delay each of ``passes`` passes of ``key`` asks for (rounded)."""
    found = []
    for _ in range(passes):
        clock = ManualClock()
        ctl.queue = WorkQueue(clock=clock)
        asyncio.run(ctl.process(key))
        due = ctl.queue.next_due()
        assert due is not None
        found.append(round(due - clock.now))
    return found


def test_a_building_vm_backs_off_its_polls_and_the_watch_wakes_it() -> None:
    """A VM whose server builds waits on what the cloud watch reports (its pass reads
    the watch's cache): its unchanged polls stretch up to 60 s instead of one every 2 s
    while Nova works through a fleet; the watch's report of its server resets that."""
    ctl = controller()
    key = Key("VirtualMachine", "default", "vm")
    ctl.observe("VirtualMachine", "ADDED", make_body(VIRTUAL_MACHINE, "vm", SPEC))
    assert _delays(ctl, key, 2) == [2, 2]  # finalizer + server created, then building
    body = ctl.store.get("VirtualMachine", "default", "vm")
    assert body is not None and body["status"]["phase"] == "Building"
    assert _delays(ctl, key, 8) == [2, 4, 8, 16, 32, 60, 60, 60]
    ctl.cloud_changed({body["metadata"]["uid"]}, set())  # the watch saw its server change
    assert _delays(ctl, key, 4) == [2, 2, 2, 4]
    server = next(iter(ctl.clouds.cloud.servers.values()))
    server.update(status="ACTIVE", task_state=None, host="host-a")
    ctl.cloud_changed({body["metadata"]["uid"]}, set())
    ctl.queue = WorkQueue()
    asyncio.run(ctl.process(key))
    body = ctl.store.get("VirtualMachine", "default", "vm")
    assert body is not None and body["status"]["phase"] == "Running"


def test_only_the_waits_a_kind_declares_watched_back_off() -> None:
    """``watched_waits`` names the waits that back off: a live object waiting on
    anything else (what no watch reports) keeps asking every 2 s."""

    class Watched(Waiter):
        watched_waits = frozenset({"Building"})

    class Unwatched(Waiter):
        watched_waits = frozenset({"SomethingElse"})

    for actuator, expected in ((Watched(), [2, 2, 2, 4, 8, 16]), (Unwatched(), [2] * 6)):
        ctl = Controller([actuator], None, OneCloud())
        ctl.kube = FakeKube(ctl.store)
        ctl.observe("VirtualMachine", "ADDED", make_body(VIRTUAL_MACHINE, "vm", SPEC))
        assert _delays(ctl, Key("VirtualMachine", "default", "vm"), 6) == expected


def test_a_deleting_vm_waiting_for_nova_backs_off_to_the_watched_cap() -> None:
    """A VM whose server Nova is deleting waits on what the watch reports (the server
    going): its polls stretch up to 60 s, not 16 s; a wait the kind does not declare
    watched (the Waiter's) keeps the deletion cap."""
    ctl = controller()
    key = Key("VirtualMachine", "default", "vm")
    ctl.observe("VirtualMachine", "ADDED", make_body(VIRTUAL_MACHINE, "vm", SPEC))
    _delays(ctl, key, 2)  # finalizer, server created
    body = json.loads(json.dumps(ctl.store.get("VirtualMachine", "default", "vm")))
    body["metadata"]["deletionTimestamp"] = "2026-11-25T00:00:00Z"
    body["metadata"]["resourceVersion"] = str(int(body["metadata"]["resourceVersion"]) + 1)
    ctl.observe("VirtualMachine", "MODIFIED", body)
    delays = _delays(ctl, key, 9)
    assert delays == [2, 2, 2, 4, 8, 16, 32, 60, 60]
    server = next(iter(ctl.clouds.cloud.servers.values()))
    assert server["status"] == "DELETING"  # FakeServers shows it until it is gone
    assert (
        ctl.store.get("VirtualMachine", "default", "vm")["status"]["conditions"][0]["reason"]
        == "Deleting"
    )


@pytest.mark.parametrize(
    ("replicas", "wait"), [(None, 0.5), (20, 0.5), (100, 0.5), (300, 1.5), (1000, 2.0)]
)
def test_a_bigger_group_coalesces_its_member_changes_longer_up_to_two_seconds(
    replicas: int | None, wait: float
) -> None:
    """A group's pass costs O(members) and its members change one at a time, so the wait
    before the pass a member's change asks grows with spec.replicas above 100 members,
    bounded at 2 s (what it delays is the group's status and next step, no pool member)."""
    ctl = controller()
    spec: dict[str, Any] = {"template": SPEC}
    if replicas is not None:
        spec["replicas"] = replicas
    group = make_body(VIRTUAL_MACHINE_GROUP, "g", spec)
    assert _group_wait_after_a_member_change(ctl, group) == wait


def test_a_big_group_in_a_rollout_keeps_the_short_wait() -> None:
    """A rollout's steps each wait for a member's change (a new one Ready): while the
    group's status says members are not up to date, it waits 0.5 s whatever its size."""
    ctl = controller()
    group = make_body(VIRTUAL_MACHINE_GROUP, "g", {"template": SPEC, "replicas": 300})
    group["status"] = {"replicas": 301, "updatedReplicas": 40}
    assert _group_wait_after_a_member_change(ctl, group) == 0.5


def _group_wait_after_a_member_change(ctl: Any, group: dict[str, Any]) -> float:
    """Seconds until the pass of the group ``g`` that its member ``g-0`` appearing asks."""
    ctl.observe("VirtualMachineGroup", "ADDED", group)
    clock = ManualClock()
    ctl.queue = WorkQueue(clock=clock)
    member = member_of_g("g-0")
    ctl.observe("VirtualMachine", "ADDED", member)
    due, _ = ctl.queue._due[Key("VirtualMachineGroup", "default", "g")]
    return float(due - clock.now)


def member_of_g(name: str) -> dict[str, Any]:
    """A VirtualMachine body owned by the group ``g`` (uid ``uid-g``)."""
    return make_body(
        VIRTUAL_MACHINE,
        name,
        SPEC,
        ownerReferences=[{"kind": "VirtualMachineGroup", "name": "g", "uid": "uid-g"}],
    )


# -- metrics -------------------------------------------------------------------------------------


def _value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_failed_pass_counts_as_an_error_outcome() -> None:
    ctl = controller()
    key = Key("VirtualMachine", "default", "vm")
    spec = {**SPEC, "initScript": {"configMapRef": {"name": "missing", "key": "s"}}}
    ctl.observe("VirtualMachine", "ADDED", make_body(VIRTUAL_MACHINE, "vm", spec))
    before = _value("kumo_reconciles_total", kind="VirtualMachine", outcome="error")
    asyncio.run(ctl.process(key))
    assert _value("kumo_reconciles_total", kind="VirtualMachine", outcome="error") == before + 1


def test_the_backlog_is_the_objects_due_now_and_the_age_of_the_oldest() -> None:
    now = [1000.0]
    queue = WorkQueue(clock=lambda: now[0])
    queue.add("first", after=0.0)
    queue.add("second", after=20.0)
    queue.add("later", after=300.0)
    now[0] += 30
    assert queue.backlog() == (2, 30.0)
    assert WorkQueue().backlog() == (0, 0.0)

    ctl = controller()
    ctl.observe("VirtualMachine", "ADDED", make_body(VIRTUAL_MACHINE, "vm", SPEC))
    ctl.observe("VirtualMachine", "ADDED", make_body(VIRTUAL_MACHINE, "vm2", SPEC))
    assert _value("kumo_queue_due") == 2
    assert _value("kumo_queue_oldest_due_seconds") >= 0


def test_objects_are_counted_per_kind_by_their_true_conditions() -> None:
    ctl = controller()
    key = Key("VirtualMachine", "default", "vm")
    ctl.observe("VirtualMachine", "ADDED", make_body(VIRTUAL_MACHINE, "vm", SPEC))
    bad = {**SPEC, "initScript": {"configMapRef": {"name": "missing", "key": "s"}}}
    ctl.observe("VirtualMachine", "ADDED", make_body(VIRTUAL_MACHINE, "stuck", bad))
    asyncio.run(ctl.process(key))
    ctl.clouds.cloud.settle()
    asyncio.run(ctl.process(key))
    asyncio.run(ctl.process(Key("VirtualMachine", "default", "stuck")))

    def count(condition: str) -> float:
        return _value("kumo_objects", kind="VirtualMachine", condition=condition)

    assert (count("Ready"), count("Stalled")) == (1, 1)
    assert _value("kumo_objects", kind="KeyPair", condition="Ready") == 0


def test_a_reconcile_request_runs_a_held_object_now_and_is_recorded() -> None:
    """``kumo.dev/reconcile-requested-at`` wakes an object whose permanent error is held
    (a cloud change would not), and its pass says it served the request."""
    ctl = controller()
    key = Key("VirtualMachine", "default", "vm")
    spec = {**SPEC, "initScript": {"configMapRef": {"name": "boot", "key": "s"}}}
    ctl.observe("VirtualMachine", "ADDED", make_body(VIRTUAL_MACHINE, "vm", spec))
    asyncio.run(ctl.process(key))  # ConfigMapNotFound: held for a minute
    now = [1000.0]
    ctl.queue = WorkQueue(clock=lambda: now[0])
    ctl.queue.add(key, 60.0)
    ctl.store.put("ConfigMap", _config_map({"s": "echo hi"}))  # fixed by hand
    body = copy.deepcopy(ctl.store.get("VirtualMachine", "default", "vm"))
    body["metadata"]["annotations"] = {"kumo.dev/reconcile-requested-at": "now-1"}
    ctl.observe("VirtualMachine", "MODIFIED", body)
    assert ctl.queue._due[key][0] <= now[0], "due now, not after the hold"
    asyncio.run(ctl.process(key))
    status = ctl.store.get("VirtualMachine", "default", "vm")["status"]
    assert status["lastHandledReconcileAt"] == "now-1"
    assert status["phase"] == "Building"

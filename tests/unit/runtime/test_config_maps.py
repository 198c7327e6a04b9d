"""The ConfigMaps objects read are followed by name: a change re-queues their readers,
and nothing but them is read."""

from __future__ import annotations

import asyncio
from typing import Any

from kumo.api.kinds import KEY_PAIR, VIRTUAL_MACHINE
from kumo.engine.objects import Key
from kumo.runtime.config_maps import ConfigMapFollower, FollowingKube, referenced
from kumo.runtime.controller import Controller
from kumo.runtime.store import MemoryStore
from tests.unit.fakes import FakeKube, make_body
from tests.unit.runtime.test_controller import SPEC, OneCloud, compute_only
from tests.unit.waiting import until


class CountingKube(FakeKube):
    """FakeKube that counts the ConfigMaps read by name."""

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self.reads: list[tuple[str, str]] = []

    async def get_config_map(self, namespace: str, name: str) -> Any:
        self.reads.append((namespace, name))
        return await super().get_config_map(namespace, name)


def config_map(name: str, data: dict[str, str], namespace: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "data": data}


def readers() -> MemoryStore:
    """VMs and KeyPairs naming ConfigMaps (and Secrets, which are not followed)."""
    store = MemoryStore()
    for name, script in {
        "by-map": {"configMapRef": {"name": "boot", "key": "s"}},
        "by-secret": {"secretRef": {"name": "boot", "key": "s"}},
        "inline": {"value": "ls"},
    }.items():
        store.put(
            "VirtualMachine", make_body(VIRTUAL_MACHINE, name, {**SPEC, "initScript": script})
        )
    store.put(
        "VirtualMachine",
        make_body(
            VIRTUAL_MACHINE,
            "elsewhere",
            {**SPEC, "initScript": {"configMapRef": {"name": "boot", "key": "s"}}},
            namespace="team-b",
        ),
    )
    for name, source in {
        "key-by-map": {"configMapRef": {"name": "ssh", "key": "pub"}},
        "key-by-secret": {"secretRef": {"name": "ssh", "key": "pub"}},
    }.items():
        store.put("KeyPair", make_body(KEY_PAIR, name, {"publicKeyFrom": source}))
    return store


def test_only_the_config_maps_objects_name_are_followed() -> None:
    assert referenced(readers()) == {
        ("default", "boot"): {Key("VirtualMachine", "default", "by-map")},
        ("team-b", "boot"): {Key("VirtualMachine", "team-b", "elsewhere")},
        ("default", "ssh"): {Key("KeyPair", "default", "key-by-map")},
    }


def test_a_changed_config_map_requeues_exactly_its_readers() -> None:
    store = readers()
    kube = CountingKube(store)
    store.put("ConfigMap", config_map("boot", {"s": "echo one"}))
    store.put("ConfigMap", config_map("ssh", {"pub": "ssh-ed25519 AAAA one"}))
    follower = ConfigMapFollower()
    assert asyncio.run(follower.follow(kube, store)) == [], "the first round sets baselines"
    assert sorted(kube.reads) == [("default", "boot"), ("default", "ssh"), ("team-b", "boot")]
    assert asyncio.run(follower.follow(kube, store)) == [], "nothing changed"

    store.put("ConfigMap", config_map("boot", {"s": "echo two"}))
    assert asyncio.run(follower.follow(kube, store)) == [Key("VirtualMachine", "default", "by-map")]
    store.put("ConfigMap", config_map("ssh", {"pub": "ssh-ed25519 AAAA two"}))
    assert asyncio.run(follower.follow(kube, store)) == [Key("KeyPair", "default", "key-by-map")]


def test_a_config_map_that_appears_or_goes_is_a_change() -> None:
    store = readers()
    kube = CountingKube(store)
    follower = ConfigMapFollower()
    asyncio.run(follower.follow(kube, store))  # none of them exists yet
    store.put("ConfigMap", config_map("ssh", {"pub": "ssh-ed25519 AAAA"}))
    assert asyncio.run(follower.follow(kube, store)) == [Key("KeyPair", "default", "key-by-map")]
    store.remove("ConfigMap", "default", "ssh")
    assert asyncio.run(follower.follow(kube, store)) == [Key("KeyPair", "default", "key-by-map")]


def test_a_change_between_a_pass_and_the_next_round_is_not_missed() -> None:
    """A pass read the old content; the follower has not read it yet: its first round
    compares with what the pass read."""
    store = readers()
    kube = CountingKube(store)
    follower = ConfigMapFollower()
    store.put("ConfigMap", config_map("boot", {"s": "echo one"}))
    asyncio.run(FollowingKube(kube, follower).get_config_map("default", "boot"))
    store.put("ConfigMap", config_map("boot", {"s": "echo two"}))
    assert Key("VirtualMachine", "default", "by-map") in asyncio.run(follower.follow(kube, store))


def test_one_reader_seeing_a_change_does_not_hide_it_from_the_others() -> None:
    store = readers()
    store.put(
        "VirtualMachine",
        make_body(
            VIRTUAL_MACHINE, "also", {**SPEC, "initScript": {"configMapRef": {"name": "boot"}}}
        ),
    )
    kube = CountingKube(store)
    follower = ConfigMapFollower()
    store.put("ConfigMap", config_map("boot", {"s": "echo one"}))
    asyncio.run(follower.follow(kube, store))
    store.put("ConfigMap", config_map("boot", {"s": "echo two"}))
    # "by-map" passes for another reason and reads the new script first:
    asyncio.run(FollowingKube(kube, follower).get_config_map("default", "boot"))
    changed = asyncio.run(follower.follow(kube, store))
    assert Key("VirtualMachine", "default", "also") in changed


def test_a_config_map_no_object_names_is_forgotten_and_never_read() -> None:
    store = readers()
    kube = CountingKube(store)
    follower = ConfigMapFollower()
    asyncio.run(follower.follow(kube, store))
    store.remove("KeyPair", "default", "key-by-map")
    kube.reads.clear()
    asyncio.run(follower.follow(kube, store))
    assert ("default", "ssh") not in kube.reads
    assert ("default", "ssh") not in follower._seen


def test_the_leader_follows_config_maps_and_requeues_a_reader_on_change() -> None:
    """The controller runs the follower while it leads, and its passes read through it."""

    async def scenario() -> None:
        ctl = Controller(compute_only(), None, OneCloud())
        ctl.kube = CountingKube(ctl.store)
        ctl.events.emit = lambda *args: None  # type: ignore[method-assign]
        ctl.workers = 0  # no worker: the queue shows what was asked
        ctl.config_maps.every = 0.01
        ctl.store.put("ConfigMap", config_map("boot", {"s": "echo one"}))
        body = make_body(
            VIRTUAL_MACHINE, "vm", {**SPEC, "initScript": {"configMapRef": {"name": "boot"}}}
        )
        ctl.store.put("VirtualMachine", body)
        ctl.start()
        key = Key("VirtualMachine", "default", "vm")
        await until(lambda: ("default", "boot") in ctl.config_maps._seen, "a first round")
        await ctl.queue.get()  # start() queued every object once
        ctl.queue.done(key)
        ctl.store.put("ConfigMap", config_map("boot", {"s": "echo two"}))
        await until(lambda: key in ctl.queue._due, "the VM re-queued by the change")
        await ctl.stop()
        assert not ctl._following, "a standby follows nothing"

    asyncio.run(scenario())

"""The object cache's indexes: what one event costs must not grow with unrelated objects."""

from __future__ import annotations

import copy
from typing import Any

from kumo.api.kinds import VIRTUAL_MACHINE, VIRTUAL_MACHINE_GROUP
from kumo.kinds.virtualmachinegroup.actuator import VirtualMachineGroupActuator
from kumo.runtime.store import MemoryStore
from tests.unit.fakes import FakeKube, World, make_body
from tests.unit.runtime.test_controller import controller

SPEC = {"image": "centos79", "flavor": "n3-1vcpu-2gb"}


def member(name: str, owner: str, namespace: str = "default", rv: str = "1") -> dict[str, Any]:
    body = make_body(
        VIRTUAL_MACHINE,
        name,
        SPEC,
        namespace=namespace,
        ownerReferences=[{"kind": "VirtualMachineGroup", "name": owner, "uid": f"uid-{owner}"}],
    )
    body["metadata"]["resourceVersion"] = rv
    return body


def names(bodies: list[dict[str, Any]]) -> list[str]:
    return [b["metadata"]["name"] for b in bodies]


def test_owned_by_follows_puts_owner_changes_and_removals() -> None:
    store = MemoryStore()
    for i in range(3):
        store.put("VirtualMachine", member(f"a-{i}", "a"))
    store.put("VirtualMachine", member("b-0", "b"))
    store.put("VirtualMachine", member("x-0", "a", namespace="other"))
    assert names(store.owned_by("VirtualMachine", "uid-a")) == ["a-0", "a-1", "a-2", "x-0"]
    assert store.owned_by("VirtualMachineGroup", "uid-a") == []
    orphaned = member("a-1", "a", rv="2")
    orphaned["metadata"]["ownerReferences"] = []
    store.put("VirtualMachine", orphaned)
    store.put("VirtualMachine", member("a-2", "a", rv="2"))  # an update keeps its place
    store.remove("VirtualMachine", "other", "x-0")
    assert names(store.owned_by("VirtualMachine", "uid-a")) == ["a-0", "a-2"]
    store.put("VirtualMachine", member("a-0", "a", rv="1"))  # older: ignored, index kept
    assert names(store.owned_by("VirtualMachine", "uid-b")) == ["b-0"]


def test_labelled_follows_puts_label_changes_and_removals() -> None:
    store = MemoryStore()

    def vm(name: str, group: str | None, namespace: str = "default", rv: str = "1") -> Any:
        body = make_body(
            VIRTUAL_MACHINE, name, SPEC, namespace=namespace, labels={"kumo.dev/group": group}
        )
        if group is None:
            body["metadata"]["labels"] = {}
        body["metadata"]["resourceVersion"] = rv
        return body

    for i in range(3):
        store.put("VirtualMachine", vm(f"a-{i}", "a"))
    store.put("VirtualMachine", vm("b-0", "b"))
    store.put("VirtualMachine", vm("a-0", "a", namespace="other"))
    label = ("kumo.dev/group", "a")
    assert names(store.labelled("VirtualMachine", "default", *label)) == ["a-0", "a-1", "a-2"]
    assert names(store.labelled("VirtualMachine", "other", *label)) == ["a-0"]
    assert store.labelled("VirtualMachineGroup", "default", *label) == []
    store.put("VirtualMachine", vm("a-1", "b", rv="2"))  # relabelled
    store.put("VirtualMachine", vm("a-2", None, rv="2"))  # label removed
    store.remove("VirtualMachine", "other", "a-0")
    assert names(store.labelled("VirtualMachine", "default", *label)) == ["a-0"]
    assert names(store.labelled("VirtualMachine", "default", "kumo.dev/group", "b")) == [
        "b-0",
        "a-1",
    ]
    assert store.labelled("VirtualMachine", "other", *label) == []
    store.put("VirtualMachine", vm("a-1", "a", rv="1"))  # older: ignored, index kept
    assert names(store.labelled("VirtualMachine", "default", *label)) == ["a-0"]
    latest = store.labelled("VirtualMachine", "default", *label)[0]
    assert latest is store.get("VirtualMachine", "default", "a-0"), "the current body"


def test_by_uid_and_list_are_indexed_by_kind_and_namespace() -> None:
    store = MemoryStore()
    store.put("VirtualMachine", member("a-0", "a"))
    store.put("VirtualMachine", member("a-1", "a", namespace="other"))
    group = make_body(VIRTUAL_MACHINE_GROUP, "a", {"template": SPEC})
    store.put("VirtualMachineGroup", group)
    found = store.by_uid("uid-a")
    assert found is not None and found[0] == "VirtualMachineGroup"
    assert names(store.list("VirtualMachine")) == ["a-0", "a-1"]
    assert names(store.list("VirtualMachine", "other")) == ["a-1"]
    store.remove("VirtualMachineGroup", "default", "a")
    assert store.by_uid("uid-a") is None
    assert store.list("VirtualMachineGroup") == []


class NoScans(MemoryStore):
    """A store whose full listing of a kind fails: the caller must use an index."""

    def __init__(self, kinds: set[str]) -> None:
        super().__init__()
        self.forbidden = kinds

    def list(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        if kind in self.forbidden:
            raise AssertionError(f"listed every {kind}")
        return super().list(kind, namespace)


def test_a_cloud_watch_report_finds_its_owners_without_listing_every_object() -> None:
    ctl = controller()
    store = NoScans({VIRTUAL_MACHINE.kind, VIRTUAL_MACHINE_GROUP.kind})
    ctl.store = store
    for i in range(5):
        store.put("VirtualMachine", member(f"g-{i}", "g"))
    found = ctl.cloud_changed({"uid-g-3", "uid-unknown"}, set(), woken=["uid-g-1"])
    assert [k.name for k in found] == ["g-3"]
    assert len(ctl.queue) == 2


def test_a_group_pass_reads_its_members_without_listing_every_vm() -> None:
    """Ten groups in a namespace: a pass of one reads its own members by index."""
    world = World()
    store = NoScans(set())
    world.store = store
    world.kube = FakeKube(store)
    spec = {"replicas": 3, "haPolicy": "none", "template": SPEC}
    actuator = VirtualMachineGroupActuator()
    for g in range(10):
        world.add(VIRTUAL_MACHINE_GROUP, f"g{g}", copy.deepcopy(spec))
    for g in range(10):
        world.run(actuator, f"g{g}")
    store.forbidden = {"VirtualMachine"}
    world.run(actuator, "g0")
    status = world.obj(VIRTUAL_MACHINE_GROUP, "g0").status
    assert status["phase"] != "Error", status["conditions"]
    assert status["replicas"] == 3
    assert len(status["members"]) == 3

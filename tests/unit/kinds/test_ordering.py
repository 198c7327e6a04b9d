"""A DNSRecord being deleted goes before the object it points at."""

from __future__ import annotations

import asyncio

import pytest

from kumo.api.kinds import DNS_RECORD, VIRTUAL_MACHINE
from kumo.engine.objects import Key, Obj
from kumo.engine.reconciler import Engine
from kumo.kinds import ordering, registry
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from kumo.runtime.store import MemoryStore
from tests.unit.fakes import World

SPEC = {"image": "centos79", "flavor": "n3-1vcpu-2gb"}
RECORD = {"zone": "z.test.", "name": "api", "virtualMachineRef": "vm"}
NOW = "2099-01-01T00:00:00Z"  # deletion "just started", whatever the clock says


def deleting_vm(world: World) -> None:
    world.add(VIRTUAL_MACHINE, "vm", SPEC, finalizers=["virtualmachine.kumo.dev/finalizer"])
    asyncio.run(
        Engine().run(VirtualMachineActuator(), world.ctx(), world.obj(VIRTUAL_MACHINE, "vm"))
    )
    world.store.get("VirtualMachine", "default", "vm")["metadata"]["deletionTimestamp"] = NOW


def finalize(world: World) -> None:
    asyncio.run(
        Engine().run(VirtualMachineActuator(), world.ctx(), world.obj(VIRTUAL_MACHINE, "vm"))
    )


def test_target_waits_for_a_record_being_deleted() -> None:
    world = World()
    deleting_vm(world)
    world.add(
        DNS_RECORD,
        "rec",
        RECORD,
        finalizers=["dnsrecord.kumo.dev/finalizer"],
        deletionTimestamp=NOW,
    )
    finalize(world)
    assert len(world.cloud.live()) == 1
    ready = world.obj(VIRTUAL_MACHINE, "vm").status["conditions"][0]
    assert ready["reason"] == "WaitingForDNS" and "rec" in ready["message"]
    world.store.remove("DNSRecord", "default", "rec")
    finalize(world)
    assert world.cloud.live() == {}, "the server is being deleted"


def test_a_record_that_stays_does_not_block_its_target() -> None:
    world = World()
    deleting_vm(world)
    world.add(DNS_RECORD, "rec", RECORD, finalizers=["dnsrecord.kumo.dev/finalizer"])
    finalize(world)
    assert world.cloud.live() == {}, "the server is being deleted"


def test_record_events_resume_the_target() -> None:
    world = World()
    body = world.add(DNS_RECORD, "rec", RECORD)
    assert VirtualMachineActuator().dependents("DNSRecord", body, world.store) == [
        Key("VirtualMachine", "default", "vm")
    ]


def going(name: str, **spec: str) -> dict:
    meta = {"name": name, "namespace": "default", "deletionTimestamp": NOW}
    return {"metadata": meta | {"finalizers": ["f"]}, "spec": spec}


def test_referrers_going_are_those_being_deleted_that_name_the_target() -> None:
    store = MemoryStore()
    store.put("DNSRecord", going("b", virtualMachineRef="vm"))
    store.put("DNSRecord", going("a", virtualMachineRef="vm"))
    store.put("DNSRecord", going("other", virtualMachineRef="vm2"))
    store.put("DNSRecord", going("by-group", virtualMachineGroupRef="vm"))  # another kind
    stays = going("stays", virtualMachineRef="vm")
    del stays["metadata"]["deletionTimestamp"]
    store.put("DNSRecord", stays)
    released = going("released", virtualMachineRef="vm")
    released["metadata"]["finalizers"] = []
    store.put("DNSRecord", released)
    vm = Obj(VIRTUAL_MACHINE, {"metadata": {"name": "vm", "namespace": "default"}})
    assert ordering.referrers_going(store, vm) == {"DNSRecord": ["a", "b"]}
    waiting = ordering.wait_for_referrers(store, vm)
    assert waiting is not None and not waiting.done
    assert (waiting.reason, waiting.message) == ("WaitingForDNS", "DNSRecord(s) a, b go first")
    vm.meta["deletionTimestamp"] = "2000-01-01T00:00:00Z"  # waited long enough
    assert ordering.referrers_going(store, vm) == {}
    assert ordering.wait_for_referrers(store, vm) is None


@pytest.mark.parametrize(
    ("target", "field"),
    [
        ("VirtualMachine", "virtualMachineRef"),
        ("VirtualMachineGroup", "virtualMachineGroupRef"),
        ("LoadBalancer", "loadBalancerRef"),
    ],
)
def test_a_record_wakes_the_target_it_names_and_only_that(target: str, field: str) -> None:
    """What each target kind's actuator wrote by hand before (``kind == "DNSRecord"``)."""
    world = World()
    body = world.add(DNS_RECORD, "rec", {"zone": "z.test.", "name": "api", field: "t"})
    (actuator,) = [a for a in registry.actuators() if a.info.kind == target]
    assert ordering.unblocked_by("DNSRecord", body, target) == [Key(target, "default", "t")]
    assert actuator.dependents("DNSRecord", body, world.store) == [Key(target, "default", "t")]
    other = world.add(DNS_RECORD, "lit", {"zone": "z.test.", "name": "x", "values": ["1.2.3.4"]})
    assert actuator.dependents("DNSRecord", other, world.store) == []
    assert ordering.unblocked_by("Share", body, target) == []  # Shares do not go first


# -- LoadBalancer → Share → server ---------------------------------------------------------


def test_shares_holding_names_the_shares_whose_status_lists_the_vm() -> None:
    store = MemoryStore()
    for name, vms in (("data", ["web-1", None]), ("logs", ["web-2"]), ("other", [])):
        store.put(
            "Share",
            {
                "metadata": {"name": name, "namespace": "default"},
                "status": {"accessRules": [{"accessTo": "x", "virtualMachine": v} for v in vms]},
            },
        )
    vm = {
        "metadata": {
            "name": "web-1",
            "namespace": "default",
            "deletionTimestamp": "2099-01-01T00:00:00Z",
        }
    }
    assert ordering.shares_holding(store, Obj(VIRTUAL_MACHINE, vm)) == ["data"]
    vm["metadata"]["deletionTimestamp"] = "2000-01-01T00:00:00Z"  # waited long enough
    assert ordering.shares_holding(store, Obj(VIRTUAL_MACHINE, vm)) == []


def test_load_balancers_holding_reads_pool_members_from_status() -> None:
    store = MemoryStore()
    store.put(
        "LoadBalancer",
        {
            "metadata": {"name": "lb", "namespace": "default"},
            "status": {"ports": [{"members": [{"name": "web-1"}]}, {"members": []}]},
        },
    )
    assert ordering.load_balancers_holding(store, "default", "web-1") == ["lb"]
    assert ordering.load_balancers_holding(store, "default", "web-2") == []

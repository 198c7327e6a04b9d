"""The unit tests' fakes answer like what they stand in for: the adapter classes'
method signatures, Nova's asynchronous delete, the API server's resourceVersion check."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from kumo import ports
from kumo.api.kinds import VIRTUAL_MACHINE
from kumo.cloud import model
from kumo.cloud.adapter import OpenStackCloud
from kumo.cloud.compute import ComputeCalls
from kumo.cloud.designate import DesignateCalls
from kumo.cloud.floatingips import FloatingIPCalls
from kumo.cloud.keypairs import KeyPairCalls
from kumo.cloud.networks import NetworkCalls
from kumo.cloud.neutron import NeutronCalls
from kumo.cloud.octavia import OctaviaCalls
from kumo.cloud.shares import ManilaCalls
from kumo.cloud.volumes import CinderCalls
from kumo.engine.errors import TransientError
from kumo.kinds import registry
from tests.unit.fakes import FakeNova, World
from tests.unit.kinds.dnsrecord.fake_designate import FakeDesignate
from tests.unit.kinds.floatingip.fake_floatingips import FakeFloatingIPs
from tests.unit.kinds.keypair.fake_keypairs import FakeKeyPairs
from tests.unit.kinds.loadbalancer.fake_octavia import FakeOctavia
from tests.unit.kinds.network.fake_networks import FakeNetworks
from tests.unit.kinds.securitygroup.fake_neutron import FakeNeutron
from tests.unit.kinds.share.fake_manila import FakeManila
from tests.unit.kinds.volume.fake_cinder import FakeCinder

#: Fake-only helpers that tests call to play the cloud or a user; everything else a fake
#: defines must exist on the adapter class with the same signature (or, for a read a
#: kind's actuator makes of another service, on the whole adapter).
FAKES = [
    (FakeNova, ComputeCalls, {"settle", "schedule", "place", "live", "add_server", "tick"}),
    (
        FakeOctavia,
        OctaviaCalls,
        {"only", "add_lb", "add_member", "remove_member_out_of_band", "delete_out_of_band"},
    ),
    (FakeDesignate, DesignateCalls, {"only", "add", "edit_out_of_band", "delete_out_of_band"}),
    (FakeManila, ManilaCalls, {"only", "add_rule", "active"}),
    (FakeNeutron, NeutronCalls, {"only", "add_rule_out_of_band", "delete_rule_out_of_band"}),
    (FakeKeyPairs, KeyPairCalls, {"add", "delete_out_of_band"}),
    (
        FakeFloatingIPs,
        FloatingIPCalls,
        {
            "only",
            "add_port",
            "drop_device",
            "add_fip",
            "disassociate_out_of_band",
            "delete_out_of_band",
        },
    ),
    (
        FakeCinder,
        CinderCalls,
        {"only_volume", "add_volume", "hide", "show", "delete_volume_out_of_band"},
    ),
    (
        FakeNetworks,
        NetworkCalls,
        {"only_network", "add_port", "add_network", "add_router", "delete_subnet_out_of_band"},
    ),
]


@pytest.mark.parametrize(
    ("fake", "real", "helpers"), FAKES, ids=lambda x: getattr(x, "__name__", "")
)
def test_fakes_have_the_adapters_signatures(fake: type, real: type, helpers: set[str]) -> None:
    checked = []
    for name, method in vars(fake).items():
        if name.startswith("_") or not inspect.isfunction(method) or name in helpers:
            continue
        adapter = getattr(real, name, None) or getattr(OpenStackCloud, name, None)
        assert adapter is not None, f"{fake.__name__}.{name}: no such method on {real.__name__}"
        assert inspect.signature(method) == inspect.signature(adapter), name
        assert inspect.iscoroutinefunction(method) == inspect.iscoroutinefunction(adapter), name
        checked.append(name)
    assert checked, "nothing compared"
    stale = {h for h in helpers if h not in vars(fake)}
    assert not stale, f"helpers listed here but gone from {fake.__name__}: {stale}"


def test_the_fakes_cover_every_service_a_kind_uses() -> None:
    """FAKES holds one fake per cloud service (not per kind): a record that names a new
    service in ``services`` needs a fake of it here."""
    common = set(ports.declared(ports.CloudPort))

    def serves(real: type, port: type) -> bool:
        return set(ports.declared(port)) - common <= set(dir(real))

    covered = {
        s for _, real, _ in FAKES for s, port in ports.SERVICES.items() if serves(real, port)
    }
    assert {s for record in registry.RECORDS for s in record.services} <= covered


# -- FakeNova: a deleted server lingers as DELETED until Nova has finished -------------


def test_a_deleted_server_stays_listed_until_the_next_settle() -> None:
    nova = FakeNova()
    server = nova.add_server("vm", tags=model.marker_tags("uid-vm"))
    nova.settle()

    asyncio.run(nova.delete_server(server.id))
    assert nova.servers[server.id]["status"] == "DELETING"
    assert nova.servers[server.id]["task_state"] == "deleting"
    deleting = asyncio.run(nova.get_server(server.id))
    assert deleting is not None and deleting.status == "DELETING", "like the adapter"
    assert asyncio.run(nova.list_owned_servers("uid-vm")) == [], "like the adapter"
    (listed,), _ = asyncio.run(nova.list_servers_since(None))
    assert (listed.id, listed.status, listed.addresses) == (server.id, "DELETING", [])

    nova.settle()
    assert nova.servers == {}
    assert asyncio.run(nova.list_servers_since(None))[0] == []
    (gone,), _ = asyncio.run(nova.list_servers_since("2026-01-01T00:00:00Z"))
    assert (gone.id, gone.status) == (server.id, "DELETED"), "changes-since shows deletions"


def test_deleting_twice_or_a_missing_server_is_fine() -> None:
    nova = FakeNova()
    server = nova.add_server("vm", tags=[])
    asyncio.run(nova.delete_server(server.id))
    asyncio.run(nova.delete_server(server.id))
    asyncio.run(nova.delete_server("srv-missing"))
    assert nova.calls == ["delete_server"] * 3
    nova.settle()
    assert nova.servers == {}


def test_settle_builds_and_removes_in_one_step() -> None:
    nova = FakeNova()
    old = nova.add_server("old", tags=[])
    nova.settle()
    new = nova.add_server("new", tags=[])
    asyncio.run(nova.delete_server(old.id))
    nova.settle("ERROR")
    assert {k: s["status"] for k, s in nova.servers.items()} == {new.id: "ERROR"}


# -- FakeKube: a finalizer patch from a stale read is refused ---------------------------


def test_set_finalizers_refuses_a_stale_resource_version() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", {"image": "i", "flavor": "f"})
    stale = world.obj(VIRTUAL_MACHINE, "vm")
    asyncio.run(world.kube.patch_status(stale, {"phase": "Building"}))  # someone wrote

    with pytest.raises(TransientError) as caught:
        asyncio.run(world.kube.set_finalizers(stale, ["mine"]))
    assert caught.value.reason == "KubernetesConflict"
    assert "the object has been modified" in caught.value.message
    assert world.obj(VIRTUAL_MACHINE, "vm").finalizers == []

    fresh = world.obj(VIRTUAL_MACHINE, "vm")
    body = asyncio.run(world.kube.set_finalizers(fresh, ["mine"]))
    assert body["metadata"]["finalizers"] == ["mine"]
    assert body["metadata"]["resourceVersion"] != fresh.meta["resourceVersion"]


def test_set_finalizers_without_a_resource_version_has_no_precondition() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", {"image": "i", "flavor": "f"})
    obj = world.obj(VIRTUAL_MACHINE, "vm")
    del obj.meta["resourceVersion"]
    asyncio.run(world.kube.set_finalizers(obj, ["mine"]))
    assert world.obj(VIRTUAL_MACHINE, "vm").finalizers == ["mine"]

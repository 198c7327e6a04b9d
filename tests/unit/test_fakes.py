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
from kumo.engine.errors import TransientError
from tests.unit.fakes import FakeServers, World, fakes
from tests.unit.fakes.blockstorage import FakeBlockStorage
from tests.unit.fakes.dns import FakeDns
from tests.unit.fakes.floating_ips import FakeFloatingIPs
from tests.unit.fakes.keypairs import FakeKeyPairs
from tests.unit.fakes.loadbalancing import FakeLoadBalancing
from tests.unit.fakes.networks import FakeNetworks
from tests.unit.fakes.ports import FakePorts
from tests.unit.fakes.security_groups import FakeSecurityGroups
from tests.unit.fakes.sharedfs import FakeSharedFS

#: Fake-only helpers that tests call to play the cloud or a user; everything else a fake
#: defines must exist on the adapter with the same signature.
HELPERS: dict[type, set[str]] = {
    FakeServers: {"settle", "schedule", "place", "live", "add_server", "tick"},
    FakeLoadBalancing: {
        "only",
        "add_lb",
        "add_member",
        "remove_member_out_of_band",
        "delete_out_of_band",
    },
    FakeDns: {"only", "add", "edit_out_of_band", "delete_out_of_band"},
    FakeSharedFS: {"only", "add_rule", "active"},
    FakeSecurityGroups: {"only", "add_rule_out_of_band", "delete_rule_out_of_band"},
    FakeKeyPairs: {"add", "delete_out_of_band"},
    FakeFloatingIPs: {
        "only",
        "add_port",
        "drop_device",
        "add_fip",
        "disassociate_out_of_band",
        "delete_out_of_band",
    },
    FakeBlockStorage: {"only_volume", "add_volume", "hide", "show", "delete_volume_out_of_band"},
    FakeNetworks: {
        "only_network",
        "add_port",
        "add_network",
        "add_router",
        "delete_subnet_out_of_band",
    },
    FakePorts: {"only_port", "add_port", "bind", "unbind", "edit_out_of_band"},
}
FAKES = [(fake, OpenStackCloud, HELPERS[fake]) for fake in fakes().values()]


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


def test_every_port_has_a_fake_that_inherits_it() -> None:
    """One fake per port part (tests/unit/fakes), each inheriting its port: mypy checks
    it against the port (tests/unit/ports_conformance.py imports them all)."""
    assert set(fakes()) == set(ports.PORTS) - {ports.CloudPort}
    assert set(HELPERS) == set(fakes().values())


# -- FakeServers: a deleted server lingers as DELETED until Nova has finished -------------


def test_a_deleted_server_stays_listed_until_the_next_settle() -> None:
    nova = FakeServers()
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
    nova = FakeServers()
    server = nova.add_server("vm", tags=[])
    asyncio.run(nova.delete_server(server.id))
    asyncio.run(nova.delete_server(server.id))
    asyncio.run(nova.delete_server("srv-missing"))
    assert nova.calls == ["delete_server"] * 3
    nova.settle()
    assert nova.servers == {}


def test_settle_builds_and_removes_in_one_step() -> None:
    nova = FakeServers()
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

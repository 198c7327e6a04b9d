"""A stateful group end to end in process: the group's actuator, the Volume kind's and the
VirtualMachine kind's, on fake Nova + Cinder. Member i gets the Volume object
<group>-data-<i>; its Cinder volume follows the ordinal through server replacement,
scale-down (retained, detached) and scale-up (the same volume again)."""

from __future__ import annotations

import asyncio
from typing import Any

from kumo.api.kinds import VIRTUAL_MACHINE, VIRTUAL_MACHINE_GROUP, VOLUME
from kumo.kinds.labels import GROUP_LABEL, ORDINAL_LABEL
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from kumo.kinds.virtualmachinegroup.actuator import VirtualMachineGroupActuator
from kumo.kinds.volume.actuator import VolumeActuator
from kumo.ports.model import metadata_owner, owner_of
from tests.unit.fakes import World
from tests.unit.kinds.virtualmachine.test_volumes import Cloud

SPEC: dict[str, Any] = {
    "replicas": 2,
    "haPolicy": "none",
    "identity": "Ordinal",
    "strategy": {"maxSurge": 0, "maxUnavailable": 1},
    "availabilityZones": ["az1", "az2"],
    "template": {"image": "centos79", "flavor": "n3-1vcpu-2gb"},
    "volumeTemplates": [{"name": "data", "size": 5}],
}


class Lab:
    def __init__(self, **spec: Any) -> None:
        self.cloud = Cloud()
        self.world = World(cloud=self.cloud)
        self.world.add(VIRTUAL_MACHINE_GROUP, "g", {**SPEC, **spec})
        self.group = VirtualMachineGroupActuator()
        self.vm = VirtualMachineActuator()
        self.volume = VolumeActuator()

    def names(self, kind: str, deleting: bool = False) -> list[str]:
        return sorted(
            b["metadata"]["name"]
            for b in self.world.store.list(kind)
            if deleting or not b["metadata"].get("deletionTimestamp")
        )

    def step(self) -> None:
        """One pass of every object, then Nova and Cinder move on."""
        if self.world.store.get("VirtualMachineGroup", "default", "g") is not None:
            self.world.run(self.group, "g")
        for name in self.names("Volume", deleting=True):
            self.world.run(self.volume, name)
        for name in self.names("VirtualMachine", deleting=True):
            self.world.run(self.vm, name)
        self.cloud.settle()

    def converge(self, passes: int = 12) -> None:
        for _ in range(passes):
            self.step()

    def status(self) -> dict[str, Any]:
        return self.world.obj(VIRTUAL_MACHINE_GROUP, "g").status

    def volume_id(self, name: str) -> str:
        return str(self.world.stored("Volume", name)["status"]["id"])

    def server_of(self, member: str) -> str:
        return str(self.world.stored("VirtualMachine", member)["status"]["id"])

    def set(self, **spec: Any) -> None:
        self.world.stored("VirtualMachineGroup", "g")["spec"].update(spec)
        self.world.stored("VirtualMachineGroup", "g")["metadata"]["generation"] += 1


def test_members_get_their_own_volume_in_their_zone() -> None:
    lab = Lab()
    lab.world.run(lab.group, "g")
    # The Volume objects are made before (here: in the same pass as) their members.
    assert lab.names("Volume") == ["g-data-0", "g-data-1"]
    assert lab.names("VirtualMachine") == ["g-0", "g-1"]
    for i in (0, 1):
        vm = lab.world.stored("VirtualMachine", f"g-{i}")
        volume = lab.world.stored("Volume", f"g-data-{i}")
        assert vm["spec"]["volumes"] == [{"volumeRef": f"g-data-{i}"}]
        assert vm["spec"]["availabilityZone"] == volume["spec"]["availabilityZone"]
        assert volume["metadata"]["labels"] == {
            GROUP_LABEL: "g",
            ORDINAL_LABEL: str(i),
            "kumo.dev/volume-template": "data",
        }
        assert volume["metadata"]["ownerReferences"][0]["uid"] == "uid-g"
        assert volume["spec"]["size"] == 5
    assert [
        lab.world.stored("Volume", f"g-data-{i}")["spec"]["availabilityZone"] for i in (0, 1)
    ] == [
        "az1",
        "az2",
    ]
    lab.converge()
    for i in (0, 1):
        assert lab.cloud.attached_to(lab.volume_id(f"g-data-{i}")) == (lab.server_of(f"g-{i}"),)
    status = lab.status()
    assert (status["readyReplicas"], status["retainedVolumeCount"]) == (2, 0)
    assert status["members"] == ["g-0", "g-1"]


def test_a_replaced_server_gets_the_same_volume() -> None:
    lab = Lab()
    lab.converge()
    volume = lab.volume_id("g-data-1")
    old = lab.server_of("g-1")
    asyncio.run(lab.cloud.delete_server(old))  # out of band
    lab.converge()
    new = lab.server_of("g-1")
    assert new != old
    assert lab.cloud.attached_to(volume) == (new,)
    assert lab.names("Volume") == ["g-data-0", "g-data-1"], "no volume made for the new server"


def test_scale_down_retains_and_scale_up_takes_the_same_volume_back() -> None:
    lab = Lab()
    lab.converge()
    volume = lab.volume_id("g-data-1")
    lab.set(replicas=1)
    lab.converge()
    assert lab.names("VirtualMachine") == ["g-0"]
    assert lab.names("Volume") == ["g-data-0", "g-data-1"]
    assert lab.cloud.attached_to(volume) == (), "detached: its server is gone"
    status = lab.status()
    assert (status["retainedVolumes"], status["retainedVolumeCount"]) == (["g-data-1"], 1)

    lab.set(replicas=2)
    lab.converge()
    assert lab.names("VirtualMachine") == ["g-0", "g-1"]
    assert lab.volume_id("g-data-1") == volume
    assert lab.cloud.attached_to(volume) == (lab.server_of("g-1"),)
    assert lab.status()["retainedVolumeCount"] == 0


def test_scale_down_with_delete_deletes_the_volume() -> None:
    lab = Lab(volumeRetention={"whenScaledDown": "Delete"})
    lab.converge()
    volume = lab.volume_id("g-data-1")
    lab.set(replicas=1)
    lab.converge()
    assert lab.names("Volume", deleting=True) == ["g-data-0"]
    assert volume not in lab.cloud.volumes


def test_group_deleted_with_retain_leaves_its_volumes_unowned() -> None:
    lab = Lab()
    lab.converge()
    volumes = [lab.volume_id(f"g-data-{i}") for i in (0, 1)]
    lab.world.delete("VirtualMachineGroup", "g")
    lab.converge()
    assert lab.world.store.get("VirtualMachineGroup", "default", "g") is None
    assert lab.names("VirtualMachine", deleting=True) == []
    assert lab.names("Volume", deleting=True) == ["g-data-0", "g-data-1"]
    for i, volume in enumerate(volumes):
        assert not lab.world.stored("Volume", f"g-data-{i}")["metadata"].get("ownerReferences")
        assert lab.cloud.attached_to(volume) == ()


def test_group_deleted_with_delete_leaves_nothing() -> None:
    lab = Lab(volumeRetention={"whenDeleted": "Delete"})
    lab.converge()
    lab.world.delete("VirtualMachineGroup", "g")
    lab.converge()
    assert lab.world.store.get("VirtualMachineGroup", "default", "g") is None
    assert lab.names("Volume", deleting=True) == []
    assert lab.names("VirtualMachine", deleting=True) == []
    assert lab.cloud.volumes == {}
    assert lab.cloud.live() == {}


def collect_garbage(lab: Lab, uid: str) -> list[str]:
    """Kubernetes' garbage collector after the group is gone: delete the objects whose
    owner references still name it."""
    doomed = []
    for info in (VIRTUAL_MACHINE, VOLUME):
        for body in lab.world.store.list(info.kind):
            if any(r.get("uid") == uid for r in body["metadata"].get("ownerReferences") or []):
                asyncio.run(lab.world.kube.delete(info, "default", body["metadata"]["name"]))
                doomed.append(body["metadata"]["name"])
    return sorted(doomed)


def test_a_group_switched_to_orphan_with_an_invalid_spec_and_deleted_keeps_all() -> None:
    """deletionPolicy Orphan set together with a change that does not validate, and the
    group deleted at once: no pass of the group got through to give its members and
    Volume objects the new policy. The release does it first (from the body alone),
    then lets the group go; the collector then deletes members and Volume objects that
    say Orphan, so every server and volume stays, released."""
    lab = Lab(volumeRetention={"whenDeleted": "Delete"})
    lab.converge()
    uid = lab.world.stored("VirtualMachineGroup", "g")["metadata"]["uid"]
    servers = [lab.server_of(f"g-{i}") for i in (0, 1)]
    volumes = [lab.volume_id(f"g-data-{i}") for i in (0, 1)]
    order: list[str] = []
    patch, set_finalizers = lab.world.kube.patch, lab.world.kube.set_finalizers

    async def patched(info: Any, namespace: str, name: str, body: Any) -> Any:
        order.append(f"patch {name} {body}")
        return await patch(info, namespace, name, body)

    async def finalizers(obj: Any, wanted: list[str]) -> Any:
        order.append(f"finalizers {obj.name} {wanted}")
        return await set_finalizers(obj, wanted)

    lab.world.kube.patch = patched  # type: ignore[method-assign]
    lab.world.kube.set_finalizers = finalizers  # type: ignore[method-assign]
    lab.set(deletionPolicy="Orphan", replicas=-1)  # Orphan, and a spec that fails validation
    lab.world.delete("VirtualMachineGroup", "g")

    lab.world.run(lab.group, "g")
    assert lab.world.store.get("VirtualMachineGroup", "default", "g") is None
    orphaned = {"spec": {"deletionPolicy": "Orphan"}}
    assert order == [
        *(f"patch {n} {orphaned}" for n in ("g-0", "g-1", "g-data-0", "g-data-1")),
        "finalizers g []",
    ], "every member and Volume object says Orphan before the group's finalizer goes"

    assert collect_garbage(lab, uid) == ["g-0", "g-1", "g-data-0", "g-data-1"]
    lab.converge(4)
    assert lab.names("VirtualMachine", deleting=True) == lab.names("Volume", deleting=True) == []
    for server in servers:
        assert lab.cloud.servers[server]["status"] == "ACTIVE", "server kept"
        assert owner_of(lab.cloud.servers[server]["tags"]) is None, "released"
    for volume in volumes:
        assert metadata_owner(lab.cloud.volumes[volume].metadata) is None, "kept, released"
    assert lab.cloud.calls.count("delete_server") == lab.cloud.calls.count("delete_volume") == 0


def test_a_group_waits_for_a_member_the_api_server_does_not_show_at_orphan() -> None:
    """Only what the API server answers counts: a member whose patch does not take (an
    admission webhook setting it back, say) keeps the group and its finalizer."""
    lab = Lab()
    lab.converge()
    patch = lab.world.kube.patch

    async def reverted(info: Any, namespace: str, name: str, body: Any) -> Any:
        answered = await patch(info, namespace, name, body)
        if name == "g-1":
            return await patch(info, namespace, name, {"spec": {"deletionPolicy": "Delete"}})
        return answered

    lab.world.kube.patch = reverted  # type: ignore[method-assign]
    lab.set(deletionPolicy="Orphan")
    lab.world.delete("VirtualMachineGroup", "g")
    assert lab.world.run(lab.group, "g") is not None
    assert lab.world.store.get("VirtualMachineGroup", "default", "g") is not None
    status = lab.status()
    assert status["phase"] == "Releasing"
    assert "VirtualMachine g-1 does not say deletionPolicy Orphan" in str(status["conditions"])
    lab.world.kube.patch = patch  # type: ignore[method-assign]
    assert lab.world.run(lab.group, "g") is None
    assert lab.world.store.get("VirtualMachineGroup", "default", "g") is None


def test_a_rollout_replaces_members_one_by_one_with_their_volumes() -> None:
    lab = Lab()
    lab.converge()
    volumes = {i: lab.volume_id(f"g-data-{i}") for i in (0, 1)}
    lab.cloud.flavors["n3-2vcpu-4gb"] = "flv-2"
    lab.set(template={**SPEC["template"], "flavor": "n3-2vcpu-4gb"})
    for _ in range(20):
        lab.step()
        alive = lab.names("VirtualMachine")
        assert 1 <= len(alive) <= 2, "no surge; maxUnavailable 1: one member at a time"
    for i in (0, 1):
        vm = lab.world.stored("VirtualMachine", f"g-{i}")
        assert vm["spec"]["flavor"] == "n3-2vcpu-4gb"
        assert lab.cloud.attached_to(volumes[i]) == (lab.server_of(f"g-{i}"),)
    assert lab.status()["updatedReplicas"] == 2
    assert lab.names("Volume") == ["g-data-0", "g-data-1"]


def test_dependents_a_volume_object_wakes_its_group() -> None:
    lab = Lab()
    lab.world.run(lab.group, "g")
    body = lab.world.stored("Volume", "g-data-0")
    keys = lab.group.dependents("Volume", body, lab.world.store)
    assert [(k.kind, k.name) for k in keys] == [("VirtualMachineGroup", "g")]


def test_a_lagging_cache_makes_no_second_volume_object() -> None:
    lab = Lab()
    lab.world.run(lab.group, "g")
    for name in lab.names(VOLUME.kind):  # the watch has not delivered them yet
        lab.world.store.remove(VOLUME.kind, "default", name)
    for name in lab.names(VIRTUAL_MACHINE.kind):
        lab.world.store.remove(VIRTUAL_MACHINE.kind, "default", name)
    creates = len(lab.world.events.reasons())
    lab.world.run(lab.group, "g")
    assert lab.names(VOLUME.kind) == [] and lab.names(VIRTUAL_MACHINE.kind) == []
    assert lab.world.events.reasons()[creates:].count("Scaling") == 0


def test_a_group_made_again_takes_its_retained_volumes_back() -> None:
    lab = Lab()
    lab.converge()
    volume = lab.volume_id("g-data-1")
    lab.world.delete("VirtualMachineGroup", "g")
    lab.converge()
    assert lab.world.store.get("VirtualMachineGroup", "default", "g") is None
    lab.world.add(VIRTUAL_MACHINE_GROUP, "g", SPEC)
    lab.converge()
    assert lab.volume_id("g-data-1") == volume
    assert lab.cloud.attached_to(volume) == (lab.server_of("g-1"),)
    owners = lab.world.stored("Volume", "g-data-1")["metadata"]["ownerReferences"]
    assert [o["uid"] for o in owners] == ["uid-g"]
    assert "VolumesAdopted" in lab.world.events.reasons()


def test_a_foreign_volume_object_of_a_members_name_is_never_taken() -> None:
    lab = Lab(replicas=1)
    lab.world.add(VOLUME, "g-data-0", {"size": 1})  # not the group's: no labels
    lab.world.run(lab.group, "g")
    assert lab.names("VirtualMachine") == []
    assert not lab.world.stored("Volume", "g-data-0")["metadata"].get("ownerReferences")
    message = next(c for c in lab.status()["conditions"] if c["type"] == "Ready")["message"]
    assert "g-data-0 exist and are not this group's: member(s) g-0 not made" in message

"""spec.snapshotBeforeReplace end to end in process (the group's, the Volume kind's and the
VirtualMachine kind's actuators on fake Nova + Cinder), and its pure decisions: a
member's volumes are snapshotted, and the snapshots available, before the member is
deleted; one snapshot per volume per replaced member, even across a restart; a failed or
refused snapshot stops the rollout; older snapshots beyond keep go, never a foreign one;
a converged group lists no snapshot; they go with their Volume."""

from __future__ import annotations

from typing import Any

from kumo.api.virtualmachinegroup import VirtualMachineGroupSpec
from kumo.cloud import model
from kumo.kinds.snapshots import SNAPSHOTS_ANNOTATION, snapshot_metadata
from kumo.kinds.virtualmachinegroup import plan
from kumo.kinds.virtualmachinegroup.actuator import VirtualMachineGroupActuator
from kumo.kinds.virtualmachinegroup.snapshot_plan import (
    Replacement,
    VolumeRef,
    plan_snapshots,
)
from tests.unit.kinds.virtualmachinegroup.test_stateful import SPEC, Lab

BIGGER = {**SPEC["template"], "flavor": "n3-2vcpu-4gb"}
BIGGEST = {**SPEC["template"], "flavor": "n3-4vcpu-8gb"}


def lab(**spec: Any) -> Lab:
    made = Lab(snapshotBeforeReplace={"keep": 1}, **spec)
    made.cloud.flavors.update({"n3-2vcpu-4gb": "flv-2", "n3-4vcpu-8gb": "flv-3"})
    made.converge()
    return made


def snapshots_of(made: Lab, volume_id: str) -> list[model.Snapshot]:
    """The volume's snapshots, but those Cinder is deleting (it takes a moment)."""
    return [
        s
        for s in made.cloud.snapshots.values()
        if s.volume_id == volume_id and s.status != "deleting"
    ]


def ready(made: Lab) -> dict[str, Any]:
    return next(c for c in made.status()["conditions"] if c["type"] == "Ready")


def roll(made: Lab, template: dict[str, Any], steps: int = 30) -> None:
    """Change the template and run the rollout, checking at every step that a member
    being deleted has an available snapshot of its volume, taken for it."""
    made.set(template=template)
    for _ in range(steps):
        made.step()
        for name in made.names("VirtualMachine", deleting=True):
            body = made.world.stored("VirtualMachine", name)
            if not body["metadata"].get("deletionTimestamp"):
                continue
            volume = made.volume_id(f"g-data-{name.rsplit('-', 1)[1]}")
            taken = [
                s
                for s in snapshots_of(made, volume)
                if s.metadata.get(model.SNAPSHOT_MEMBER_KEY) == body["metadata"]["uid"]
            ]
            assert [s.status for s in taken] == ["available"], (name, taken)


def test_a_rollout_snapshots_each_volume_before_its_member_goes() -> None:
    made = lab()
    volumes = {i: made.volume_id(f"g-data-{i}") for i in (0, 1)}
    roll(made, BIGGER)
    for i in (0, 1):
        assert made.world.stored("VirtualMachine", f"g-{i}")["spec"]["flavor"] == "n3-2vcpu-4gb"
        assert made.volume_id(f"g-data-{i}") == volumes[i], "the member keeps its volume"
        (snapshot,) = snapshots_of(made, volumes[i])
        assert snapshot.status == "available"
        assert model.metadata_owner(snapshot.metadata) == f"uid-g-data-{i}"
        assert snapshot.metadata[model.SNAPSHOT_GROUP_KEY] == "default/g"
        annotations = made.world.stored("Volume", f"g-data-{i}")["metadata"]["annotations"]
        assert annotations[SNAPSHOTS_ANNOTATION] == "true"
    assert made.status()["snapshotCount"] == 2
    assert made.status()["updatedReplicas"] == 2
    assert made.world.events.reasons().count("SnapshotCreated") == 2

    roll(made, BIGGEST)
    for i in (0, 1):
        (snapshot,) = snapshots_of(made, volumes[i])  # keep: 1 — the older one went
        assert snapshot.metadata[model.SNAPSHOT_MEMBER_KEY] == f"uid-g-{i}-2"
    assert made.status()["snapshotCount"] == 2
    assert "SnapshotsPruned" in made.world.events.reasons()


def test_a_restart_between_snapshot_and_delete_takes_no_second_snapshot() -> None:
    made = lab()
    made.set(template=BIGGER)
    made.world.run(made.group, "g")  # snapshot of g-1's volume asked for; g-1 stays
    assert made.cloud.calls.count("create_snapshot") == 1
    assert made.names("VirtualMachine") == ["g-0", "g-1"]
    made.group = VirtualMachineGroupActuator()  # kill -9: nothing remembered
    made.world.run(made.group, "g")
    made.group = VirtualMachineGroupActuator()
    made.world.run(made.group, "g")
    assert made.cloud.calls.count("create_snapshot") == 1
    assert made.names("VirtualMachine") == ["g-0"], "deleted once its snapshot is available"


def test_a_snapshot_in_error_stops_the_rollout() -> None:
    made = lab()
    server = made.server_of("g-1")
    made.cloud.fail_snapshots.add(made.volume_id("g-data-1"))
    made.set(template=BIGGER)
    for _ in range(6):
        made.step()
    assert made.names("VirtualMachine") == ["g-0", "g-1"]
    assert made.server_of("g-1") == server, "not replaced"
    assert made.world.stored("VirtualMachine", "g-0")["spec"]["flavor"] == "n3-1vcpu-2gb"
    condition = ready(made)
    assert condition["reason"] == "SnapshotFailed"
    assert condition["message"].startswith("spec.snapshotBeforeReplace: snapshot ")
    assert "g-1 is not replaced" in condition["message"]
    assert made.cloud.calls.count("create_snapshot") == 1, "no retry behind the user's back"


def test_a_refused_snapshot_stops_the_rollout() -> None:
    made = lab()
    made.cloud.snapshot_quota = 0
    made.set(template=BIGGER)
    for _ in range(4):
        made.step()
    assert made.names("VirtualMachine") == ["g-0", "g-1"]
    condition = ready(made)
    assert condition["reason"] == "QuotaExceeded"
    assert condition["message"].startswith("spec.snapshotBeforeReplace: snapshot of volume")
    assert "member g-1 is not replaced" in condition["message"]


def test_a_converged_group_lists_no_snapshot_and_writes_nothing() -> None:
    made = lab()
    roll(made, BIGGER)
    made.cloud.calls.clear()
    patches = len(made.world.kube.patches)
    for _ in range(3):
        made.world.run(made.group, "g")
    assert "list_snapshots" not in made.cloud.calls
    assert not [c for c in made.cloud.calls if c.startswith(("create", "delete", "set"))]
    assert len(made.world.kube.patches) == patches


def test_pruning_never_touches_a_snapshot_without_the_marker() -> None:
    made = lab()
    volume = made.volume_id("g-data-1")
    foreign = model.Snapshot(
        "snap-foreign",
        "by hand",
        "available",
        volume,
        created_at="2026-11-25T07:00:00.000000",
        metadata={model.SNAPSHOT_GROUP_KEY: "default/g"},  # the group's key, no marker
    )
    made.cloud.snapshots[foreign.id] = foreign
    roll(made, BIGGER)
    roll(made, BIGGEST)
    assert "snap-foreign" in made.cloud.snapshots
    assert made.status()["snapshotCount"] == 2, "only Kumo's are counted"


def test_group_deleted_with_delete_deletes_the_snapshots_then_the_volumes() -> None:
    made = lab(volumeRetention={"whenDeleted": "Delete"})
    roll(made, BIGGER)
    assert len(made.cloud.snapshots) == 2
    made.world.delete("VirtualMachineGroup", "g")
    made.converge(20)
    assert made.world.store.get("VirtualMachineGroup", "default", "g") is None
    assert made.cloud.snapshots == {} and made.cloud.volumes == {}


def test_group_deleted_with_retain_keeps_the_snapshots_with_their_volumes() -> None:
    made = lab()
    roll(made, BIGGER)
    made.world.delete("VirtualMachineGroup", "g")
    made.converge()
    assert made.world.store.get("VirtualMachineGroup", "default", "g") is None
    owners = {model.metadata_owner(s.metadata) for s in made.cloud.snapshots.values()}
    assert owners == {"uid-g-data-0", "uid-g-data-1"}, "kept, owned by the retained Volumes"


def test_an_orphaned_volume_releases_its_snapshots() -> None:
    made = lab(deletionPolicy="Orphan")
    roll(made, BIGGER)
    made.world.delete("Volume", "g-data-1", "2026-11-22")
    made.world.stored("Volume", "g-data-1")["spec"]["deletionPolicy"] = "Orphan"
    made.world.run(made.volume, "g-data-1")
    released = [
        s
        for s in made.cloud.snapshots.values()
        if s.metadata.get(model.SHARE_ORPHAN_KEY) == "uid-g-data-1"
    ]
    assert len(released) == 1 and model.metadata_owner(released[0].metadata) is None


# -- the pure decisions ---------------------------------------------------------------------


def test_validate_refuses_snapshots_without_volume_templates() -> None:
    spec = VirtualMachineGroupSpec.model_validate(
        {**SPEC, "volumeTemplates": [], "snapshotBeforeReplace": {"keep": 1}}
    )
    assert plan.validate(spec) == "spec.snapshotBeforeReplace: requires spec.volumeTemplates"
    assert plan.validate(VirtualMachineGroupSpec.model_validate(SPEC)) is None


def test_only_template_replacements_below_replicas_are_snapshotted() -> None:
    spec = VirtualMachineGroupSpec.model_validate(SPEC)  # replicas 2
    members = [
        plan.MemberView("g-0", "new", ready=True),
        plan.MemberView("g-1", "old", ready=True),
        plan.MemberView("g-2", "old", ready=True),  # scale-down
    ]
    going = ["g-2", "g-1", "g-0"]
    assert plan.template_replacements(spec, "g", "new", members, going) == ["g-1"]


VOL = VolumeRef("g-data-1", "uid-vol", "vol-1")
MEMBER = Replacement("g-1", "uid-m", (VOL,))


def snap(id_: str, status: str, member: str = "uid-m", at: str = "08:00", **meta: str) -> Any:
    metadata = {**snapshot_metadata("uid-vol", "default", "g", member, "h"), **meta}
    return model.Snapshot(id_, id_, status, "vol-1", 1, f"2026-11-25T{at}", metadata)


def test_plan_creates_waits_clears_and_fails() -> None:
    owners = frozenset({"uid-vol"})
    assert plan_snapshots(1, [MEMBER], [], owners).create == [(MEMBER, VOL)]
    assert plan_snapshots(1, [MEMBER], [snap("s", "creating")], owners).waiting == ["g-1"]
    assert plan_snapshots(1, [MEMBER], [snap("s", "available")], owners).cleared == ["g-1"]
    failed = plan_snapshots(1, [MEMBER], [snap("s", "error")], owners)
    assert (failed.cleared, failed.waiting, [f[0] for f in failed.failed]) == ([], [], ["g-1"])
    # Another member's snapshot of the same volume is not this step's.
    other = plan_snapshots(1, [MEMBER], [snap("s", "available", member="uid-old")], owners)
    assert other.create == [(MEMBER, VOL)]


def test_plan_waits_for_a_volume_cinder_is_working_on() -> None:
    busy = Replacement("g-1", "uid-m", (VolumeRef("g-data-1", "uid-vol", "vol-1", steady=False),))
    decided = plan_snapshots(1, [busy], [], frozenset({"uid-vol"}))
    assert (decided.create, decided.waiting) == ([], ["g-1"])


def test_plan_keeps_the_newest_and_the_steps_own() -> None:
    owners = frozenset({"uid-vol"})
    older = [snap(f"old-{i}", "available", member=f"uid-{i}", at=f"07:0{i}") for i in range(3)]
    current = snap("now", "available", at="06:00")  # a clock behind: still the step's own
    decided = plan_snapshots(2, [MEMBER], [*older, current], owners)
    assert sorted(s.id for s in decided.prune) == ["old-0", "old-1"]
    assert decided.count == 2


def test_plan_prunes_no_snapshot_cinder_is_still_making() -> None:
    older = snap("old", "creating", member="uid-0", at="07:00")
    decided = plan_snapshots(1, [MEMBER], [older, snap("s", "available")], frozenset({"uid-vol"}))
    assert decided.prune == [] and decided.count == 2


def test_plan_counts_and_prunes_only_owned_snapshots() -> None:
    foreign = model.Snapshot("f", "f", "available", "vol-1", 1, "2026-11-25T09:00", {})
    stranger = snap("x", "available", member="uid-9", at="09:00")
    stranger = model.Snapshot(
        "x", "x", "available", "vol-1", 1, "", {**stranger.metadata, "kumo-owner": "uid-other"}
    )
    decided = plan_snapshots(
        1, [MEMBER], [foreign, stranger, snap("s", "available")], frozenset({"uid-vol"})
    )
    assert decided.prune == [] and decided.count == 1

"""The group's one pure decision (decision.py): both identities through one path, every
write of a pass in what ``decide`` returns, a converged group deciding none, and the
report from what apply left. No actuator, no store: observations in, decisions out."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kumo.api.virtualmachinegroup import VirtualMachineGroupSpec
from kumo.engine.errors import TerminalError
from kumo.kinds import snapshots as kind_snapshots
from kumo.kinds.labels import GROUP_LABEL, ORDINAL_LABEL, TEMPLATE_HASH_LABEL
from kumo.kinds.virtualmachinegroup import decision, plan
from kumo.ports.model import ServerGroup, Snapshot

TEMPLATE = {"image": "centos79", "flavor": "n3-1vcpu-2gb"}
ORDINAL = {"identity": "Ordinal", "strategy": {"maxSurge": 0, "maxUnavailable": 1}}
DATA = {"volumeTemplates": [{"name": "data", "size": 5}]}


def spec(replicas: int, **extra: Any) -> VirtualMachineGroupSpec:
    return VirtualMachineGroupSpec.model_validate(
        {"replicas": replicas, "template": TEMPLATE, **extra}
    )


def member(name: str, hash_: str = "h1", ready: bool = True, groups: tuple = ()) -> dict:
    return {
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "labels": {GROUP_LABEL: "g", TEMPLATE_HASH_LABEL: hash_},
        },
        "spec": {"deletionPolicy": "Delete", "securityGroups": list(groups)},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def volume(name: str, ordinal: int, volume_id: str | None = None) -> dict:
    return {
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "labels": {GROUP_LABEL: "g", ORDINAL_LABEL: str(ordinal)},
        },
        "spec": {"deletionPolicy": "Delete", "size": 5},
        "status": {"id": volume_id, "volumeStatus": "in-use"} if volume_id else {},
    }


def observed(
    s: VirtualMachineGroupSpec, bodies: list[dict], vols: list[dict] = (), **extra: Any
) -> decision.Observed:
    derived = [decision.derive(b) for b in bodies]
    return decision.Observed(
        spec=s,
        group="g",
        status={},
        server_group=extra.pop("server_group", None),
        hash="h1",
        legacy="h0",
        bodies=bodies,
        members=derived,
        views=[m.view for m in derived],
        going=[],
        volume_bodies=list(vols),
        volumes=[decision.volume_view(b) for b in vols],
        **extra,
    )


def writes(d: decision.Decision) -> dict[str, Any]:
    """Every write a decision holds (the server group's stale ones aside)."""
    fields = dataclasses.asdict(d)
    for quiet in ("settled", "retained", "blocked", "held", "replacing", "scaling"):
        fields.pop(quiet)
    return {k: v for k, v in fields.items() if v}


@pytest.mark.parametrize(
    ("s", "bodies", "vols"),
    [
        (spec(2), [member("g-a"), member("g-b")], []),
        (
            spec(2, **ORDINAL, **DATA),
            [member("g-0"), member("g-1")],
            [volume("g-data-0", 0), volume("g-data-1", 1)],
        ),
    ],
    ids=["Random", "Ordinal"],
)
def test_a_converged_group_decides_no_write(s: Any, bodies: list, vols: list) -> None:
    o = observed(s, bodies, vols)
    assert not decision.wants_snapshots(o)
    d = decision.decide(o)
    assert writes(d) == {} and d.scaling is None
    result = decision.report(o, d, step_seconds=2.0)
    assert result.ready and result.status["members"] == [b["metadata"]["name"] for b in bodies]


def test_both_identities_scale_out_through_the_one_decision() -> None:
    random = decision.decide(observed(spec(3), [member("g-a"), member("g-b")]))
    assert [(c.ordinal, c.import_) for c in random.creates] == [(None, None)]
    assert random.create_volumes == [] and random.scaling == "created 1, deleting 0 member(s)"

    ordinal = decision.decide(
        observed(
            spec(3, **ORDINAL, **DATA),
            [member("g-0"), member("g-1")],
            [volume("g-data-0", 0), volume("g-data-1", 1)],
        )
    )
    assert [c.ordinal for c in ordinal.creates] == [2]
    assert ordinal.create_volumes == [("g-data-2", 2, "data", None)]
    assert ordinal.scaling == (
        "created 1 member(s) and 1 volume(s), deleting 0 member(s) and 0 volume(s)"
    )


def test_a_volume_name_held_by_another_object_blocks_only_its_ordinal() -> None:
    o = observed(spec(3, **ORDINAL, **DATA), [member("g-0")], [volume("g-data-0", 0)])
    o = dataclasses.replace(o, existing_volumes=frozenset({"g-data-2"}))
    d = decision.decide(o)
    assert [c.ordinal for c in d.creates] == [1]
    assert [v[0] for v in d.create_volumes] == ["g-data-1"]
    assert d.blocked == {"g-data-2": 2}
    message = decision.report(o, d, step_seconds=2.0).message
    assert "Volume(s) g-data-2 exist and are not this group's: member(s) g-2 not made" in message


def test_scale_down_deletes_the_highest_ordinal_and_retains_its_volume() -> None:
    o = observed(
        spec(1, **ORDINAL, **DATA),
        [member("g-0"), member("g-1")],
        [volume("g-data-0", 0), volume("g-data-1", 1)],
    )
    d = decision.decide(o)
    assert d.delete == ["g-1"] and d.delete_volumes == [] and d.retained == ["g-data-1"]
    status = decision.report(o, d, step_seconds=2.0).status
    assert status["retainedVolumes"] == ["g-data-1"] and status["retainedVolumeCount"] == 1


def test_policy_and_security_group_patches_skip_the_members_deleted() -> None:
    s = spec(1, deletionPolicy="Orphan", template={**TEMPLATE, "securityGroups": ["web"]})
    o = observed(s, [member("g-a", groups=("web",)), member("g-b", hash_="old", ready=False)])
    d = decision.decide(o)
    assert d.delete == ["g-b"]
    assert d.member_policy == ["g-a"] and d.security_groups == []
    s = spec(2, template={**TEMPLATE, "securityGroups": ["db"]})
    d = decision.decide(observed(s, [member("g-a"), member("g-b")]))
    assert [name for name, _ in d.security_groups] == ["g-a", "g-b"]


def test_both_identities_report_the_counts_the_api_server_defaults() -> None:
    """The CRD defaults retainedVolumeCount and snapshotCount to 0: a status without them
    differs from the stored one, and every pass of a Random group wrote it again."""
    for s, bodies in ((spec(1), [member("g-a")]), (spec(1, **ORDINAL, **DATA), [member("g-0")])):
        o = observed(s, bodies)
        status = decision.report(o, decision.decide(o), 2.0).status
        assert (status["retainedVolumeCount"], status["snapshotCount"]) == (0, 0)


def test_stale_server_groups_go_only_once_no_member_is_on_an_older_template() -> None:
    group = ServerGroup(id="sg-1", name="g", policy="anti-affinity")
    settled = observed(spec(2), [member("g-a"), member("g-b")], server_group=group)
    assert decision.decide(settled).settled
    rolling = observed(spec(2), [member("g-a"), member("g-b", hash_="old")], server_group=group)
    assert not decision.decide(rolling).settled


SNAP = {**ORDINAL, **DATA, "snapshotBeforeReplace": {"keep": 1}}


def rollout() -> decision.Observed:
    """Member g-0 on an older template, its volume in Cinder: the rollout replaces it."""
    return observed(spec(1, **SNAP), [member("g-0", hash_="old")], [volume("g-data-0", 0, "v-0")])


def test_a_template_replacement_waits_for_its_snapshot() -> None:
    o = rollout()
    assert decision.wants_snapshots(o)
    d = decision.decide(dataclasses.replace(o, snapshots=[]))
    assert d.delete == [] and d.held == {"g-0"}
    assert d.snapshots is not None and [v.name for _, v in d.snapshots.create] == ["g-data-0"]
    result = decision.report(dataclasses.replace(o, snapshots=[]), d, step_seconds=2.0)
    assert result.requeue_after == 2.0
    assert "snapshotting the volumes of g-0 before replacing" in result.message


def test_an_available_snapshot_lets_the_member_go_and_a_failed_one_stops_the_rollout() -> None:
    def snapshot(status: str) -> Snapshot:
        meta = kind_snapshots.snapshot_metadata("uid-g-data-0", "default", "g", "uid-g-0", "h1")
        return Snapshot("s-1", "s", status, "v-0", metadata=meta)

    o = dataclasses.replace(rollout(), snapshots=[snapshot("available")])
    d = decision.decide(o)
    assert d.delete == ["g-0"] and not d.held
    o = dataclasses.replace(rollout(), snapshots=[snapshot("error")])
    d = decision.decide(o)
    assert d.delete == []
    with pytest.raises(TerminalError) as failed:
        decision.report(o, d, step_seconds=2.0)
    assert failed.value.reason == "SnapshotFailed" and failed.value.status["replicas"] == 1


def test_new_members_of_a_random_group_import_free_refs_first() -> None:
    s = spec(2, **{"import": {"members": [{"name": "old-1"}]}})
    d = decision.decide(observed(s, []))
    assert [c.import_.name if c.import_ else None for c in d.creates] == ["old-1", None]
    assert d.scaling == "created 2 (1 importing a server), deleting 0 member(s)"
    assert plan.refs_of(s)[0].name == "old-1"

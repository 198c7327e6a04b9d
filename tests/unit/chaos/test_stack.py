"""The chaos stack's reading and judging glue, against a fake cloud and a fake cluster
(the lab runs are the real test; this keeps the glue from rotting between them)."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace as NS
from typing import Any

import pytest

from kumo.cloud.model import marker_metadata
from tests.chaos import stack
from tests.chaos.audit import CinderVolume, Marked

GROUP_UID, LB_UID, DNS_UID, VOLUME_UID = "uid-group", "uid-lb", "uid-dns", "uid-vol"
VM_UIDS = ["uid-vm-1", "uid-vm-2"]
#: The rest of the stack: kubectl short name → the object's UID.
OTHER_UIDS = {short: f"uid-{short}" for short, _ in stack.OTHERS}


def tags(uid: str) -> list[str]:
    return ["kumo", f"kumo-owner={uid}"]


class FakeCloud:
    """Just the openstacksdk surface stack.py uses."""

    def __init__(self) -> None:
        self.servers = [
            NS(id=f"srv-{i}", name=f"chaos-{i}", status="ACTIVE", tags=tags(uid))
            for i, uid in enumerate(VM_UIDS)
        ]
        self.foreign = NS(
            id="srv-foreign",
            name="chaos-0",
            status="ACTIVE",
            tags=[],
            description=stack.FOREIGN_DESCRIPTION,
        )
        self.servers.append(self.foreign)
        self.lbs = [
            NS(id="lb-1", name="ns-chaos-lb", provisioning_status="ACTIVE", tags=tags(LB_UID))
        ]
        self.groups = [NS(id="sg-1", name=f"ns-chaos-soft-anti-affinity kumo-owner={GROUP_UID}")]
        self.recordsets = [
            NS(
                id="rs-1",
                name="chaos-ns.kumo-demo.test.",
                description=f"kumo-owner={DNS_UID}",
                records=["10.10.0.99"],
                status="ACTIVE",
            ),
            NS(id="rs-soa", name="kumo-demo.test.", description=None, records=[], status="ACTIVE"),
        ]
        self.members = [NS(address="10.10.0.1"), NS(address="10.10.0.2")]
        self.volumes: list[dict[str, Any]] = [
            {
                "id": "vol-1",
                "name": "ns-data",
                "status": "in-use",
                "metadata": {"kumo": "managed", "kumo-owner": VOLUME_UID},
                "attachments": [{"server_id": "srv-0"}],
            },
            {"id": "vol-foreign", "name": "x", "status": "available", "metadata": {}},
            {"id": "vol-gone", "name": "y", "status": "deleted", "metadata": {}},
        ]
        self.block_storage = NS(get=self._cinder_get)
        neutron = {
            kind: [
                NS(id=f"{kind}-1", name=f"ns-{kind}", tags=tags(uid), description=""),
                # marked in its create call, its tags never came (a lost answer):
                NS(id=f"{kind}-2", name="", tags=[], description=f"x kumo-owner={uid}"),
                NS(id=f"{kind}-foreign", name="x", tags=["kumo"], description="kumo"),
            ]
            for kind, uid in (
                ("networks", OTHER_UIDS["net"]),
                ("routers", OTHER_UIDS["net"]),
                ("security_groups", OTHER_UIDS["sg"]),
                ("ips", OTHER_UIDS["fip"]),
            )
        }
        self.network = NS(
            **{kind: (lambda found=found: list(found)) for kind, found in neutron.items()},
            ports=lambda: [],  # the chaos stack has no Port
        )
        self.keypairs = [
            NS(name="ns-chaos-kp", public_key=f"ssh-ed25519 AAAA c kumo-owner={OTHER_UIDS['kp']}"),
            NS(name="mine", public_key="ssh-ed25519 AAAA me@laptop"),
        ]
        self.shares = [
            NS(
                id="share-1",
                name="s",
                status="available",
                metadata=marker_metadata(OTHER_UIDS["share"]),
            ),
            NS(id="share-x", name="x", status="available", metadata={}),
        ]
        self.shared_file_system = NS(shares=lambda details: list(self.shares))
        self.compute = NS(
            keypairs=lambda: list(self.keypairs),
            servers=lambda: list(self.servers),
            server_groups=lambda: list(self.groups),
            get_server=lambda sid: next(s for s in self.servers if s.id == sid),
        )
        self.load_balancer = NS(
            load_balancers=lambda: list(self.lbs),
            listeners=lambda load_balancer_id: [NS(protocol_port=80, default_pool_id="pool-1")],
            pools=lambda: [NS(id="pool-1", loadbalancers=[{"id": "lb-1"}])],
            members=lambda pool_id: list(self.members),
        )
        self.dns = NS(
            zones=lambda: [NS(id="zone-1")],
            recordsets=lambda zone: list(self.recordsets),
            get_recordset=lambda rs_id, zone_id: next(r for r in self.recordsets if r.id == rs_id),
        )

    def _cinder_get(self, path: str, microversion: str, params: Any = None) -> Any:
        assert path == "/volumes/detail"
        return NS(status_code=200, json=lambda: {"volumes": list(self.volumes)})


def vm(i: int) -> dict[str, Any]:
    return {
        "metadata": {"uid": VM_UIDS[i], "name": f"chaos-{i}", "namespace": "ns"},
        "status": {"id": f"srv-{i}", "ip": f"10.10.0.{i + 1}"},
    }


@pytest.fixture
def cloud(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCloud]:
    fake = FakeCloud()
    live = {GROUP_UID, LB_UID, DNS_UID, VOLUME_UID, *VM_UIDS, *OTHER_UIDS.values()}
    monkeypatch.setattr(stack, "live_uids", lambda: set(live))
    monkeypatch.setattr(stack, "group_vms", lambda namespace: [vm(0), vm(1)])
    monkeypatch.setattr(stack, "LEAK_GRACE", 0.2)
    monkeypatch.setattr(stack, "DUPLICATE_GRACE", 0.2)
    monkeypatch.setattr(
        stack,
        "pool_member_addresses",
        lambda conn, lb_id: {80: {m.address for m in conn.members}},
    )
    yield fake


def settled_state() -> stack.Settled:
    return stack.Settled(
        group={"metadata": {"uid": GROUP_UID, "namespace": "ns"}},
        vms=[vm(0), vm(1)],
        lb={"metadata": {"uid": LB_UID}, "status": {"id": "lb-1", "vip": "10.10.0.99"}},
        dns={"metadata": {"uid": DNS_UID}, "status": {"id": "rs-1", "zoneId": "zone-1"}},
        ips={"10.10.0.1", "10.10.0.2"},
    )


def test_markers_of_every_kind_are_found_and_foreign_ones_ignored(cloud: FakeCloud) -> None:
    found = stack.cloud_markers(cloud)
    assert sorted((m.kind, m.id) for m in found) == [
        ("floatingip", "ips-1"),
        ("floatingip", "ips-2"),
        ("keypair", "ns-chaos-kp"),
        ("loadbalancer", "lb-1"),
        ("network", "networks-1"),
        ("network", "networks-2"),
        ("recordset", "rs-1"),
        ("router", "routers-1"),
        ("router", "routers-2"),
        ("security_group", "security_groups-1"),
        ("security_group", "security_groups-2"),
        ("server", "srv-0"),
        ("server", "srv-1"),
        ("server_group", "sg-1"),
        ("share", "share-1"),
        ("volume", "vol-1"),
    ]


def test_cinder_volumes_are_read_with_their_marker_and_servers(cloud: FakeCloud) -> None:
    assert stack.cinder_volumes(cloud) == [
        CinderVolume("vol-1", "ns-data", VOLUME_UID, ("srv-0",)),
        CinderVolume("vol-foreign", "x", None, ()),
    ]


def test_a_converged_stack_passes(cloud: FakeCloud) -> None:
    verdict = stack.judge(cloud, settled_state(), before=frozenset())
    assert verdict.problems == [] and verdict.duplicates == 0 and verdict.leaks == []
    assert stack.foreign_untouched(cloud, "srv-foreign") == []


def test_a_second_server_for_a_vm_is_a_duplicate_and_a_mismatch(cloud: FakeCloud) -> None:
    cloud.servers.append(NS(id="srv-0b", name="chaos-0", status="ACTIVE", tags=tags(VM_UIDS[0])))
    verdict = stack.judge(cloud, settled_state(), before=frozenset())
    assert verdict.duplicates == 1
    assert verdict.mismatches == {VM_UIDS[0]: ["srv-0", "srv-0b"]}
    assert any("2 servers for owner uid-vm-1" in p for p in verdict.problems)


def test_a_member_registered_twice_is_a_duplicate(cloud: FakeCloud) -> None:
    cloud.members.append(NS(address="10.10.0.1"))
    verdict = stack.judge(cloud, settled_state(), before=frozenset())
    assert verdict.duplicates == 1


def test_a_marker_of_a_vanished_object_is_a_leak_unless_it_was_there_before(
    cloud: FakeCloud,
) -> None:
    cloud.lbs.append(NS(id="lb-old", name="x", provisioning_status="ACTIVE", tags=tags("gone")))
    verdict = stack.judge(cloud, settled_state(), before=frozenset())
    assert verdict.leaks == [Marked("loadbalancer", "lb-old", "gone", "x")]
    before = stack.snapshot_orphans(cloud)
    assert stack.judge(cloud, settled_state(), before).leaks == []


def test_deleted_resources_are_not_counted(cloud: FakeCloud) -> None:
    cloud.servers.append(NS(id="srv-x", name="x", status="DELETED", tags=tags("gone")))
    cloud.lbs.append(NS(id="lb-x", name="x", provisioning_status="DELETED", tags=tags("gone")))
    assert stack.judge(cloud, settled_state(), before=frozenset()).leaks == []


def test_the_recordset_must_hold_the_vip(cloud: FakeCloud) -> None:
    cloud.recordsets[0].records = ["10.10.0.1"]
    problems = stack.judge(cloud, settled_state(), before=frozenset()).problems
    assert problems == ["recordset rs-1: ACTIVE ['10.10.0.1']"]


def test_a_touched_foreign_server_is_reported(cloud: FakeCloud) -> None:
    cloud.foreign.description = "kumo corrected this"
    cloud.foreign.tags = ["kumo"]
    assert len(stack.foreign_untouched(cloud, "srv-foreign")) == 2


def test_remains_are_what_still_carries_the_owners_markers(cloud: FakeCloud) -> None:
    assert {m.id for m in stack.remains_of(cloud, {LB_UID, DNS_UID})} == {"lb-1", "rs-1"}
    cloud.lbs.clear()
    cloud.recordsets.clear()
    assert stack.wait_nothing_remains(cloud, {LB_UID, DNS_UID}, timeout=0.2) == []


def test_an_unreadable_cloud_fails_loudly_instead_of_passing(cloud: FakeCloud) -> None:
    def broken() -> list[Any]:
        raise ConnectionError("cloud down")

    cloud.compute.servers = broken
    with pytest.raises(ConnectionError):
        stack.judge(cloud, settled_state(), before=frozenset())
    with pytest.raises(ConnectionError):
        stack.wait_nothing_remains(cloud, {LB_UID}, timeout=0.2)


def test_the_manifests_reference_each_other() -> None:
    lb = stack.lb_manifest()
    assert lb["spec"]["ports"][0]["realServers"]["virtualMachineGroupRef"] == stack.GROUP
    dns = stack.dns_manifest("t-1234")
    assert dns["spec"]["loadBalancerRef"] == stack.LB and dns["spec"]["name"] == "chaos-t-1234"
    group = stack.group_manifest(3, revision=2)
    assert group["spec"]["replicas"] == 3
    assert group["spec"]["template"]["metadata"] == {"chaos-rev": "2"}


def ready(obj: dict[str, Any], generation: int = 1) -> dict[str, Any]:
    obj = {**obj, "metadata": {**obj["metadata"], "generation": generation}}
    obj["status"] = {
        **(obj.get("status") or {}),
        "observedGeneration": 1,
        "conditions": [{"type": "Ready", "status": "True"}],
    }
    return obj


@pytest.fixture
def cluster(cloud: FakeCloud, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    state = settled_state()
    objs: dict[str, Any] = {
        "vmg": ready({**state.group, "status": {"replicas": 2, "readyReplicas": 2}}),
        "lb": ready(state.lb),
        "dns": ready({**state.dns, "status": {**state.dns["status"], "records": ["10.10.0.99"]}}),
        "vms": [ready(v) for v in state.vms],
        **{short: ready({"metadata": {"uid": uid}}) for short, uid in OTHER_UIDS.items()},
    }
    monkeypatch.setattr(stack, "get_obj", lambda kind, name, namespace: objs[kind])
    monkeypatch.setattr(stack, "group_vms", lambda namespace: objs["vms"])
    return objs


def test_settled_when_everything_is_ready_and_the_pool_is_the_members(
    cloud: FakeCloud, cluster: dict[str, Any]
) -> None:
    got = stack.settled(cloud, "ns", 2)
    assert isinstance(got, stack.Settled) and got.ips == {"10.10.0.1", "10.10.0.2"}
    assert got.owners == {GROUP_UID, LB_UID, DNS_UID, *VM_UIDS, *OTHER_UIDS.values()}
    assert not stack.settled(cloud, "ns", 3)  # not the replicas asked for


@pytest.mark.parametrize(
    "spoil",
    [
        lambda objs, cloud: objs["vmg"]["metadata"].update(generation=2),  # spec not seen yet
        lambda objs, cloud: objs["vms"][0]["metadata"].update(deletionTimestamp="now"),
        lambda objs, cloud: objs["vms"][1]["status"].pop("ip"),
        lambda objs, cloud: objs["lb"]["status"]["conditions"][0].update(status="False"),
        lambda objs, cloud: cloud.members.pop(),  # the pool lags behind the members
        lambda objs, cloud: objs["dns"]["status"].update(records=["10.10.0.1"]),
        # a recorded server deleted out of band, its VM's status not yet caught up:
        lambda objs, cloud: setattr(cloud.servers[0], "task_state", "deleting"),
        lambda objs, cloud: setattr(cloud.servers[1], "status", "ERROR"),
        # every other kind counts too:
        *(
            (lambda objs, cloud, short=short: objs[short]["metadata"].update(generation=2))
            for short, _ in stack.OTHERS
        ),
    ],
)
def test_not_settled_while_anything_lags(
    cloud: FakeCloud, cluster: dict[str, Any], spoil: Any
) -> None:
    spoil(cluster, cloud)
    got = stack.settled(cloud, "ns", 2)
    assert isinstance(got, stack.NotSettled) and not got and got.reason

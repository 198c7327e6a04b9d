"""Stateful VirtualMachineGroups (identity Ordinal, volumeTemplates) on the real
kube-apiserver and the lab's Nova and Cinder: member db-<i> gets the Volume db-data-<i>;
a server deleted out of band is replaced and the new one has the same Cinder volume;
scale 3→2 keeps ordinal 2's volume, detached; 2→3 gives it back; deleting the group
with Retain leaves the volumes, with Delete leaves nothing; a LoadBalancer's pool and a
DNSRecord and a Share's access rules follow stateful members as they follow stateless
ones."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from tests.integration.apiserver_audit import writes_since
from tests.integration.helpers import (
    VM_SPEC,
    apply,
    condition,
    kumo_leftovers,
    lb_port,
    members_of,
    pool_member_addresses,
    wait_gone,
    wait_ready,
)
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import get_obj, wait_until
from tests.integration.test_shares import active_rules, share_manifest
from tests.integration.test_vm_volumes import attached_servers, volume_of

API = "kumo.dev/v1alpha1"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples/more/stateful-group.yaml"


def group(name: str, replicas: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "VirtualMachineGroup",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "haPolicy": "none",
            "identity": "Ordinal",  # no strategy: Ordinal's default replaces in place
            "template": dict(VM_SPEC),
            "volumeTemplates": [{"name": "data", "size": 1}],
            **spec,
        },
    }


def member_with_volume(conn: Any, ns: str, member: str, volume_id: str) -> str | None:
    """The member's server ID once it is Ready with the volume attached (both sides)."""
    obj = get_obj("vm", member, ns) or {}
    status = obj.get("status") or {}
    server_id = status.get("id")
    if condition(obj).get("status") != "True" or not server_id:
        return None
    if [v["id"] for v in status.get("volumes") or []] != [volume_id]:
        return None
    return str(server_id) if attached_servers(conn, volume_id) == [server_id] else None


def volume_ids(ns: str, group_name: str, replicas: int) -> dict[int, str]:
    return {
        i: wait_ready("vol", f"{group_name}-data-{i}", ns, timeout=120)["status"]["id"]
        for i in range(replicas)
    }


def servers_with_volumes(
    conn: Any, ns: str, group_name: str, ids: dict[int, str]
) -> dict[int, str]:
    """Each member's server ID, once every member is Ready with its volume attached."""
    return {
        i: wait_until(
            f"{group_name}-{i} has its volume",
            lambda i=i: member_with_volume(conn, ns, f"{group_name}-{i}", ids[i]),
            240,
        )
        for i in ids
    }


def test_ordinals_keep_their_volumes_through_replacement_and_scaling(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    ns = namespace
    apply(ns, group("db", 3))
    ids = volume_ids(ns, "db", 3)
    wait_ready("vmg", "db", ns, timeout=300)
    servers = servers_with_volumes(demo_conn, ns, "db", ids)

    # Out of band: db-1's server goes; its replacement gets the same Cinder volume.
    demo_conn.compute.delete_server(servers[1])

    def replaced() -> str | None:
        server_id = member_with_volume(demo_conn, ns, "db-1", ids[1])
        return server_id if server_id not in (None, servers[1]) else None

    wait_until("db-1's new server has the same volume", replaced, 300)

    # 3 → 2: db-2 goes, its Volume stays (Retain), detached.
    kubectl("patch", "vmg", "db", "-n", ns, "--type=merge", "-p", '{"spec":{"replicas":2}}')
    wait_gone("vm", "db-2", ns, 180)
    wait_until(
        "db-data-2 detached",
        lambda: (volume_of(demo_conn, ids[2]) or {}).get("status") == "available",
        120,
    )
    assert wait_ready("vol", "db-data-2", ns, timeout=30)["status"]["id"] == ids[2]
    status = wait_ready("vmg", "db", ns, timeout=60)["status"]
    assert status["retainedVolumes"] == ["db-data-2"] and status["retainedVolumeCount"] == 1

    # 2 → 3: db-2 comes back with the same volume.
    kubectl("patch", "vmg", "db", "-n", ns, "--type=merge", "-p", '{"spec":{"replicas":3}}')
    wait_until(
        "db-2 has its volume back", lambda: member_with_volume(demo_conn, ns, "db-2", ids[2]), 300
    )
    assert (wait_ready("vmg", "db", ns, timeout=60)["status"].get("retainedVolumeCount") or 0) == 0

    # Deleted with Retain: the members go, the Volumes stay (no owner), detached.
    kubectl("delete", "vmg", "db", "-n", ns, "--wait=false")
    wait_gone("vmg", "db", ns, 300)
    for i in range(3):
        body = get_obj("vol", f"db-data-{i}", ns)
        assert body is not None and not body["metadata"].get("ownerReferences")
        assert volume_of(demo_conn, ids[i]) is not None
    for i in range(3):
        kubectl("delete", "vol", f"db-data-{i}", "-n", ns, "--wait=false")
    for i in range(3):
        wait_gone("vol", f"db-data-{i}", ns, 180)


def test_a_group_deleted_with_delete_leaves_nothing(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    ns = namespace
    apply(ns, group("kv", 2, volumeRetention={"whenDeleted": "Delete"}))
    ids = volume_ids(ns, "kv", 2)
    wait_ready("vmg", "kv", ns, timeout=300)
    kubectl("delete", "vmg", "kv", "-n", ns, "--wait=false")
    wait_gone("vmg", "kv", ns, 300)
    for i in range(2):
        assert get_obj("vol", f"kv-data-{i}", ns) is None
        assert get_obj("vm", f"kv-{i}", ns) is None
        wait_until(
            f"kv-data-{i} gone from Cinder", lambda i=i: volume_of(demo_conn, ids[i]) is None, 60
        )


def test_load_balancer_and_dns_follow_stateful_members(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    """Followers key on the group, not on how its members are named or what they keep: the
    pool, the record and the share's rules hold the members' addresses, and follow a
    member's replacement."""
    ns = namespace
    apply(ns, group("app", 2))
    balancer = {
        "apiVersion": API,
        "kind": "LoadBalancer",
        "metadata": {"name": "app"},
        "spec": {"ports": [lb_port("app")]},
    }
    record = {
        "apiVersion": API,
        "kind": "DNSRecord",
        "metadata": {"name": "app"},
        "spec": {
            "zone": "kumo-demo.test.",
            "name": f"app-{ns}",  # unique in the shared zone
            "type": "A",
            "ttl": 60,
            "virtualMachineGroupRef": "app",
        },
    }
    share = share_manifest("app", 1, [{"virtualMachineGroupRef": "app", "accessLevel": "rw"}])
    apply(ns, balancer)
    apply(ns, record)
    apply(ns, share)
    ids = volume_ids(ns, "app", 2)

    def following() -> set[str] | None:
        members = members_of(ns, "app")
        if len(members) != 2 or any(condition(m).get("status") != "True" for m in members):
            return None
        addresses = {m["status"]["ip"] for m in members}
        lb = get_obj("lb", "app", ns) or {}
        rec = get_obj("dnsrecord", "app", ns) or {}
        lb_id, zone_id, rs_id = (
            (lb.get("status") or {}).get("id"),
            (rec.get("status") or {}).get("zoneId"),
            (rec.get("status") or {}).get("id"),
        )
        if not (lb_id and zone_id and rs_id):
            return None
        if pool_member_addresses(demo_conn, lb_id) != {80: addresses}:
            return None
        if set(demo_conn.dns.get_recordset(rs_id, zone_id).records or []) != addresses:
            return None
        share_id = ((get_obj("share", "app", ns) or {}).get("status") or {}).get("id")
        if not share_id or active_rules(demo_conn, share_id) != dict.fromkeys(addresses, "rw"):
            return None
        return addresses

    wait_until("pool and record hold the members' addresses", following, 420)
    first = wait_until(
        "app-0 has its volume", lambda: member_with_volume(demo_conn, ns, "app-0", ids[0]), 60
    )

    demo_conn.compute.delete_server(first)

    def replaced() -> str | None:
        server_id = member_with_volume(demo_conn, ns, "app-0", ids[0])
        return server_id if server_id not in (None, first) else None

    wait_until("app-0's new server has the same volume", replaced, 300)
    wait_until("pool and record follow the new server", following, 300)

    for kind in ("dnsrecord", "lb", "share", "vmg"):
        kubectl("delete", kind, "app", "-n", ns, "--wait=false")
    for kind in ("dnsrecord", "lb", "share", "vmg"):
        wait_gone(kind, "app", ns, 300)
    for i in range(2):
        kubectl("delete", "vol", f"app-data-{i}", "-n", ns, "--wait=false")
    for i in range(2):
        wait_gone("vol", f"app-data-{i}", ns, 180)
    assert not any(kumo_leftovers(demo_conn, ns).values())


def refused(ns: str, body: dict[str, Any]) -> str:
    proc = kubectl(
        "apply", "--dry-run=server", "-n", ns, "-f", "-", input=json.dumps(body), check=False
    )
    assert proc.returncode != 0, f"accepted: {body['spec']}"
    return str(proc.stderr)


def accepted(ns: str, body: dict[str, Any]) -> None:
    kubectl("apply", "--dry-run=server", "-n", ns, "-f", "-", input=json.dumps(body))


def test_admission_refuses_surge_templates_without_ordinal_and_changes(
    namespace: str, kumo_operator: Any
) -> None:
    ns = namespace
    surge = group("s", 0, strategy={"maxSurge": 1, "maxUnavailable": 0})
    assert "spec.strategy.maxSurge: must be 0 with identity Ordinal" in refused(ns, surge)
    surge = group("s", 0, strategy={"maxSurge": "25%"})
    assert "spec.strategy.maxSurge: must be 0 with identity Ordinal" in refused(ns, surge)
    stuck = group("u", 0, strategy={"maxUnavailable": "0%"})
    assert "spec.strategy.maxUnavailable: cannot be 0 with identity Ordinal" in refused(ns, stuck)
    not_a_share = group("p", 0, strategy={"maxUnavailable": "25"})
    assert "spec.strategy.maxUnavailable: Invalid value" in refused(ns, not_a_share)
    for strategy in ({}, {"maxUnavailable": "50%"}, {"maxSurge": 0}, {"maxSurge": "0%"}):
        accepted(ns, group("a", 0, strategy=strategy))
    random = group("r", 0, identity="Random", volumeTemplates=[], strategy={"maxSurge": 0})
    accepted(ns, random)  # maxUnavailable then defaults to 1
    random = group("r", 0, identity="Random")
    assert "spec.volumeTemplates: requires spec.identity: Ordinal" in refused(ns, random)
    twice = group("t", 0, volumeTemplates=[{"name": "a", "size": 1}, {"name": "a", "size": 1}])
    assert "names must be unique" in refused(ns, twice)

    apply(ns, group("ok", 0))
    for spec, message in (
        ({"identity": "Random", "volumeTemplates": []}, "spec.identity is immutable"),
        ({"volumeTemplates": [{"name": "data", "size": 2}]}, "spec.volumeTemplates is immutable"),
    ):
        proc = kubectl(
            "patch", "vmg", "ok", "-n", ns, "--type=merge", "-p", json.dumps({"spec": spec}),
            check=False,
        )  # fmt: skip
        assert proc.returncode != 0 and message in proc.stderr, (spec, proc.stderr)
    kubectl("delete", "vmg", "ok", "-n", ns, "--wait=false")
    wait_gone("vmg", "ok", ns, 60)


def test_the_example_needs_no_strategy_and_rolls_delete_then_create(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    """examples/more/stateful-group.yaml as shipped (no `strategy`: Ordinal's default,
    maxSurge 0 / maxUnavailable 1), without its snapshots (test_group_snapshots): a flavor
    change replaces db-1, then db-0, each deleted before it is made again and the next
    one deleted only once it is back — as the API server's audit log saw Kumo's writes."""
    ns = namespace
    body = yaml.safe_load(EXAMPLE.read_text())
    assert "strategy" not in body["spec"], "the example shows that none is needed"
    del body["spec"]["snapshotBeforeReplace"]
    body["spec"]["volumeRetention"]["whenDeleted"] = "Delete"
    apply(ns, body)
    ids = volume_ids(ns, "db", 2)
    wait_ready("vmg", "db", ns, timeout=300)
    first = servers_with_volumes(demo_conn, ns, "db", ids)

    since = datetime.now(UTC)
    patch = {"spec": {"template": {"image": "centos79", "flavor": "m1.small"}}}
    kubectl("patch", "vmg", "db", "-n", ns, "--type=merge", "-p", json.dumps(patch))

    def replaced(i: int) -> str | None:
        server_id = member_with_volume(demo_conn, ns, f"db-{i}", ids[i])
        return server_id if server_id not in (None, first[i]) else None

    for i in (1, 0):
        wait_until(f"db-{i} replaced, with its volume", lambda i=i: replaced(i), 300)
    status = wait_ready("vmg", "db", ns, timeout=60)["status"]
    assert status["updatedReplicas"] == 2

    members: list[tuple[str, str]] = []
    for w in writes_since(since, containing=ns):
        member = w.resource == "virtualmachines" and w.name.startswith("db-") and w.code < 300
        # A delete repeated while the member waits for its server to go counts once.
        if member and w.verb in ("create", "delete") and (w.verb, w.name) not in members[-1:]:
            members.append((w.verb, w.name))
    assert members == [
        ("delete", "db-1"),
        ("create", "db-1"),
        ("delete", "db-0"),
        ("create", "db-0"),
    ], "one member at a time, highest ordinal first, never two of a name"

    kubectl("delete", "vmg", "db", "-n", ns, "--wait=false")
    wait_gone("vmg", "db", ns, 300)
    for i in range(2):
        wait_gone("vol", f"db-data-{i}", ns, 180)
    assert not any(kumo_leftovers(demo_conn, ns).values())

"""`kubectl kumo tree`: the tree from a snapshot of a namespace (kumo.kinds.tree)."""

from __future__ import annotations

import json
from typing import Any

from kumo.api.kinds import VIRTUAL_MACHINE_GROUP
from kumo.kinds import tree
from kumo.kinds.tree import Node


def obj(
    kind: str,
    name: str,
    spec: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
    *,
    ready: str | None = "True",
    reason: str = "Ready",
    message: str = "",
    owner: str | None = None,
    stalled: bool = False,
    **meta: Any,
) -> dict[str, Any]:
    conditions = []
    if ready is not None:
        conditions.append({"type": "Ready", "status": ready, "reason": reason, "message": message})
        conditions.append({"type": "Stalled", "status": "True" if stalled else "False"})
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}", **meta}
    if owner:
        metadata["ownerReferences"] = [{"uid": f"uid-{owner}", "name": owner}]
    return {
        "kind": kind,
        "metadata": metadata,
        "spec": spec or {},
        "status": {**(status or {}), "conditions": conditions},
    }


def seed() -> dict[tree.ObjectKey, dict[str, Any]]:
    """The seed story: a group of two on a Network, an LB on it, a DNSRecord and a
    FloatingIP on the LB, and a VM of its own elsewhere."""
    return tree.index(
        [
            obj("Network", "net", status={"id": "n-1", "routerId": "r-1", "phase": "Ready",
                                           "subnets": [{"cidr": "10.0.0.0/24", "id": "s-1"}]}),
            obj("VirtualMachineGroup", "web", {"template": {"networks": ["net"]}},
                {"serverGroupId": "sg-1", "members": ["web-0", "web-1"]}),
            obj("VirtualMachine", "web-0", {"networks": ["net"]},
                {"id": "srv-0", "phase": "Running", "hostId": "h"}, owner="web"),
            obj("VirtualMachine", "web-1", {"networks": ["net"]},
                {"id": "srv-1", "phase": "Running"}, owner="web"),
            obj("VirtualMachine", "alone", {"networks": ["net"]}, {"id": "srv-2"}),
            obj(
                "LoadBalancer",
                "front",
                {"ports": [{"port": 80, "realServers": {"virtualMachineGroupRef": "web"}}]},
                {
                    "id": "lb-1",
                    "provisioningStatus": "ACTIVE",
                    "operatingStatus": "ONLINE",
                    "ports": [{"port": 80, "listenerId": "l-1", "poolId": "p-1",
                               "members": [{"id": "m-1", "name": "web-0"}]}],
                },
            ),
            obj("DNSRecord", "www", {"loadBalancerRef": "front"}, {"id": "rs-1", "zoneId": "z"}),
            obj("FloatingIP", "pub", {"loadBalancerRef": "front"}, {"id": "fip-1"}),
        ]
    )  # fmt: skip


def names(node: Node) -> list[tuple[str, str]]:
    return [(n.via, f"{n.kind}/{n.name}") for n in tree.walk(node)]


def test_a_group_shows_members_network_and_what_names_it() -> None:
    root = tree.build(seed(), ("VirtualMachineGroup", "ns", "web"))
    assert names(root) == [
        ("", "VirtualMachineGroup/web"),
        ("owns", "VirtualMachine/web-0"),
        ("spec.networks[]", "Network/net"),
        ("owns", "VirtualMachine/web-1"),
        ("spec.networks[]", "Network/net"),
        ("spec.template.networks[]", "Network/net"),
        ("used by: spec.ports[].realServers.virtualMachineGroupRef", "LoadBalancer/front"),
        ("used by: spec.loadBalancerRef", "DNSRecord/www"),
        ("used by: spec.loadBalancerRef", "FloatingIP/pub"),
    ]
    # Each object once in full: the Network under web-0, the others point back.
    repeated = [(n.name, n.repeated) for n in tree.walk(root) if n.name in ("net", "web")]
    assert repeated == [("web", False), ("net", False), ("net", True), ("net", True)]
    # A Network's other users (the lone VM) say nothing about the group: not shown.
    assert "VirtualMachine/alone" not in [n for _, n in names(root)]


def test_cloud_ids_and_states_come_from_the_status() -> None:
    root = tree.build(seed(), ("LoadBalancer", "ns", "front"))
    assert (root.id, root.state) == ("lb-1", "ACTIVE/ONLINE")
    assert [(c.path, c.id) for c in root.cloud] == [
        ("ports[80].listenerId", "l-1"),
        ("ports[80].poolId", "p-1"),
        ("ports[80].members[web-0].id", "m-1"),
    ]
    net = tree.build(seed(), ("Network", "ns", "net"))
    assert [(c.path, c.id) for c in net.cloud] == [
        ("routerId", "r-1"),
        ("subnets[10.0.0.0/24].id", "s-1"),
    ]
    vm = tree.build(seed(), ("VirtualMachine", "ns", "web-0"))
    assert vm.cloud == []  # hostId names a hypervisor, not a resource
    assert (vm.id, vm.state) == ("srv-0", "Running")


def test_a_missing_reference_is_a_node_that_does_not_exist() -> None:
    objects = tree.index([obj("VirtualMachine", "vm", {"networks": ["gone"]}, ready="False")])
    root = tree.build(objects, ("VirtualMachine", "ns", "vm"))
    (child,) = root.children
    assert (child.kind, child.name, child.exists, child.reason) == (
        "Network",
        "gone",
        False,
        "NotFound",
    )
    assert "missing" in tree.render(root)


def test_summary_says_stalled_paused_deleting_and_unreconciled() -> None:
    stalled = obj("VirtualMachine", "a", ready="False", reason="Building", stalled=True)
    stalled["status"]["conditions"][1].update(reason="FlavorNotFound", message="spec.flavor")
    assert tree.summary(stalled) == ("False", "FlavorNotFound", "spec.flavor")
    paused = obj("VirtualMachine", "b", annotations={"kumo.dev/paused": "true"})
    assert tree.summary(paused)[1] == "Paused"
    going = obj("VirtualMachine", "c", deletionTimestamp="2026-01-01T00:00:00Z", reason="")
    assert tree.summary(going)[1] == "Deleting"
    assert tree.summary(obj("VirtualMachine", "d", ready=None))[1] == "NotReconciled"


def test_render_and_json() -> None:
    root = tree.build(seed(), ("VirtualMachineGroup", "ns", "web"))
    text = tree.render(root)
    lines = text.splitlines()
    assert lines[0].split() == ["NAME", "READY", "REASON", "ID", "STATE"]
    assert lines[1].startswith("VirtualMachineGroup/web ")
    assert any(line.startswith("├─ serverGroupId") and "sg-1" in line for line in lines)
    assert any("└─ LoadBalancer/front (used by:" in line and "lb-1" in line for line in lines)
    assert any("(shown above)" in line for line in lines)
    data = json.loads(json.dumps(root.as_json()))
    assert data["kind"] == "VirtualMachineGroup" and data["cloud"][0]["id"] == "sg-1"
    assert data["children"][0]["name"] == "web-0"


def test_look_up_marks_ids_present_missing_and_unrecorded() -> None:
    class M:
        def __init__(self, kind: str, id_: str, owner: str) -> None:
            self.kind, self.id, self.owner = kind, id_, owner

    root = tree.build(seed(), ("VirtualMachineGroup", "ns", "web"))
    tree.look_up(
        root,
        [
            M("server_group", "sg-1", "uid-web"),
            M("server", "srv-0", "uid-web-0"),
            M("server", "stray", "uid-web-1"),
        ],
    )
    by_name = {n.name: n for n in tree.walk(root) if not n.repeated}
    assert root.cloud[0].cloud == "present: server_group"
    assert by_name["web-0"].cloud_state == "present: server"
    assert by_name["web-1"].cloud_state == "missing"
    assert [(c.id, c.cloud) for c in by_name["web-1"].cloud] == [("stray", "unrecorded")]


def test_kind_names_as_kubectl_knows_them() -> None:
    group = VIRTUAL_MACHINE_GROUP
    for text in (*group.short_names, group.kind, group.plural, f"{group.plural}.kumo.dev"):
        assert tree.kind_info(text) is group
    assert tree.kind_info("pod") is None


def test_owned_are_the_kinds_the_registry_says_a_kind_creates() -> None:
    objects = dict(seed())
    objects.update(
        tree.index(
            [
                obj("Volume", "data-0", {}, {"id": "v-0", "volumeStatus": "in-use"}, owner="web"),
                # Another owner's claim on an object of a kind a group does not create.
                obj("FloatingIP", "odd", {}, {"id": "fip-2"}, owner="web"),
            ]
        )
    )
    root = tree.build(objects, ("VirtualMachineGroup", "ns", "web"))
    owned = [(n.kind, n.name, n.state) for n in root.children if n.via == "owns"]
    assert owned == [
        ("Volume", "data-0", "in-use"),
        ("VirtualMachine", "web-0", "Running"),
        ("VirtualMachine", "web-1", "Running"),
    ]

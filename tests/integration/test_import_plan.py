"""Import, observe-only and `kumo plan` on the real lab: a hand-made server observed
(drift reported, nothing changed), then managed (marker stamped, spec applied); a
server another object owns is refused; a hand-made recordset imported; `kumo plan`
predicts a group's create and scale-out, which the controller then does."""

from __future__ import annotations

import contextlib
import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import yaml
from openstack import exceptions as os_exc

from tests.integration.helpers import (
    allow_unmarked_imports,
    apply,
    cluster_id,
    condition,
    lb_port,
    members_of,
    server_made_by_hand,
    wait_gone,
    wait_ready,
)
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import REPO_ROOT, KumoOperator, get_obj, wait_until

VM_SPEC = {"image": "centos79", "flavor": "m1.tiny"}
ZONE = "kumo-demo.test."


def kumo_plan(operator: KumoOperator, namespace: str, *files: Path) -> tuple[int, dict[str, Any]]:
    """`kumo plan -o json` as a user runs it, with the operator's default cloud."""
    args = [str(REPO_ROOT / ".venv" / "bin" / "kumo"), "plan", "-n", namespace, "-o", "json"]
    args += ["--clouds-yaml", operator.clouds_yaml, "--cloud", operator.cloud]
    for file in files:
        args += ["-f", str(file)]
    done = subprocess.run(
        args, env=operator.kube.env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode in (0, 2), done.stderr + done.stdout
    return done.returncode, json.loads(done.stdout)


def plan_of(report: dict[str, Any], kind: str, name: str) -> dict[str, Any]:
    found = [o for o in report["objects"] if (o["kind"], o["name"]) == (kind, name)]
    assert found, f"{kind}/{name} not in the plan: {report}"
    return found[0]


def hand_made_server(conn: Any, name: str) -> Any:
    return server_made_by_hand(conn, name, description="hand made", metadata={"role": "legacy"})


def drift_of(namespace: str, name: str) -> list[dict[str, str]]:
    return list(((get_obj("vm", name, namespace) or {}).get("status") or {}).get("drift") or [])


def test_observe_reports_drift_then_manage_takes_over(
    namespace: str, kumo_operator: KumoOperator, demo_conn: Any
) -> None:
    allow_unmarked_imports(namespace)
    name = f"legacy-{uuid.uuid4().hex[:6]}"
    server = hand_made_server(demo_conn, name)
    try:
        spec = {
            **VM_SPEC,
            "description": "kumo web",
            "metadata": {"role": "web"},
            "import": {"name": name},
            "managementPolicy": "Observe",
        }
        apply(
            namespace,
            {
                "apiVersion": "kumo.dev/v1alpha1",
                "kind": "VirtualMachine",
                "metadata": {"name": "legacy"},
                "spec": spec,
            },
        )
        want = {"field": "spec.description", "desired": "kumo web", "actual": "hand made"}
        wait_until("drift reported", lambda: want in drift_of(namespace, "legacy"), 120)
        obj = get_obj("vm", "legacy", namespace)
        assert obj["status"]["id"] == server.id
        assert {"field": "spec.metadata.role", "desired": "web", "actual": "legacy"} in drift_of(
            namespace, "legacy"
        )
        assert condition(obj, "Drifted")["status"] == "True"
        seen = demo_conn.compute.get_server(server.id)
        assert (seen.description, seen.metadata.get("role")) == ("hand made", "legacy")
        assert not any(t.startswith("kumo") for t in seen.tags or []), "no marker when observing"

        # An out-of-band edit is seen (and still not reverted).
        demo_conn.compute.update_server(server.id, description="edited by hand")
        edited = {"field": "spec.description", "desired": "kumo web", "actual": "edited by hand"}
        wait_until("the edit is reported", lambda: edited in drift_of(namespace, "legacy"), 120)
        assert demo_conn.compute.get_server(server.id).description == "edited by hand"

        # `kumo plan` on the cluster's object: observed, so no changes (exit 0), drift shown.
        code, report = kumo_plan(kumo_operator, namespace)
        legacy = plan_of(report, "VirtualMachine", "legacy")
        assert (code, legacy["mode"], legacy["changes"]) == (0, "observe", False)
        assert edited in legacy["drift"]

        # Switch to Manage: the marker is stamped and the spec applied in place.
        kubectl(
            "patch",
            "vm",
            "legacy",
            "-n",
            namespace,
            "--type=merge",
            "-p",
            json.dumps({"spec": {"managementPolicy": "Manage"}}),
        )
        wait_until(
            "managed",
            lambda: demo_conn.compute.get_server(server.id).description == "kumo web",
            120,
        )
        ready = wait_ready("vm", "legacy", namespace)
        taken = demo_conn.compute.get_server(server.id)
        assert f"kumo-owner={ready['metadata']['uid']}" in taken.tags
        assert taken.metadata["role"] == "web"
        assert ready["status"]["id"] == server.id, "the same server, not a replacement"
        assert not ready["status"].get("drift")
        kubectl("delete", "vm", "legacy", "-n", namespace, "--wait=false")
        wait_gone("vm", "legacy", namespace)
        wait_until(
            "imported server deleted like Kumo's own",
            lambda: (
                demo_conn.compute.find_server(server.id, ignore_missing=True) is None
                or demo_conn.compute.get_server(server.id).status == "DELETED"
            ),
            180,
        )
    finally:
        with contextlib.suppress(os_exc.NotFoundException):
            demo_conn.compute.delete_server(server.id, ignore_missing=True)


def test_importing_a_server_another_object_owns_is_refused(
    namespace: str, kumo_operator: KumoOperator, demo_conn: Any
) -> None:
    apply(
        namespace,
        {
            "apiVersion": "kumo.dev/v1alpha1",
            "kind": "VirtualMachine",
            "metadata": {"name": "owner"},
            "spec": VM_SPEC,
        },
    )
    owner = wait_ready("vm", "owner", namespace)
    sid = owner["status"]["id"]
    apply(
        namespace,
        {
            "apiVersion": "kumo.dev/v1alpha1",
            "kind": "VirtualMachine",
            "metadata": {"name": "thief"},
            "spec": {**VM_SPEC, "import": {"id": sid}},
        },
    )

    def refused() -> dict[str, Any] | None:
        cond = condition(get_obj("vm", "thief", namespace))
        return cond if cond.get("reason") == "AlreadyOwned" else None

    cond = wait_until("AlreadyOwned", refused, 120)
    assert cond["message"].startswith("spec.import:")
    tags = demo_conn.compute.get_server(sid).tags
    assert f"kumo-owner={owner['metadata']['uid']}" in tags
    assert len([t for t in tags if t.startswith("kumo-owner=")]) == 1


def test_a_hand_made_recordset_is_imported(
    namespace: str, kumo_operator: KumoOperator, demo_conn: Any
) -> None:
    allow_unmarked_imports(namespace)
    zone = demo_conn.dns.find_zone(ZONE)
    record = f"imp-{namespace}"
    rs = demo_conn.dns.create_recordset(
        zone, name=f"{record}.{ZONE}", type="A", records=["192.0.2.50"], ttl=60
    )
    try:
        apply(
            namespace,
            {
                "apiVersion": "kumo.dev/v1alpha1",
                "kind": "DNSRecord",
                "metadata": {"name": "imp"},
                "spec": {
                    "zone": ZONE,
                    "name": record,
                    "ttl": 60,
                    "values": ["192.0.2.51"],
                    "import": {"name": record},
                },
            },
        )
        ready = wait_ready("dns", "imp", namespace, timeout=120)
        assert ready["status"]["id"] == rs.id
        now = demo_conn.dns.get_recordset(rs.id, zone.id)
        assert now.records == ["192.0.2.51"]
        marker = f"kumo-owner={ready['metadata']['uid']}@{cluster_id()}"
        assert marker in (now.description or "").split()
    finally:
        with contextlib.suppress(os_exc.NotFoundException):
            demo_conn.dns.delete_recordset(rs.id, zone.id)


def test_plan_predicts_create_and_scale_out(
    namespace: str, kumo_operator: KumoOperator, demo_conn: Any, tmp_path: Path
) -> None:
    group = {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "VirtualMachineGroup",
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "haPolicy": "soft", "template": VM_SPEC},
    }
    manifest = tmp_path / "web.yaml"
    manifest.write_text(yaml.safe_dump(group))

    code, report = kumo_plan(kumo_operator, namespace, manifest)
    web = plan_of(report, "VirtualMachineGroup", "web")
    assert code == 2 and web["new"]
    made = [(a["verb"], a["noun"]) for a in web["actions"]]
    assert ("create", "server group") in made
    assert made.count(("create", "VirtualMachine")) == 2
    assert get_obj("vmg", "web", namespace) is None, "the plan applied nothing"

    apply(namespace, manifest)
    wait_until(
        "2 members Ready",
        lambda: (
            len([m for m in members_of(namespace, "web") if condition(m).get("status") == "True"])
            == 2
        ),
        240,
    )
    wait_ready("vmg", "web", namespace)
    code, report = kumo_plan(kumo_operator, namespace, manifest)
    assert plan_of(report, "VirtualMachineGroup", "web")["actions"] == [], report
    assert code == 0, report

    group["spec"]["replicas"] = 3
    manifest.write_text(yaml.safe_dump(group))
    code, report = kumo_plan(kumo_operator, namespace, manifest)
    web = plan_of(report, "VirtualMachineGroup", "web")
    assert code == 2
    assert [(a["verb"], a["noun"]) for a in web["actions"]] == [("create", "VirtualMachine")]
    before = {m["metadata"]["name"] for m in members_of(namespace, "web")}
    apply(namespace, manifest)
    wait_until(
        "3 members Ready",
        lambda: (
            len([m for m in members_of(namespace, "web") if condition(m).get("status") == "True"])
            == 3
        ),
        240,
    )
    after = {m["metadata"]["name"] for m in members_of(namespace, "web")}
    assert before < after and len(after - before) == 1, "the one new member the plan showed"


def _ready_members(namespace: str, group: str) -> list[dict[str, Any]]:
    return [m for m in members_of(namespace, group) if condition(m).get("status") == "True"]


def _group(name: str, replicas: int, template: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "VirtualMachineGroup",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "haPolicy": "none", "template": template},
    }


def test_plan_predicts_the_rollout_and_the_scale_in_victim(
    namespace: str, kumo_operator: KumoOperator, demo_conn: Any, tmp_path: Path
) -> None:
    manifest = tmp_path / "roll.yaml"
    manifest.write_text(yaml.safe_dump(_group("roll", 2, VM_SPEC)))
    apply(namespace, manifest)
    wait_until("2 members Ready", lambda: len(_ready_members(namespace, "roll")) == 2, 240)
    wait_ready("vmg", "roll", namespace)

    # A template change: one surge member (maxSurge 1, maxUnavailable 0) and nothing deleted.
    changed = {**VM_SPEC, "description": "rolled"}
    manifest.write_text(yaml.safe_dump(_group("roll", 2, changed)))
    code, report = kumo_plan(kumo_operator, namespace, manifest)
    actions = [
        (a["verb"], a["noun"]) for a in plan_of(report, "VirtualMachineGroup", "roll")["actions"]
    ]
    assert code == 2 and actions == [("create", "VirtualMachine")], report
    old = {m["metadata"]["name"] for m in members_of(namespace, "roll")}
    apply(namespace, manifest)
    wait_until(
        "the rollout done: 2 Ready members, none of the old ones",
        lambda: (
            len(ready := _ready_members(namespace, "roll")) == 2
            and not {m["metadata"]["name"] for m in ready} & old
            and len(members_of(namespace, "roll")) == 2
        ),
        420,
    )
    wait_ready("vmg", "roll", namespace)
    for vm in members_of(namespace, "roll"):
        server = demo_conn.compute.get_server(vm["status"]["id"])
        assert server.description == "rolled"

    # Scale-in: the plan names the member it deletes; the controller deletes that one.
    manifest.write_text(yaml.safe_dump(_group("roll", 1, changed)))
    code, report = kumo_plan(kumo_operator, namespace, manifest)
    roll = plan_of(report, "VirtualMachineGroup", "roll")
    deletes = [a["target"] for a in roll["actions"] if a["verb"] == "delete"]
    assert code == 2 and len(deletes) == 1 and len(roll["actions"]) == 1, report
    apply(namespace, manifest)
    wait_until("one member left", lambda: len(members_of(namespace, "roll")) == 1, 240)
    left = {m["metadata"]["name"] for m in members_of(namespace, "roll")}
    assert len(left) == 1 and deletes[0] not in left, (deletes, left)


def _hand_made_lb(conn: Any, name: str) -> tuple[Any, Any, Any]:
    """A load balancer with an HTTP listener on 80 and its pool, made without Kumo."""
    lbs = conn.load_balancer
    network = conn.network.find_network("kumo-demo-net")
    lb = lbs.create_load_balancer(name=name, vip_network_id=network.id)

    def active() -> bool:
        return lbs.get_load_balancer(lb.id).provisioning_status == "ACTIVE"

    def when_active(call: Any) -> Any:
        wait_until(f"load balancer {name} ACTIVE", active, 180, tolerate=())
        return call()

    listener = when_active(
        lambda: lbs.create_listener(loadbalancer_id=lb.id, protocol="HTTP", protocol_port=80)
    )
    pool = when_active(
        lambda: lbs.create_pool(
            listener_id=listener.id, protocol="HTTP", lb_algorithm="ROUND_ROBIN"
        )
    )
    when_active(lambda: None)
    return lb, listener, pool


def test_a_hand_made_load_balancer_with_listener_and_pool_is_imported(
    namespace: str, kumo_operator: KumoOperator, demo_conn: Any, tmp_path: Path
) -> None:
    allow_unmarked_imports(namespace)
    apply(namespace, _group("imp-web", 1, VM_SPEC))
    wait_until("1 member Ready", lambda: len(_ready_members(namespace, "imp-web")) == 1, 240)
    address = _ready_members(namespace, "imp-web")[0]["status"]["ip"]
    name = f"legacy-lb-{namespace}"
    lb, listener, pool = _hand_made_lb(demo_conn, name)
    try:
        spec = {
            "import": {"name": name},
            "vipNetwork": "kumo-demo-net",
            "ports": [lb_port("imp-web", drainSeconds=0)],
        }
        manifest = tmp_path / "lb.yaml"
        body = {
            "apiVersion": "kumo.dev/v1alpha1",
            "kind": "LoadBalancer",
            "metadata": {"name": "imported"},
            "spec": spec,
        }
        manifest.write_text(yaml.safe_dump(body))

        # The plan: take the load balancer over (its tags), no new load balancer,
        # listener or pool — those on port 80 are used as they are.
        code, report = kumo_plan(kumo_operator, namespace, manifest)
        planned = plan_of(report, "LoadBalancer", "imported")
        nouns = [(a["verb"], a["noun"], a.get("target")) for a in planned["actions"]]
        assert code == 2, report
        assert ("update", "load balancer", lb.id) in nouns, nouns
        assert not [n for n in nouns if n[0] == "create"], nouns

        apply(namespace, manifest)
        ready = wait_ready("lb", "imported", namespace, timeout=240)
        assert ready["status"]["id"] == lb.id
        port = ready["status"]["ports"][0]
        assert (port["listenerId"], port["poolId"]) == (listener.id, pool.id)
        taken = demo_conn.load_balancer.get_load_balancer(lb.id)
        assert f"kumo-owner={ready['metadata']['uid']}" in taken.tags
        assert [x.id for x in demo_conn.load_balancer.listeners(load_balancer_id=lb.id)] == [
            listener.id
        ], "no second listener"
        assert [p.id for p in demo_conn.load_balancer.pools(loadbalancer_id=lb.id)] == [pool.id]
        wait_until(
            "the group's member in the imported pool",
            lambda: {m.address for m in demo_conn.load_balancer.members(pool.id)} == {address},
            120,
        )

        # An immutable change: the plan says it is not applied and why, and the API server
        # refuses it (a CEL rule on the CRD, naming the field; the controller's own
        # ImmutableFieldChanged stays as the second line for objects stored before it).
        spec["zone"] = "az-elsewhere"
        manifest.write_text(yaml.safe_dump(body))
        code, report = kumo_plan(kumo_operator, namespace, manifest)
        planned = plan_of(report, "LoadBalancer", "imported")
        text = json.dumps(planned)
        assert "ImmutableFieldChanged" in text and "spec.zone" in text, planned
        assert not [a for a in planned["actions"] if a["verb"] in ("create", "delete")], planned
        refused = kubectl("apply", "-n", namespace, "-f", str(manifest), check=False)
        assert refused.returncode != 0 and "spec.zone is immutable" in refused.stderr, refused
        assert get_obj("lb", "imported", namespace)["spec"].get("zone") != "az-elsewhere"
        assert demo_conn.load_balancer.get_load_balancer(lb.id).provisioning_status != "DELETED"
        assert get_obj("lb", "imported", namespace)["status"]["id"] == lb.id, "not replaced"
    finally:
        kubectl("delete", "lb", "imported", "-n", namespace, "--wait=false", check=False)
        wait_gone("lb", "imported", namespace, timeout=240)
        with contextlib.suppress(os_exc.NotFoundException):
            status = demo_conn.load_balancer.get_load_balancer(lb.id).provisioning_status
            if status not in ("DELETED", "PENDING_DELETE"):
                demo_conn.load_balancer.delete_load_balancer(lb.id, cascade=True)


def test_orphan_releases_the_server_and_an_import_takes_it_back(
    namespace: str, kumo_operator: KumoOperator, demo_conn: Any
) -> None:
    """deletionPolicy: Orphan swaps the marker for kumo-orphan=<uid> (so the orphan sweep
    never takes it for a leak); a new object's spec.import takes the server over."""
    allow_unmarked_imports(namespace)
    apply(
        namespace,
        {
            "apiVersion": "kumo.dev/v1alpha1",
            "kind": "VirtualMachine",
            "metadata": {"name": "kept"},
            "spec": {"image": "centos79", "flavor": "m1.tiny", "deletionPolicy": "Orphan"},
        },
    )
    first = wait_ready("vm", "kept", namespace)
    server_id, uid = first["status"]["id"], first["metadata"]["uid"]
    try:
        kubectl("delete", "vm", "kept", "-n", namespace, "--wait=false")
        wait_gone("vm", "kept", namespace)
        tags = demo_conn.compute.get_server(server_id).tags
        assert f"kumo-orphan={uid}" in tags and not any(t.startswith("kumo-owner=") for t in tags)
        apply(
            namespace,
            {
                "apiVersion": "kumo.dev/v1alpha1",
                "kind": "VirtualMachine",
                "metadata": {"name": "again"},
                "spec": {"image": "centos79", "flavor": "m1.tiny", "import": {"id": server_id}},
            },
        )
        again = wait_ready("vm", "again", namespace)
        assert again["status"]["id"] == server_id, "the released server, not a new one"
        tags = demo_conn.compute.get_server(server_id).tags
        assert f"kumo-owner={again['metadata']['uid']}" in tags
        assert not any(t.startswith("kumo-orphan=") for t in tags), "the orphan mark is gone"
        kubectl("delete", "vm", "again", "-n", namespace, "--wait=false")
        wait_gone("vm", "again", namespace)
        wait_until(
            "the imported server is deleted like Kumo's own",
            lambda: (
                demo_conn.compute.find_server(server_id) is None
                or demo_conn.compute.get_server(server_id).status == "DELETED"
            ),
            180,
        )
    finally:
        with contextlib.suppress(os_exc.NotFoundException):
            demo_conn.compute.delete_server(server_id)

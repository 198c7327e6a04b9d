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

from tests.integration.helpers import apply, condition, members_of, wait_gone, wait_ready
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
    image = conn.image.find_image("centos79")
    flavor = conn.compute.find_flavor("m1.tiny")
    network = conn.network.find_network("kumo-demo-net")
    server = conn.compute.create_server(
        name=name,
        image_id=image.id,
        flavor_id=flavor.id,
        networks=[{"uuid": network.id}],
        description="hand made",
        metadata={"role": "legacy"},
    )
    return conn.compute.wait_for_server(server, wait=180)


def drift_of(namespace: str, name: str) -> list[dict[str, str]]:
    return list(((get_obj("vm", name, namespace) or {}).get("status") or {}).get("drift") or [])


def test_observe_reports_drift_then_manage_takes_over(
    namespace: str, kumo_operator: KumoOperator, demo_conn: Any
) -> None:
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
        assert f"kumo-owner={ready['metadata']['uid']}" in (now.description or "").split()
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

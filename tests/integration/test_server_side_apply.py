"""Server-side apply of Kumo's objects on the real kube-apiserver: every example applies
with `--server-side`, a second field manager gets a conflict on the fields it does not
own, and Kumo's status writes (through the status subresource) never take ownership of
spec fields, so a GitOps tool applying the spec keeps owning it."""

from __future__ import annotations

import json
from typing import Any

import yaml

from tests.integration.helpers import EXAMPLES, wait_ready
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import get_obj
from tests.integration.test_dns import ZONE


def record(ttl: int, record_name: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "kumo.dev/v1alpha1",
            "kind": "DNSRecord",
            "metadata": {"name": "ssa"},
            "spec": {"zone": ZONE, "name": record_name, "ttl": ttl, "values": ["192.0.2.9"]},
        }
    )


def ssa(namespace: str, manager: str, manifest: str, *extra: str) -> Any:
    return kubectl(
        "apply", "--server-side", f"--field-manager={manager}", "-n", namespace, "-f", "-",
        *extra, input=manifest, check=False,
    )  # fmt: skip


def managed_fields(kind: str, name: str, namespace: str) -> list[dict[str, Any]]:
    """``metadata.managedFields``, which ``kubectl get -o json`` leaves out unless asked."""
    got = kubectl("get", kind, name, "-n", namespace, "-o", "json", "--show-managed-fields")
    return json.loads(got.stdout)["metadata"]["managedFields"]  # type: ignore[no-any-return]


def test_every_example_applies_server_side(namespace: str) -> None:
    for path in sorted(EXAMPLES.glob("*.yaml")):
        proc = kubectl(
            "apply", "--server-side", "--dry-run=server", "-n", namespace, "-f", str(path),
            check=False,
        )  # fmt: skip
        assert proc.returncode == 0, f"{path.name}: {proc.stderr}"
        assert "serverside-applied" in proc.stdout, proc.stdout


def test_a_group_with_an_import_list_applies_server_side(namespace: str) -> None:
    """Lists of objects without keys are atomic: a `set` of them made every server-side
    apply of the object fail ("associative list without keys has an element that's a
    map type"), e.g. a group with spec.import.members."""
    group = {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "VirtualMachineGroup",
        "metadata": {"name": "ssa-import"},
        "spec": {
            "replicas": 2,
            "template": {"image": "centos79", "flavor": "m1.tiny"},
            "import": {"members": [{"name": "a"}, {"id": "b"}]},
        },
    }
    proc = ssa(namespace, "team-a", yaml.safe_dump(group), "--dry-run=server")
    assert proc.returncode == 0, proc.stderr
    assert "serverside-applied" in proc.stdout, proc.stdout


def test_field_managers_and_kumos_status_writes(namespace: str, kumo_operator: Any) -> None:
    name = f"ssa-{namespace}"
    first = ssa(namespace, "team-a", record(60, name))
    assert first.returncode == 0, first.stderr
    wait_ready("dns", "ssa", namespace, timeout=120)

    # Another manager changing a field team-a owns: a conflict naming field and owner.
    second = ssa(namespace, "team-b", record(120, name))
    assert second.returncode != 0
    assert "conflict" in second.stderr.lower() and "team-a" in second.stderr, second.stderr
    assert ".spec.ttl" in second.stderr, second.stderr
    assert get_obj("dns", "ssa", namespace)["spec"]["ttl"] == 60

    # Kumo wrote status (Ready): its entries are status-only, and team-a still owns spec.
    managed = managed_fields("dns", "ssa", namespace)
    spec_owners = {m["manager"] for m in managed if "f:spec" in m.get("fieldsV1", {})}
    status_writers = [m for m in managed if m.get("subresource") == "status"]
    assert spec_owners == {"team-a"}, json.dumps(managed)
    assert status_writers, "Kumo's status writes are not recorded"
    for entry in status_writers:
        assert set(entry["fieldsV1"]) == {"f:status"}, json.dumps(entry)

    # Re-applying team-a's unchanged spec is no change at all (Kumo's status writes did
    # not take a field from it), and forcing takes the field over.
    generation = get_obj("dns", "ssa", namespace)["metadata"]["generation"]
    again = ssa(namespace, "team-a", record(60, name))
    assert again.returncode == 0, again.stderr
    assert get_obj("dns", "ssa", namespace)["metadata"]["generation"] == generation
    forced = ssa(namespace, "team-b", record(120, name), "--force-conflicts")
    assert forced.returncode == 0, forced.stderr
    assert get_obj("dns", "ssa", namespace)["spec"]["ttl"] == 120
    kubectl("delete", "dns", "ssa", "-n", namespace, "--wait=false")

"""Fields fixed once the cloud resource exists are refused at admission, on the real
kube-apiserver (CEL rules generated from the API models) with Kumo and the lab's
Designate and Manila: the edit fails with a message naming the field, the object keeps
its spec and generation, and nothing changes in the cloud. Before the resource exists
the same fields may still be corrected."""

from __future__ import annotations

import json
from typing import Any

from tests.integration.helpers import allow_unmarked_imports, apply, wait_ready, wait_reason
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import get_obj
from tests.integration.test_dns import ZONE, recordset
from tests.integration.test_shares import share_manifest, share_of


def merge_patch(namespace: str, kind: str, name: str, spec: dict[str, Any]) -> Any:
    """What `kubectl edit` sends for a spec change; the result, refused or not."""
    return kubectl(
        "patch", kind, name, "-n", namespace, "--type=merge", "-p", json.dumps({"spec": spec}),
        check=False,
    )  # fmt: skip


def assert_refused(namespace: str, kind: str, name: str, spec: dict, message: str) -> None:
    before = get_obj(kind, name, namespace) or {}
    proc = merge_patch(namespace, kind, name, spec)
    assert proc.returncode != 0, f"{kind}/{name}: {spec} was accepted"
    assert message in proc.stderr, f"{message!r} not in {proc.stderr!r}"
    after = get_obj(kind, name, namespace) or {}
    assert after["spec"] == before["spec"]
    assert after["metadata"]["generation"] == before["metadata"]["generation"]


def dns(name: str, record: str, zone: str = ZONE, **extra: Any) -> dict[str, Any]:
    spec = {"zone": zone, "name": record, "type": "A", "ttl": 60, "values": ["192.0.2.7"]}
    return {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "DNSRecord",
        "metadata": {"name": name},
        "spec": {**spec, **extra},
    }


def test_fixed_fields_are_refused_once_the_resource_exists(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    apply(namespace, dns("rec", f"fixed-{namespace}"))
    apply(namespace, share_manifest("data", 1, []))
    record = wait_ready("dns", "rec", namespace, timeout=120)["status"]
    share = wait_ready("share", "data", namespace, timeout=120)["status"]

    assert_refused(namespace, "dns", "rec", {"type": "TXT"}, "spec.type is immutable")
    assert_refused(namespace, "dns", "rec", {"zone": "kumo-other.test."}, "spec.zone is immutable")
    assert_refused(namespace, "share", "data", {"protocol": "CIFS"}, "spec.protocol is immutable")
    assert_refused(namespace, "share", "data", {"shareType": "x"}, "spec.shareType is immutable")
    assert_refused(
        namespace,
        "share",
        "data",
        {"availabilityZone": "az9"},
        "spec.availabilityZone is immutable",
    )

    # Nothing changed in the cloud, and what may change still does: a share grows.
    rs = recordset(demo_conn, record["zoneId"], record["id"])
    assert rs is not None and (rs.type, rs.zone_id) == ("A", record["zoneId"])
    assert (share_of(demo_conn, share["id"]) or {})["share_proto"] == "NFS"
    grown = merge_patch(namespace, "share", "data", {"size": 2})
    assert grown.returncode == 0, grown.stderr


def test_a_field_can_be_corrected_before_the_resource_exists(
    namespace: str, kumo_operator: Any
) -> None:
    """A typo in a zone is fixed by editing it: no recordset was made from it yet."""
    apply(namespace, dns("typo", f"typo-{namespace}", zone="no-such-zone.test."))
    wait_reason("dns", "typo", namespace, "ZoneNotFound", 120)
    fixed = merge_patch(namespace, "dns", "typo", {"zone": ZONE})
    assert fixed.returncode == 0, fixed.stderr
    assert wait_ready("dns", "typo", namespace, timeout=120)["spec"]["zone"] == ZONE


def test_import_cannot_be_pointed_elsewhere_once_taken_over(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    allow_unmarked_imports(namespace)
    zone = demo_conn.dns.find_zone(ZONE)
    fqdn = f"hand-{namespace}.{ZONE}"
    made = demo_conn.dns.create_recordset(zone, name=fqdn, type="A", records=["192.0.2.8"], ttl=60)
    apply(namespace, dns("taken", f"hand-{namespace}", **{"import": {"id": made.id}}))
    assert wait_ready("dns", "taken", namespace, timeout=120)["status"]["id"] == made.id
    assert_refused(
        namespace,
        "dns",
        "taken",
        {"import": {"id": "another-recordset"}},
        "spec.import cannot name another resource",
    )
    dropped = kubectl(
        "patch", "dns", "taken", "-n", namespace, "--type=json",
        "-p", '[{"op": "remove", "path": "/spec/import"}]', check=False,
    )  # fmt: skip
    assert dropped.returncode == 0, dropped.stderr

"""DNSRecord on the real kube-apiserver and the lab's Designate: create, update in place,
heal an out-of-band change, delete leaving nothing (and nothing that is not Kumo's)."""

from __future__ import annotations

import contextlib
from typing import Any

from openstack import exceptions as os_exc

from tests.integration.helpers import apply, cluster_id, condition, wait_gone, wait_ready
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import get_obj, wait_until

ZONE = "kumo-demo.test."
DNS_TIMEOUT = 120


def manifest(record: str, values: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "DNSRecord",
        "metadata": {"name": "api"},
        "spec": {"zone": ZONE, "name": record, "type": "A", "ttl": 60, "values": values},
    }


def recordset(conn: Any, zone_id: str, rs_id: str) -> Any | None:
    try:
        return conn.dns.get_recordset(rs_id, zone_id)
    except os_exc.NotFoundException:
        return None


def published(conn: Any, zone_id: str, rs_id: str, values: list[str]) -> bool:
    rs = recordset(conn, zone_id, rs_id)
    return rs is not None and rs.status == "ACTIVE" and sorted(rs.records) == sorted(values)


def status_shows(namespace: str, values: list[str]) -> bool:
    obj = get_obj("dns", "api", namespace)
    return (
        obj is not None
        and condition(obj).get("status") == "True"
        and (obj.get("status") or {}).get("records") == sorted(values)
    )


def test_dns_record_lifecycle(namespace: str, kumo_operator: Any, demo_conn: Any) -> None:
    record = f"api-{namespace}"  # unique in the shared zone
    fqdn = f"{record}.{ZONE}"

    # Create: Ready, the ID recorded, the recordset in Designate carries Kumo's marker.
    apply(namespace, manifest(record, ["192.0.2.10"]))
    obj = wait_ready("dns", "api", namespace, timeout=DNS_TIMEOUT)
    st = obj["status"]
    assert (st["fqdn"], st["records"]) == (fqdn, ["192.0.2.10"])
    zone_id, rs_id = st["zoneId"], st["id"]
    assert zone_id == demo_conn.dns.find_zone(ZONE).id
    rs = recordset(demo_conn, zone_id, rs_id)
    assert rs is not None
    assert (rs.name, rs.type, rs.records, rs.ttl) == (fqdn, "A", ["192.0.2.10"], 60)
    marker = f"kumo-owner={obj['metadata']['uid']}@{cluster_id()}"
    assert marker in (rs.description or "").split()

    # A foreign recordset of another type on the same name is never touched.
    foreign = demo_conn.dns.create_recordset(
        zone_id, name=fqdn, type="TXT", records=['"hand-made"'], ttl=60
    )
    try:
        updated_healed_deleted(namespace, demo_conn, zone_id, rs_id)
        assert recordset(demo_conn, zone_id, foreign.id) is not None, "foreign recordset gone"
    finally:
        with contextlib.suppress(os_exc.NotFoundException):
            demo_conn.dns.delete_recordset(foreign.id, zone_id)


def updated_healed_deleted(namespace: str, conn: Any, zone_id: str, rs_id: str) -> None:
    record = f"api-{namespace}"
    new = ["192.0.2.11", "192.0.2.12"]

    # Change the values: the same recordset is updated in place.
    apply(namespace, manifest(record, new))
    wait_until("recordset updated", lambda: published(conn, zone_id, rs_id, new), DNS_TIMEOUT)
    wait_until("status shows the new records", lambda: status_shows(namespace, new), DNS_TIMEOUT)

    # Someone changes the records by hand: drift detection puts them back.
    conn.dns.update_recordset(conn.dns.get_recordset(rs_id, zone_id), records=["203.0.113.66"])
    wait_until("recordset healed", lambda: published(conn, zone_id, rs_id, new), DNS_TIMEOUT)

    # Delete: the recordset goes, then the object.
    kubectl("delete", "dns", "api", "-n", namespace, "--wait=false")
    wait_gone("dns", "api", namespace, timeout=DNS_TIMEOUT)
    wait_until("recordset deleted", lambda: recordset(conn, zone_id, rs_id) is None, DNS_TIMEOUT)

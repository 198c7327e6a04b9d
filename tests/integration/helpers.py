"""Small helpers shared by the scenario tests: apply, wait for conditions, read the cloud."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from openstack import exceptions as os_exc

from kumo.cloud import pages
from kumo.ports.markers import Marker, cluster_from_uid, metadata_marker, text_marker
from kumo.ports.model import described_marker
from kumo.runtime.imports import LABEL as IMPORT_LABEL
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import get_obj, list_objs, wait_until

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def cluster_id() -> str:
    """The cluster ID the suite's Kumo names in its markers (kumo.ports.markers): derived
    from the lab's kube-system namespace, as ``kumo run`` derives it."""
    uid = kubectl("get", "namespace", "kube-system", "-o", "jsonpath={.metadata.uid}").stdout
    return cluster_from_uid(uid.strip())


def apply(namespace: str, manifest: dict[str, Any] | Path) -> None:
    text = manifest.read_text() if isinstance(manifest, Path) else yaml.safe_dump(manifest)
    kubectl("apply", "-n", namespace, "-f", "-", input=text)


def allow_unmarked_imports(namespace: str) -> None:
    """The suite's Kumo runs on the shared default cloud (kumo-demo), where importing or
    observing a resource without Kumo's marker needs the namespace's permission."""
    kubectl("label", "namespace", namespace, f"{IMPORT_LABEL}=true", "--overwrite")


def events_of(namespace: str, name: str, reason: str | None = None) -> list[str]:
    """The messages of the events about the object ``name`` (with ``reason``, if given)."""
    selector = f"involvedObject.name={name}" + (f",reason={reason}" if reason else "")
    out = kubectl(
        "get", "events", "-n", namespace, "-o", "json", "--field-selector", selector
    ).stdout  # fmt: skip
    return [e.get("message", "") for e in json.loads(out)["items"]]


def default_cloud_secret(openstack_lab: str, namespace: str) -> dict[str, Any]:
    """The operator's default-cloud Secret in ``namespace``, naming the lab's kumo-demo
    cloud (what deploy/default-cloud ships empty)."""
    clouds = yaml.safe_load(Path(openstack_lab).read_text())
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "kumo-default-cloud", "namespace": namespace},
        "stringData": {
            "clouds.yaml": yaml.safe_dump({"clouds": {"kumo-demo": clouds["clouds"]["kumo-demo"]}}),
            "cloud": "kumo-demo",
        },
    }


#: The smallest server the lab builds.
VM_SPEC = {"image": "centos79", "flavor": "m1.tiny"}


def vm(name: str) -> dict[str, Any]:
    """A VirtualMachine of ``VM_SPEC``."""
    return {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "VirtualMachine",
        "metadata": {"name": name},
        "spec": dict(VM_SPEC),
    }


def lb_port(
    group: str, port: int = 80, protocol: str = "http", member_port: int | None = None, **more: Any
) -> dict[str, Any]:
    """One entry of a LoadBalancer's ``spec.ports``: ``port`` to the members of the
    VirtualMachineGroup ``group`` on ``member_port`` (default: the same), one protocol;
    ``more``: more ``realServers`` fields (``drainSeconds``)."""
    real_servers = {"protocol": protocol, "port": member_port or port}
    return {
        "port": port,
        "protocol": protocol,
        "realServers": {**real_servers, "virtualMachineGroupRef": group, **more},
    }


def example(name: str) -> dict[str, Any]:
    return yaml.safe_load((EXAMPLES / name).read_text())


def condition(obj: dict[str, Any] | None, type_: str = "Ready") -> dict[str, Any]:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == type_:
            return dict(cond)
    return {}


def wait_ready(kind: str, name: str, namespace: str, timeout: float = 180) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        obj = get_obj(kind, name, namespace)
        return obj if condition(obj).get("status") == "True" else None

    return wait_until(f"{kind}/{name} Ready", check, timeout)  # type: ignore[no-any-return]


def wait_reason(
    kind: str, name: str, namespace: str, reason: str, timeout: float = 120
) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        cond = condition(get_obj(kind, name, namespace))
        return cond if cond.get("reason") == reason else None

    return wait_until(f"{kind}/{name} reason {reason}", check, timeout)  # type: ignore[no-any-return]


def wait_gone(kind: str, name: str, namespace: str, timeout: float = 180) -> None:
    wait_until(f"{kind}/{name} deleted", lambda: get_obj(kind, name, namespace) is None, timeout)


def namespace_events(namespace: str, reason: str) -> list[str]:
    """The messages of the namespace's events of that reason (the orphan sweep's)."""
    out = kubectl(
        "get", "events", "-n", namespace, "--field-selector", f"reason={reason}", "-o", "json"
    )
    return [e["message"] for e in json.loads(out.stdout)["items"]]


def members_of(namespace: str, group: str) -> list[dict[str, Any]]:
    """The group's member VMs not being deleted (read from the API server: tests poll it)."""
    found = list_objs("virtualmachines", namespace, f"kumo.dev/group={group}")
    return [i for i in found if not i["metadata"].get("deletionTimestamp")]


def server_made_by_hand(conn: Any, name: str, **attrs: Any) -> Any:
    """An ACTIVE server of the lab's smallest kind on the demo network, made outside Kumo
    (``attrs``: description, metadata, tags, …)."""
    image = conn.image.find_image("centos79")
    flavor = conn.compute.find_flavor("m1.tiny")
    network = conn.network.find_network("kumo-demo-net")
    server = conn.compute.create_server(
        name=name,
        image_id=image.id,
        flavor_id=flavor.id,
        networks=[{"uuid": network.id}],
        **attrs,
    )
    return conn.compute.wait_for_server(server, wait=180)


def owned_servers(conn: Any, uid: str) -> list[Any]:
    return [s for s in conn.compute.servers(tags=f"kumo-owner={uid}") if s.status != "DELETED"]


def pool_member_addresses(conn: Any, lb_id: str) -> dict[int, set[str]]:
    """Frontend port → member addresses, read from Octavia."""
    result: dict[int, set[str]] = {}
    for listener in conn.load_balancer.listeners(load_balancer_id=lb_id):
        pool_id = listener.default_pool_id
        addresses = {m.address for m in conn.load_balancer.members(pool_id)} if pool_id else set()
        result[listener.protocol_port] = addresses
    return result


def _neutron_marked(conn: Any, resources: str, prefix: str) -> list[str]:
    """IDs of the project's Neutron ``resources`` named ``prefix…`` that carry Kumo's
    marker: the ``kumo`` tag, or the description's ``kumo-owner=`` word (what a create
    leaves when its tag call never came)."""
    project = conn.current_project_id
    found = conn.network.get(f"/{resources}", params={"project_id": project}).json()
    return [
        x["id"]
        for x in found[resources.replace("-", "_")]
        if (x.get("name") or "").startswith(prefix)
        and (
            "kumo" in (x.get("tags") or [])
            or any(w.startswith("kumo-owner=") for w in (x.get("description") or "").split())
        )
    ]


def namespace_uids(namespace: str) -> set[str]:
    """UIDs of the Kumo objects the namespace's events name (events outlive their objects
    by an hour): the owners whose resources can be told by their marker only (floating
    IPs and recordsets carry no namespace in their names)."""
    out = kubectl("get", "events", "-n", namespace, "-o", "json").stdout
    items = json.loads(out or "{}").get("items", [])
    return {
        e["involvedObject"]["uid"]
        for e in items
        if str(e.get("involvedObject", {}).get("apiVersion", "")).startswith("kumo.dev/")
        and e["involvedObject"].get("uid")
    }


def _owned(marker: Marker | None, uids: set[str]) -> bool:
    return marker is not None and marker.uid in uids


#: (conn, namespace) → the IDs of what Kumo left in the project for the namespace's
#: objects, by the orphan sweep's resource kind (``Watcher.marks``, kumo.cloud.services):
#: tests/unit/test_services.py checks that every kind a watcher marks is here.
LEFTOVERS: dict[str, Callable[[Any, str], list[str]]] = {
    "server": lambda conn, ns: [
        s.id
        for s in conn.compute.servers(tags="kumo")
        if s.status != "DELETED" and (s.metadata or {}).get("kumo:object", "").startswith(f"{ns}/")
    ],
    "server_group": lambda conn, ns: [
        g.id
        for g in conn.compute.server_groups()
        if "kumo-owner=" in (g.name or "") and (g.name or "").startswith(f"{ns}-")
    ],
    "keypair": lambda conn, ns: [
        k.name
        for k in conn.compute.keypairs()
        if "kumo-owner=" in (k.public_key or "") and (k.name or "").startswith(f"{ns}-")
    ],
    "loadbalancer": lambda conn, ns: [
        lb.id
        for lb in conn.load_balancer.load_balancers(tags="kumo")
        if lb.provisioning_status != "DELETED" and (lb.name or "").startswith(f"{ns}-")
    ],
    "recordset": lambda conn, ns: _recordsets(conn, namespace_uids(ns)),
    "share": lambda conn, ns: [
        share.id
        for share in conn.shared_file_system.shares(details=True)
        if metadata_marker(share.metadata) is not None
        and share.status not in ("deleted", "deleting")
        and (share.name or "").startswith(f"{ns}-")
    ],
    # Cinder: Kumo's volumes and snapshots (snapshotBeforeReplace) carry its metadata.
    "volume": lambda conn, ns: [
        v["id"]
        for v in _cinder_list(conn, "volumes")
        if v.get("status") != "deleting" and (v.get("name") or "").startswith(f"{ns}-")
    ],
    "volume_snapshot": lambda conn, ns: [
        s["id"]
        for s in _cinder_list(conn, "snapshots")
        if s.get("status") != "deleting" and (s.get("name") or "").startswith(f"{ns}-")
    ],
    "security_group": lambda conn, ns: _neutron_marked(conn, "security-groups", f"{ns}-"),
    "floatingip": lambda conn, ns: _floating_ips(conn, namespace_uids(ns)),
    "router": lambda conn, ns: _neutron_marked(conn, "routers", f"{ns}-"),
    "network": lambda conn, ns: _neutron_marked(conn, "networks", f"{ns}-"),
    "port": lambda conn, ns: _neutron_marked(conn, "ports", f"{ns}-"),
}


def kumo_leftovers(conn: Any, namespace: str) -> dict[str, list[str]]:
    """Everything in the project that carries Kumo's marker for objects of ``namespace``,
    by resource kind (:data:`LEFTOVERS`)."""
    return {kind: find(conn, namespace) for kind, find in LEFTOVERS.items()}


def _recordsets(conn: Any, uids: set[str]) -> list[str]:
    if not uids:
        return []
    return [
        rs.id
        for zone in conn.dns.zones()
        for rs in conn.dns.recordsets(zone)
        if _owned(text_marker(rs.description), uids) and rs.status != "DELETED"
    ]


def _floating_ips(conn: Any, uids: set[str]) -> list[str]:
    if not uids:
        return []
    return [fip.id for fip in conn.network.ips() if _owned(described_marker(fip), uids)]


def _cinder_list(conn: Any, what: str) -> list[dict[str, Any]]:
    """Cinder ``what`` (volumes, snapshots) carrying Kumo's metadata (3.22: the snapshot
    listing's metadata filter; below it Cinder ignores the filter)."""
    params = {"metadata": json.dumps({"kumo": "managed"})}
    found = cinder_pages(conn, f"/{what}/detail", what, "3.22", params)
    return [x for x in found if (x.get("metadata") or {}).get("kumo") == "managed"]


def cinder_pages(
    conn: Any, path: str, key: str, microversion: str, params: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Every page of a Cinder listing: the lab answers ``KUMO_LAB_PAGE_SIZE`` (5) items
    per page (docs/lab.md), so a test that read one page would miss the rest."""

    def get(page_path: str, query: dict[str, Any]) -> Any:
        response = conn.block_storage.get(page_path, params=query, microversion=microversion)
        os_exc.raise_from_response(response)
        return response.json()

    return pages.linked(get, path, key, params)

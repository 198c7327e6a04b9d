"""The stack every chaos test churns, and how its end state is read and judged.

Why one module: the kill -9 run, the fault-injection run and the outage runs all make
the same claim — after any amount of crashing and failing, once the cloud answers
again Kumo converges to exactly what the objects say, with nothing leaked and nothing
duplicated — so they build the same stack (a VirtualMachineGroup, a LoadBalancer
following it, a DNSRecord publishing the VIP), wait for the same settled state and
report the same figures. The verdict itself is pure (``tests/chaos/audit.py``); this
module reads the lab into it (the cloud through a *direct* connection, never through
the fault proxy).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from openstack import exceptions as os_exc

from tests.chaos.audit import (
    CinderVolume,
    Marked,
    NotSettled,
    count_duplicates,
    find_duplicates,
    find_leaks,
    owner_in_described,
    owner_in_metadata,
    owner_in_tags,
    owner_in_text,
    server_mismatches,
    summary_line,
)
from tests.chaos.report import record_summary
from tests.integration.helpers import apply, cinder_pages, condition, pool_member_addresses
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import KUMO_KINDS, KumoOperator, get_obj, wait_until

API = "kumo.dev/v1alpha1"
GROUP = "chaos"
LB = "chaos-lb"
DNS = "chaos-dns"
#: The rest of the stack: one object of every other kind, each following what it
#: serves where the kind can (the SG's rule and the share's access follow the group's
#: members), so churn reaches every kind. The floating IP is held, not following the LB:
#: the lab's Octavia (noop drivers) makes no Neutron port for a VIP to associate with.
NETWORK = "chaos-net"
SECURITY_GROUP = "chaos-sg"
KEYPAIR = "chaos-kp"
VOLUME = "chaos-vol"
FLOATING_IP = "chaos-fip"
SHARE = "chaos-share"
#: (kubectl short name, object name) of the objects that only need to be Ready.
OTHERS = (
    ("net", NETWORK),
    ("sg", SECURITY_GROUP),
    ("kp", KEYPAIR),
    ("vol", VOLUME),
    ("fip", FLOATING_IP),
    ("share", SHARE),
)
PUBLIC_KEY = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOB3slJYeddLBNCsRNN1u+i93N9IfvaCXzbCIZAN+DsC chaos@kumo"
)
ZONE = "kumo-demo.test."
PORT = 80
TEMPLATE = {"image": "centos79", "flavor": "m1.tiny", "description": "kumo chaos member"}
FOREIGN_DESCRIPTION = "not kumo's: a hand-made twin of a chaos member"
#: A settled stack: group, LB and DNS Ready on the latest spec, pools = members.
SETTLE_TIMEOUT = 900.0
#: Leaks must persist this long to count (a delete racing the read is not a leak).
LEAK_GRACE = 90.0
#: Duplicates and mismatches too (a surplus being deleted as it is read is no end state).
DUPLICATE_GRACE = 60.0


def record_name(namespace: str) -> str:
    return f"chaos-{namespace}"  # unique in the shared zone


def group_manifest(replicas: int, revision: int = 0) -> dict[str, Any]:
    template: dict[str, Any] = dict(TEMPLATE)
    if revision:
        template["metadata"] = {"chaos-rev": str(revision)}
    return {
        "apiVersion": API,
        "kind": "VirtualMachineGroup",
        "metadata": {"name": GROUP},
        "spec": {"replicas": replicas, "haPolicy": "soft", "template": template},
    }


def lb_manifest() -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "LoadBalancer",
        "metadata": {"name": LB},
        "spec": {
            "ports": [
                {
                    "port": PORT,
                    "protocol": "http",
                    "realServers": {
                        "protocol": "http",
                        "port": PORT,
                        "virtualMachineGroupRef": GROUP,
                    },
                    "monitors": [{"protocol": "http", "port": PORT, "endpoint": "/health"}],
                }
            ]
        },
    }


def dns_manifest(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "DNSRecord",
        "metadata": {"name": DNS},
        "spec": {
            "zone": ZONE,
            "name": record_name(namespace),
            "type": "A",
            "ttl": 60,
            "loadBalancerRef": LB,
        },
    }


def other_manifests() -> list[dict[str, Any]]:
    """One object of every kind the group, LB and record are not."""

    def obj(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": API, "kind": kind, "metadata": {"name": name}, "spec": spec}

    follow_group = {"virtualMachineGroupRef": GROUP}
    return [
        obj("Network", NETWORK, {"subnets": [{"cidr": "10.77.0.0/24"}], "router": {}}),
        obj(
            "SecurityGroup",
            SECURITY_GROUP,
            {
                "rules": [
                    {"protocol": "tcp", "port": PORT, **follow_group},
                    {"protocol": "tcp", "port": 22, "cidr": "192.0.2.0/24"},
                ]
            },
        ),
        obj("KeyPair", KEYPAIR, {"publicKey": PUBLIC_KEY}),
        obj("Volume", VOLUME, {"size": 1, "description": "kumo chaos data"}),
        obj("FloatingIP", FLOATING_IP, {"description": "kumo chaos address"}),
        obj(
            "Share",
            SHARE,
            {
                "protocol": "NFS",
                "size": 1,
                "shareType": "default",
                "access": [{**follow_group, "accessLevel": "rw"}],
            },
        ),
    ]


def apply_stack(namespace: str, replicas: int) -> None:
    for manifest in (
        group_manifest(replicas),
        lb_manifest(),
        dns_manifest(namespace),
        *other_manifests(),
    ):
        apply(namespace, manifest)


def scale(namespace: str, replicas: int) -> None:
    kubectl("scale", "vmg", GROUP, "-n", namespace, f"--replicas={replicas}")


def change_template(namespace: str, revision: int) -> None:
    """A new template metadata value: in the template hash, so members roll over."""
    patch = {"spec": {"template": {"metadata": {"chaos-rev": str(revision)}}}}
    kubectl("patch", "vmg", GROUP, "-n", namespace, "--type=merge", "-p", json.dumps(patch))


# -- reading the cluster ---------------------------------------------------------------


def group_vms(namespace: str) -> list[dict[str, Any]]:
    """Every member VirtualMachine, those being deleted included."""
    out = kubectl(
        "get", "vm", "-n", namespace, "-l", f"kumo.dev/group={GROUP}", "-o", "json"
    ).stdout
    return list(json.loads(out)["items"])


def live_uids() -> set[str]:
    """UIDs of every Kumo object in every namespace (objects being deleted included)."""
    out = kubectl("get", ",".join(KUMO_KINDS), "--all-namespaces", "-o", "json").stdout
    return {item["metadata"]["uid"] for item in json.loads(out)["items"]}


def namespace_uids(namespace: str) -> set[str]:
    out = kubectl("get", ",".join(KUMO_KINDS), "-n", namespace, "-o", "json").stdout
    return {item["metadata"]["uid"] for item in json.loads(out)["items"]}


def status_of(obj: dict[str, Any] | None) -> dict[str, Any]:
    return dict((obj or {}).get("status") or {})


def current(obj: dict[str, Any] | None) -> bool:
    """Ready, and Ready about the latest spec."""
    if obj is None or condition(obj).get("status") != "True":
        return False
    return bool(status_of(obj).get("observedGeneration") == obj["metadata"].get("generation"))


# -- reading the cloud (directly, not through the proxy) -------------------------------


def _servers(conn: Any) -> list[Marked]:
    return [
        Marked("server", s.id, owner, s.name or "")
        for s in conn.compute.servers()
        if (owner := owner_in_tags(s.tags)) and s.status != "DELETED"
    ]


def _load_balancers(conn: Any) -> list[Marked]:
    return [
        Marked("loadbalancer", lb.id, owner, lb.name or "")
        for lb in conn.load_balancer.load_balancers()
        if (owner := owner_in_tags(lb.tags)) and lb.provisioning_status != "DELETED"
    ]


def _server_groups(conn: Any) -> list[Marked]:
    return [
        Marked("server_group", g.id, owner, g.name or "")
        for g in conn.compute.server_groups()
        if (owner := owner_in_text(g.name))
    ]


def _recordsets(conn: Any) -> list[Marked]:
    return [
        Marked("recordset", rs.id, owner, rs.name or "")
        for zone in conn.dns.zones()
        for rs in conn.dns.recordsets(zone)
        if (owner := owner_in_text(rs.description))
    ]


def _volumes(conn: Any) -> list[Marked]:
    return [Marked("volume", v.id, v.owner, v.name) for v in cinder_volumes(conn) if v.owner]


def _keypairs(conn: Any) -> list[Marked]:
    return [
        Marked("keypair", k.name, owner, k.name)
        for k in conn.compute.keypairs()
        if (owner := owner_in_text(k.public_key))
    ]


def _shares(conn: Any) -> list[Marked]:
    return [
        Marked("share", share.id, owner, share.name or "")
        for share in conn.shared_file_system.shares(details=True)
        if (owner := owner_in_metadata(share.metadata)) and share.status != "deleted"
    ]


def _neutron(kind: str, listing: str) -> Callable[[Any], list[Marked]]:
    """Networks, routers, security groups and floating IPs: tags, else the marker word
    of the description (what the create call writes before the tags come)."""

    def markers(conn: Any) -> list[Marked]:
        return [
            Marked(kind, r.id, owner, getattr(r, "floating_ip_address", None) or r.name or "")
            for r in getattr(conn.network, listing)()
            if (owner := owner_in_described(r))
        ]

    return markers


#: Resource kind (the orphan sweep's, ``Watcher.marks`` in kumo.cloud.services) → every
#: resource of the project of that kind carrying Kumo's marker. tests/unit/test_services.py
#: checks that the audit covers every kind a watcher marks.
MARKERS: dict[str, Callable[[Any], list[Marked]]] = {
    "server": _servers,
    "server_group": _server_groups,
    "keypair": _keypairs,
    "loadbalancer": _load_balancers,
    "recordset": _recordsets,
    "share": _shares,
    "volume": _volumes,
    "security_group": _neutron("security_group", "security_groups"),
    "floatingip": _neutron("floatingip", "ips"),
    "router": _neutron("router", "routers"),
    "network": _neutron("network", "networks"),
    "port": _neutron("port", "ports"),
}


def cloud_markers(conn: Any) -> list[Marked]:
    """Every resource of the project carrying Kumo's marker."""
    return [m for markers in MARKERS.values() for m in markers(conn)]


def cinder_volumes(conn: Any) -> list[CinderVolume]:
    """Every volume of the project, marked or not, with the servers it is attached to."""
    return [
        CinderVolume(
            id=v["id"],
            name=v.get("name") or "",
            owner=owner_in_metadata(v.get("metadata")),
            servers=tuple(a["server_id"] for a in v.get("attachments") or [] if a.get("server_id")),
        )
        for v in cinder_pages(conn, "/volumes/detail", "volumes", "3.0")
        if v.get("status") != "deleted"
    ]


def snapshot_orphans(conn: Any) -> frozenset[tuple[str, str]]:
    """What is orphaned before a test starts (cloud first, then UIDs: see find_leaks)."""
    markers = cloud_markers(conn)
    live = live_uids()
    return frozenset(m.key for m in markers if m.owner not in live)


def wait_for_leaks(conn: Any, before: frozenset[tuple[str, str]]) -> list[Marked]:
    """The leaks that are still there after LEAK_GRACE ([] as soon as there are none)."""
    last: list[Marked] | None = None

    def read() -> list[Marked]:
        markers = cloud_markers(conn)  # cloud first, then the live UIDs
        return find_leaks(markers, live_uids(), before)

    def none_left() -> bool:
        nonlocal last
        last = read()
        return not last

    with contextlib.suppress(AssertionError):
        wait_until("no leaked markers", none_left, LEAK_GRACE, interval=min(3, LEAK_GRACE / 10))
    return read() if last is None else last  # never read: once more, errors not tolerated


# -- the settled state -----------------------------------------------------------------


@dataclass
class Settled:
    group: dict[str, Any]
    vms: list[dict[str, Any]]
    lb: dict[str, Any]
    dns: dict[str, Any]
    ips: set[str]
    others: list[dict[str, Any]] = field(default_factory=list)

    @property
    def owners(self) -> set[str]:
        objs = [self.group, self.lb, self.dns, *self.vms, *self.others]
        return {o["metadata"]["uid"] for o in objs}


def settled(conn: Any, namespace: str, replicas: int) -> Settled | NotSettled:
    """The stack once converged: the group Ready with ``replicas`` Ready members and no
    other member left (not even one being deleted), the pool holding exactly their
    addresses, the DNS record publishing the VIP, every other object Ready on its latest
    spec. Until then, what is not there yet."""
    group = get_obj("vmg", GROUP, namespace)
    st = status_of(group)
    counts = (st.get("readyReplicas"), st.get("replicas"))
    if not current(group) or counts != (replicas, replicas):
        return NotSettled(f"group not Ready at {replicas}: ready/replicas {counts}")
    assert group is not None
    vms = group_vms(namespace)
    if len(vms) != replicas or any(v["metadata"].get("deletionTimestamp") for v in vms):
        return NotSettled(f"{len(vms)} member objects (some may be deleting)")
    if not all(current(v) and status_of(v).get("id") and status_of(v).get("ip") for v in vms):
        return NotSettled("a member not Ready with a server and an address")
    # Statuses alone can look settled while a new leader has not yet seen that a recorded
    # server was deleted (a kill right after an out-of-band delete): ask Nova too.
    if not all(server_active(conn, status_of(v)["id"]) for v in vms):
        return NotSettled("a member's recorded server is not ACTIVE in Nova")
    ips = {status_of(v)["ip"] for v in vms}
    lb = get_obj("lb", LB, namespace)
    vip, lb_id = status_of(lb).get("vip"), status_of(lb).get("id")
    if not current(lb) or not vip or not lb_id:
        return NotSettled(f"LB not Ready: {condition(lb)}")
    pools = pool_member_addresses(conn, lb_id)
    if pools != {PORT: ips}:
        return NotSettled(f"pool members {pools} != members {sorted(ips)}")
    dns = get_obj("dns", DNS, namespace)
    if not current(dns) or status_of(dns).get("records") != [vip]:
        return NotSettled(f"DNS not Ready on the VIP: {condition(dns)}")
    others = []
    for short, name in OTHERS:
        obj = get_obj(short, name, namespace)
        if obj is None or not current(obj):
            return NotSettled(f"{short} {name} not Ready: {condition(obj)}")
        others.append(obj)
    assert lb is not None and dns is not None
    return Settled(group, vms, lb, dns, ips, others)


def server_active(conn: Any, server_id: str) -> bool:
    try:
        server = conn.compute.get_server(server_id)
    except os_exc.NotFoundException:
        return False
    return bool(server.status == "ACTIVE" and not getattr(server, "task_state", None))


def wait_settled(
    conn: Any, namespace: str, replicas: int, timeout: float = SETTLE_TIMEOUT
) -> Settled:
    return wait_until(  # type: ignore[no-any-return]
        f"the chaos stack settled at {replicas} replicas (every kind)",
        lambda: settled(conn, namespace, replicas),
        timeout,
        interval=2,
    )


@dataclass
class Verdict:
    """What the end-state checks found; ``problems`` lists each failure in words."""

    mismatches: dict[str, list[str]] = field(default_factory=dict)
    duplicates: int = 0
    leaks: list[Marked] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    duplicate_problems: list[str] = field(default_factory=list)  # the last reading
    counted: bool = False  # whether a reading of duplicates succeeded at all


def judge(conn: Any, state: Settled, before: frozenset[tuple[str, str]]) -> Verdict:
    """One server per VM (the recorded one), one LB / listener / pool / recordset /
    server group per owner, the pool = the Ready members, the recordset = the VIP in
    Designate, and no leaked marker anywhere in the project.

    Like leaks, duplicates and mismatches count when they persist (DUPLICATE_GRACE): a
    surplus Kumo is deleting as the cloud is read is not an end state."""
    verdict = Verdict()
    with contextlib.suppress(AssertionError):
        wait_until(
            "no duplicate",
            lambda: _count_duplicates(conn, state, verdict),
            DUPLICATE_GRACE,
            interval=min(3, DUPLICATE_GRACE / 10),
        )
    if not verdict.counted:  # every reading failed: once more, errors not tolerated
        _count_duplicates(conn, state, verdict)
    verdict.problems += verdict.duplicate_problems

    pools = pool_member_addresses(conn, status_of(state.lb)["id"])
    if pools != {PORT: state.ips}:
        verdict.problems.append(f"pool members {pools} != Ready members {sorted(state.ips)}")
    dns = status_of(state.dns)
    try:
        rs = conn.dns.get_recordset(dns["id"], dns["zoneId"])
        if sorted(rs.records) != [status_of(state.lb)["vip"]] or rs.status != "ACTIVE":
            verdict.problems.append(f"recordset {rs.id}: {rs.status} {rs.records}")
    except os_exc.NotFoundException:
        verdict.problems.append(f"recordset {dns.get('id')} is gone")

    verdict.leaks = wait_for_leaks(conn, before)
    for leak in verdict.leaks:
        verdict.problems.append(f"leaked {leak.kind} {leak.id} ({leak.name}) of {leak.owner}")
    return verdict


def _count_duplicates(conn: Any, state: Settled, verdict: Verdict) -> bool:
    """Read the cloud and the members once; if the whole reading succeeds, put its
    duplicate figures in the verdict and return whether there are none."""
    markers = cloud_markers(conn)
    namespace = state.group["metadata"]["namespace"]
    vms = [v for v in group_vms(namespace) if not v["metadata"].get("deletionTimestamp")]
    recorded = {v["metadata"]["uid"]: status_of(v).get("id") for v in vms}
    mismatches = server_mismatches(recorded, markers)
    problems = [
        f"VM {uid}: servers {ids}, status.id {recorded[uid]}" for uid, ids in mismatches.items()
    ]
    duplicates = find_duplicates(markers, state.owners | set(recorded))
    problems += [
        f"{len(ids)} {kind}s for owner {owner}: {ids}" for (kind, owner), ids in duplicates.items()
    ]
    surplus = _lb_children_surplus(conn, state, problems)
    verdict.mismatches, verdict.duplicate_problems = mismatches, problems
    verdict.duplicates = count_duplicates(duplicates) + surplus
    verdict.counted = True
    return not verdict.mismatches and not verdict.duplicates


def _lb_children_surplus(conn: Any, state: Settled, problems: list[str]) -> int:
    """Listeners and pools beyond one per port, members registered twice."""
    lb_id = status_of(state.lb)["id"]
    listeners = list(conn.load_balancer.listeners(load_balancer_id=lb_id))
    pools = [  # filtered here: Octavia's pool filters differ between releases
        p
        for p in conn.load_balancer.pools()
        if any((ref or {}).get("id") == lb_id for ref in p.loadbalancers or [])
    ]
    surplus = max(len(listeners) - 1, 0) + max(len(pools) - 1, 0)
    for pool in pools:
        addresses = [m.address for m in conn.load_balancer.members(pool.id)]
        surplus += len(addresses) - len(set(addresses))
    if surplus:
        problems.append(
            f"LB {lb_id}: {len(listeners)} listeners, {len(pools)} pools, {surplus} surplus"
        )
    return surplus


# -- the foreign twin ------------------------------------------------------------------


def create_foreign_server(conn: Any, name: str) -> str:
    """A hand-made server named like a member, without Kumo's marker: never Kumo's."""
    image = conn.image.find_image(TEMPLATE["image"])
    flavor = conn.compute.find_flavor(TEMPLATE["flavor"])
    network = conn.network.find_network("kumo-demo-net")
    server = conn.compute.create_server(
        name=name,
        image_id=image.id,
        flavor_id=flavor.id,
        networks=[{"uuid": network.id}],
        description=FOREIGN_DESCRIPTION,
    )
    return str(server.id)


def foreign_untouched(conn: Any, server_id: str) -> list[str]:
    """Problems with the foreign server ([] when it is exactly as made)."""
    try:
        server = conn.compute.get_server(server_id)
    except os_exc.NotFoundException:
        return [f"foreign server {server_id} was deleted"]
    problems = []
    if server.status == "DELETED":
        problems.append(f"foreign server {server_id} was deleted")
    if server.description != FOREIGN_DESCRIPTION:
        problems.append(f"foreign server {server_id} description now {server.description!r}")
    if any(t == "kumo" or owner_in_tags([t]) for t in server.tags or []):
        problems.append(f"foreign server {server_id} got Kumo's tags {server.tags}")
    return problems


def delete_foreign_server(conn: Any, server_id: str) -> None:
    conn.compute.delete_server(server_id, ignore_missing=True)


# -- deleting it all -------------------------------------------------------------------


def delete_stack(namespace: str) -> None:
    """Delete the stack as a user would (the record, the LB, the group: the group deletes
    its members) and wait until every Kumo object of the namespace is gone."""
    others = ",".join(short for short, _ in OTHERS)
    kubectl("delete", f"dns,lb,vmg,{others}", "--all", "-n", namespace, "--wait=false")
    wait_until(
        f"every Kumo object in {namespace} deleted",
        lambda: not namespace_uids(namespace),
        600,
        interval=2,
    )


def remains_of(conn: Any, owners: Iterable[str]) -> list[Marked]:
    """Cloud resources still carrying the marker of any of ``owners``."""
    wanted = set(owners)
    return [m for m in cloud_markers(conn) if m.owner in wanted]


def wait_nothing_remains(conn: Any, owners: set[str], timeout: float = 180) -> list[Marked]:
    """[] once no resource carries the owners' markers; else what remained at the end."""
    last: list[Marked] | None = None

    def gone() -> bool:
        nonlocal last
        last = remains_of(conn, owners)
        return not last

    with contextlib.suppress(AssertionError):
        wait_until(
            "the test's cloud resources deleted", gone, timeout, interval=min(3, timeout / 10)
        )
    return remains_of(conn, owners) if last is None else last  # errors not tolerated


def delete_and_check(conn: Any, namespace: str, owners: set[str], verdict: Verdict) -> list[Marked]:
    """Delete the stack; what still carries any of ``owners``' markers afterwards is a
    problem (and returned, to be counted as leaks)."""
    delete_stack(namespace)
    remains = wait_nothing_remains(conn, owners)
    verdict.problems += [f"left after deletion: {m.kind} {m.id} ({m.name})" for m in remains]
    return remains


def seen_owners(namespace: str, into: set[str]) -> None:
    """Remember the UIDs of the namespace's Kumo objects (members come and go)."""
    with contextlib.suppress(Exception):  # a read during an outage: skip this time
        into |= namespace_uids(namespace)


# -- operators -------------------------------------------------------------------------


def ensure_leading(operator: KumoOperator, timeout: float = 90) -> None:
    """Start ``operator`` if it is not running (or died) and wait until it leads."""
    if operator.proc is not None and operator.proc.poll() is not None:
        operator.proc = None  # exited on its own: account for it as stopped
        KumoOperator.running -= 1
    if operator.proc is None:
        operator.start()
    operator.wait_role("leader", timeout)


def kill_at_work(operator: KumoOperator, delay: float) -> None:
    """SIGKILL the leading ``operator`` ``delay`` seconds after it leads (so the kill lands
    in the middle of its work), and start it again: it waits as standby until the dead
    holder's lease expires."""
    ensure_leading(operator)  # the kill must hit a leader at work
    time.sleep(delay)  # the random moment: this is the chaos, not a wait
    operator.kill()
    operator.start()


OperatorFactory = Callable[..., KumoOperator]


@dataclass
class Run:
    """One chaos test's figures, reported once at its end (or when it cannot settle)."""

    test: str
    seed: int
    kills: int = 0
    faults: dict[str, int] = field(default_factory=dict)
    extra: dict[str, object] = field(default_factory=dict)

    def report(self, leaks: int | str, duplicates: int | str, **more: object) -> None:
        record_summary(
            summary_line(
                test=self.test,
                seed=self.seed,
                kills=self.kills,
                faults=self.faults,
                leaks=leaks,
                duplicates=duplicates,
                **{**self.extra, **more},
            )
        )

    def settle(self, conn: Any, namespace: str, replicas: int) -> Settled:
        """wait_settled, reporting ``leaks=? duplicates=? settled=False`` on a timeout."""
        try:
            return wait_settled(conn, namespace, replicas)
        except AssertionError:
            self.report("?", "?", settled=False, replicas=replicas)
            raise

    def finish(self, verdict: Verdict, remains: list[Marked]) -> int:
        """Report the figures; return the leak count (before and after deletion)."""
        leaks = len({m.key for m in verdict.leaks} | {m.key for m in remains})
        self.report(leaks, verdict.duplicates, mismatches=len(verdict.mismatches))
        return leaks

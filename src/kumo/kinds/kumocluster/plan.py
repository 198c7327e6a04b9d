"""KumoCluster decisions, free of I/O: which Kumo objects a cluster's infrastructure is,
which Nova server groups its machine sets need, the endpoint to write, and the status
CAPI reads.

The parts (named after the Cluster, :class:`kumo.kinds.capi.Parts`):

* Network ``<cluster>``: the nodes' subnet (its last address but one kept for the API
  load balancer's VIP) and a router to the outside;
* SecurityGroup ``<cluster>-node`` on every machine: among members, the API (6443),
  etcd (2379-2380), the kubelet (10250), ICMP and the CNIs' own traffic (BGP 179,
  VXLAN 4789 and 8472, IP-in-IP); egress anywhere;
* SecurityGroup ``<cluster>-api`` on the control plane: 6443 from ``allowedCIDRs`` and
  from the nodes' subnet (a load balancer's amphora speaks from there);
* LoadBalancer ``<cluster>-api``: TCP 6443 at that VIP, whose pool follows the control
  plane's VMs by their ``kumo.dev/group`` label (``groupObject: false``);
* FloatingIP ``<cluster>-api`` on it (``floatingIP: true``), DNSRecord ``<cluster>-api``
  (``dns``).

Server groups are not objects: the KumoCluster makes one per machine set in Nova
(``<namespace>-<cluster>-<set>-<policy>`` and its marker), so that two machines of a
set never each make one, and deletes those of sets that have no KumoMachine left.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

from kumo.api import kinds
from kumo.api.capi import API_SERVER_PORT, KumoClusterSpec
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Body
from kumo.engine.result import Result
from kumo.kinds import capi, children
from kumo.ports.model import ServerGroup, owner_word, with_word

#: Nova's limit on a server group's name.
SERVER_GROUP_NAME_MAX = 255
#: Ports the nodes open to each other: (protocol, first port, last port).
NODE_PORTS = (
    ("tcp", API_SERVER_PORT, API_SERVER_PORT),
    ("tcp", 2379, 2380),  # etcd
    ("tcp", 10250, 10250),  # the kubelet
    ("tcp", 179, 179),  # BGP (Calico)
    ("udp", 4789, 4789),  # VXLAN (Calico, Cilium)
    ("udp", 8472, 8472),  # VXLAN (Flannel, Cilium)
)
#: Protocols the nodes allow each other whole: ICMP, IP-in-IP (Calico).
NODE_PROTOCOLS = ("icmp", "4")
#: How long a pass waiting on its parts looks again (their changes wake it sooner).
PARTS_SECONDS = 30.0


@dataclass(frozen=True)
class Observed:
    """What one pass knows: the spec, the owning Cluster's name, the parts as the store
    holds them, the machine sets that have a KumoMachine, the server groups in Nova."""

    spec: KumoClusterSpec
    namespace: str
    uid: str
    cluster: str
    status: Body
    endpoint: Body | None
    found: dict[tuple[str, str], Body | None]
    sets: frozenset[str] = frozenset()
    groups: tuple[ServerGroup, ...] = ()


@dataclass(frozen=True)
class NewGroup:
    set: str
    name: str
    policy: str


@dataclass(frozen=True)
class Decision:
    parts: children.Plan
    new_groups: list[NewGroup] = field(default_factory=list)
    #: IDs of server groups no machine set needs any more.
    stale_groups: list[str] = field(default_factory=list)
    #: ``spec.controlPlaneEndpoint`` to write (once).
    endpoint: Body | None = None


def _rule(protocol: str, low: int | None = None, high: int | None = None, **other: Any) -> Body:
    rule: Body = {"direction": "ingress", "protocol": protocol, **other}
    if low is not None:
        rule.update(portRangeMin=low, portRangeMax=high)
    return rule


def addresses(cidr: str) -> tuple[str, str, str]:
    """(the API load balancer's VIP, the first and last address Neutron hands the nodes)
    in the nodes' subnet: the VIP is its last address but one, named explicitly so that
    each cluster's API has its own (Octavia's no-op network driver, the lab's, gives every
    load balancer 198.51.100.1 unless asked for an address), and kept out of the nodes'
    pool, which starts after the gateway (the first host)."""
    net = ipaddress.ip_network(cidr)
    return str(net[-2]), str(net[2]), str(net[-3])


def wanted(spec: KumoClusterSpec, cluster: str, namespace: str) -> list[children.Child]:
    """The Kumo objects of the cluster's infrastructure (module docstring)."""
    parts = capi.Parts(cluster)
    labels = {capi.CLUSTER_NAME_LABEL: capi.label_value(cluster)}
    about = f"Cluster API cluster {namespace}/{cluster}"
    net = spec.network
    vip, first, last = addresses(net.cidr)
    subnet: Body = {"cidr": net.cidr, "allocationPools": [{"start": first, "end": last}]}
    if net.dns_nameservers:
        subnet["dnsNameservers"] = list(net.dns_nameservers)
    router: Body = {"externalNetwork": net.external_network} if net.external_network else {}
    network = {"description": about, "subnets": [subnet], "router": router}
    node_rules = [
        _rule(p, low, high, securityGroupRef=parts.node_group) for p, low, high in NODE_PORTS
    ]
    node_rules += [_rule(p, securityGroupRef=parts.node_group) for p in NODE_PROTOCOLS]
    node_rules += [
        {"direction": "egress", "protocol": "any", "cidr": "0.0.0.0/0"},
        {"direction": "egress", "protocol": "any", "cidr": "::/0"},
    ]
    api_from = [*spec.allowed_cidrs, net.cidr]
    api_rules = [
        _rule("tcp", API_SERVER_PORT, API_SERVER_PORT, cidr=c) for c in dict.fromkeys(api_from)
    ]
    backends = {
        "protocol": "tcp",
        "port": API_SERVER_PORT,
        "virtualMachineGroupRef": parts.control_plane,
        "groupObject": False,
    }
    load_balancer = {
        "description": f"the API of {about}",
        "vipNetwork": parts.network,
        "vipAddress": vip,
        "ports": [
            {
                "port": API_SERVER_PORT,
                "protocol": "tcp",
                "realServers": backends,
                "monitors": [{"protocol": "tcp", "port": API_SERVER_PORT}],
            }
        ],
    }
    made = [
        children.Child(kinds.NETWORK, parts.network, network, labels),
        children.Child(
            kinds.SECURITY_GROUP,
            parts.node_group,
            {"description": f"the nodes of {about}", "rules": node_rules},
            labels,
        ),
        children.Child(
            kinds.SECURITY_GROUP,
            parts.api_group,
            {"description": f"the API of {about}", "rules": api_rules},
            labels,
        ),
        children.Child(kinds.LOAD_BALANCER, parts.load_balancer, load_balancer, labels),
    ]
    if spec.floating_ip:
        fip: Body = {"loadBalancerRef": parts.load_balancer}
        if net.external_network:
            fip["network"] = net.external_network
        made.append(children.Child(kinds.FLOATING_IP, parts.floating_ip, fip, labels))
    if spec.dns is not None:
        target = (
            {"floatingIPRef": parts.floating_ip, "loadBalancerRef": None}
            if spec.floating_ip
            else {"loadBalancerRef": parts.load_balancer, "floatingIPRef": None}
        )
        record = {"zone": spec.dns.zone, "name": spec.dns.name, "type": "A", **target}
        made.append(children.Child(kinds.DNS_RECORD, parts.dns_record, record, labels))
    return made


def all_parts(cluster: str) -> list[tuple[kinds.KindInfo, str]]:
    """Every part the KumoCluster may have made (what its deletion looks for)."""
    parts = capi.Parts(cluster)
    return [
        (kinds.DNS_RECORD, parts.dns_record),
        (kinds.FLOATING_IP, parts.floating_ip),
        (kinds.LOAD_BALANCER, parts.load_balancer),
        (kinds.SECURITY_GROUP, parts.api_group),
        (kinds.SECURITY_GROUP, parts.node_group),
        (kinds.NETWORK, parts.network),
    ]


def group_name(o: Observed, machine_set: str, policy: str) -> str:
    """A set's server group's name: ``<namespace>-<cluster>-<set>-<policy>`` and the
    KumoCluster's marker word (cut so that it fits Nova's 255)."""
    prefix = f"{o.namespace}-{o.cluster}-{machine_set}-{policy}"
    return with_word(prefix, owner_word(o.uid), SERVER_GROUP_NAME_MAX)


def server_groups(o: Observed) -> tuple[list[NewGroup], list[str], list[tuple[str, ServerGroup]]]:
    """(server groups to make, IDs of those to delete, (set, group) of those kept)."""
    policy = o.spec.server_group_policy
    names = {} if policy == "none" else {group_name(o, s, policy): s for s in sorted(o.sets)}
    have = {g.name: g for g in o.groups}
    new = [NewGroup(s, name, policy) for name, s in names.items() if name not in have]
    stale = sorted(g.id for g in o.groups if g.name not in names)
    kept = [(names[g.name], g) for g in o.groups if g.name in names]
    return new, stale, sorted(kept, key=lambda pair: pair[0])


def endpoint(o: Observed) -> Body | None:
    """The API's endpoint once its address is known: the DNS name, else the floating
    IP, else the load balancer's VIP."""
    parts = capi.Parts(o.cluster)
    host = None
    if o.spec.dns is not None:
        record = o.found.get((kinds.DNS_RECORD.kind, parts.dns_record)) or {}
        host = str((record.get("status") or {}).get("fqdn") or "").rstrip(".") or None
    elif o.spec.floating_ip:
        fip = o.found.get((kinds.FLOATING_IP.kind, parts.floating_ip)) or {}
        host = (fip.get("status") or {}).get("address")
    else:
        lb = o.found.get((kinds.LOAD_BALANCER.kind, parts.load_balancer)) or {}
        host = (lb.get("status") or {}).get("vip")
    return {"host": host, "port": API_SERVER_PORT} if host else None


def decide(o: Observed) -> Decision:
    """Pure: every write of the pass."""
    made = wanted(o.spec, o.cluster, o.namespace)
    parts = children.plan(o.uid, made, o.found)
    new, stale, _ = server_groups(o)
    written = (o.endpoint or {}).get("host")
    return Decision(parts, new, stale, None if written else endpoint(o))


def report(o: Observed, d: Decision) -> Result:
    """The status CAPI reads, from what the pass now knows (``o`` after the writes)."""
    parts = capi.Parts(o.cluster)
    made = wanted(o.spec, o.cluster, o.namespace)
    bodies = [(c, o.found.get((c.info.kind, c.name))) for c in made]
    not_ready = [children.summary(c.info, c.name, b) for c, b in bodies if not capi.ready(b)]
    written = o.endpoint if (o.endpoint or {}).get("host") else None
    _, _, kept = server_groups(o)
    lb = o.found.get((kinds.LOAD_BALANCER.kind, parts.load_balancer)) or {}
    fip = o.found.get((kinds.FLOATING_IP.kind, parts.floating_ip)) or {}
    done = not not_ready and written is not None
    provisioned = done or bool((o.status.get("initialization") or {}).get("provisioned"))
    status: Body = {
        "clusterName": o.cluster,
        "initialization": {"provisioned": True} if provisioned else None,
        "ready": True if provisioned else None,
        "failureDomains": [
            {"name": zone, "controlPlane": True} for zone in o.spec.availability_zones
        ],
        "network": parts.network,
        "loadBalancer": parts.load_balancer,
        "vip": (lb.get("status") or {}).get("vip"),
        "floatingIP": (fip.get("status") or {}).get("address") if o.spec.floating_ip else None,
        "serverGroups": [{"name": s, "id": g.id, "policy": g.policy} for s, g in kept if g.id],
        "parts": f"{len(made) - len(not_ready)}/{len(made)}",
    }
    if d.parts.taken:
        message = (
            f"{', '.join(d.parts.taken)} exist(s) and are not this KumoCluster's: Kumo "
            "leaves them alone; delete or rename them (or the Cluster)"
        )
        raise TerminalError(
            "NameTaken",
            message,
            status={
                **status,
                "failureReason": "InvalidConfiguration",
                "failureMessage": f"NameTaken: {message}",
            },
        )
    if done and written is not None:
        return Result(
            phase="Provisioned",
            ready=True,
            reason="Ready",
            message=f"every part is Ready; the API is at {written['host']}:{written['port']}",
            status=status,
        )
    waiting = not_ready or ["waiting for the API's address (spec.controlPlaneEndpoint)"]
    return Result.waiting(
        "Provisioning", "WaitingForParts", "; ".join(waiting), after=PARTS_SECONDS, **status
    )

"""Network decisions, free of I/O: which subnets to create, update, replace and delete,
which router interfaces to add and remove, what changes on the network itself, and in
which order deletion takes everything apart.

Subnet identity is the CIDR: Neutron cannot change a subnet's CIDR, so a subnet whose
CIDR changed is a new subnet, and the old one is deleted only when no port but the
router's uses it. While it is used, it stays and the plan says why (naming the field);
a new CIDR that overlaps the old one waits for it.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

from kumo.api.network import NetworkSpec, SubnetSpec
from kumo.kinds import described


@dataclass(frozen=True)
class ObservedSubnet:
    """A subnet of the network as Neutron holds it."""

    id: str
    cidr: str
    gateway: str | None
    dns_nameservers: tuple[str, ...] = ()
    allocation_pools: tuple[tuple[str, str], ...] = ()
    enable_dhcp: bool = True
    #: Ports on the subnet other than the router's interface and DHCP's.
    used: bool = False


@dataclass(frozen=True)
class ObservedNetwork:
    id: str
    mtu: int | None
    port_security: bool
    description: str | None = None


@dataclass(frozen=True)
class SubnetPlan:
    create: list[SubnetSpec] = field(default_factory=list)
    update: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    delete: list[ObservedSubnet] = field(default_factory=list)
    #: Why a change cannot be made now, naming the field (a condition's message).
    blocked: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.create or self.update or self.delete)


@dataclass(frozen=True)
class InterfacePlan:
    add: list[str] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)


def network_name(namespace: str, name: str) -> str:
    return f"{namespace}-{name}"


def network_updates(spec: NetworkSpec, observed: ObservedNetwork, uid: str) -> dict[str, Any]:
    """The network's own attributes that differ (Neutron's field names). The description
    is the spec's (unset: the text it has) followed by the marker word of the object
    ``uid`` (kinds/described.py): a marker word removed by hand is put back too."""
    changes: dict[str, Any] = {}
    if spec.mtu is not None and spec.mtu != observed.mtu:
        changes["mtu"] = spec.mtu
    if spec.port_security != observed.port_security:
        changes["port_security_enabled"] = spec.port_security
    wanted = described.wanted(spec.description, observed.description, uid)
    if wanted != (observed.description or ""):
        changes["description"] = wanted
    return changes


def subnet_updates(want: SubnetSpec, have: ObservedSubnet) -> dict[str, Any]:
    """What Neutron changes in place on a subnet of the same CIDR."""
    changes: dict[str, Any] = {}
    gateway = None if want.gateway == "none" else want.gateway
    if want.gateway is not None and gateway != have.gateway:
        changes["gateway_ip"] = gateway
    if tuple(want.dns_nameservers) != have.dns_nameservers:
        changes["dns_nameservers"] = list(want.dns_nameservers)
    pools = tuple((p.start, p.end) for p in want.allocation_pools)
    if pools and pools != have.allocation_pools:
        changes["allocation_pools"] = [{"start": s, "end": e} for s, e in pools]
    if want.enable_dhcp != have.enable_dhcp:
        changes["enable_dhcp"] = want.enable_dhcp
    return changes


def _overlaps(a: str, b: str) -> bool:
    x, y = ipaddress.ip_network(a), ipaddress.ip_network(b)
    return x.version == y.version and x.overlaps(y)  # type: ignore[arg-type]


def plan_subnets(spec: NetworkSpec, observed: list[ObservedSubnet]) -> SubnetPlan:
    """Subnets to create, update in place and delete. A subnet the spec no longer has is
    deleted only when no port uses it; a wanted CIDR overlapping a subnet that stays waits."""
    have = {s.cidr: s for s in observed}
    want = {s.cidr: s for s in spec.subnets}
    plan = SubnetPlan()
    staying: list[ObservedSubnet] = []
    for cidr, sub in sorted(have.items()):
        if cidr in want:
            staying.append(sub)
            if changes := subnet_updates(want[cidr], sub):
                plan.update.append((sub.id, changes))
        elif sub.used:
            staying.append(sub)
            plan.blocked.append(
                f"spec.subnets[].cidr: subnet {cidr} is no longer in the spec but ports "
                "use it; it is deleted once they are gone"
            )
        else:
            plan.delete.append(sub)
    for cidr, sub_spec in want.items():
        if cidr in have:
            continue
        clash = [s.cidr for s in staying if _overlaps(s.cidr, cidr)]
        if clash:
            plan.blocked.append(
                f"spec.subnets[].cidr: {cidr} overlaps subnet {clash[0]}, which ports "
                "still use; it is created once that subnet is gone"
            )
        else:
            plan.create.append(sub_spec)
    return plan


def wanted_interfaces(spec: NetworkSpec, observed: list[ObservedSubnet]) -> set[str]:
    """Subnet IDs the router should have an interface on: each subnet of the spec with
    a gateway (a subnet with `gateway: none` has no way out)."""
    if spec.router is None:
        return set()
    want = {s.cidr for s in spec.subnets if s.gateway != "none"}
    return {s.id for s in observed if s.cidr in want and s.gateway}


def plan_interfaces(
    spec: NetworkSpec, observed: list[ObservedSubnet], interfaces: set[str]
) -> InterfacePlan:
    """Router interfaces (by subnet ID) to add and remove."""
    want = wanted_interfaces(spec, observed)
    return InterfacePlan(add=sorted(want - interfaces), remove=sorted(interfaces - want))


def deletion_steps(
    router_id: str | None, interfaces: set[str], subnets: list[ObservedSubnet], network: str | None
) -> list[tuple[str, str]]:
    """What deleting the Network does, in order: the router's interfaces, the router,
    the subnets, the network. Only Kumo's own (marked) router and network are given."""
    steps: list[tuple[str, str]] = []
    if router_id:
        steps += [("remove_interface", s) for s in sorted(interfaces)]
        steps.append(("delete_router", router_id))
    steps += [("delete_subnet", s.id) for s in subnets]
    if network:
        steps.append(("delete_network", network))
    return steps


#: Ports Neutron or the Network itself makes: they do not keep a subnet or the network in use.
OWN_DEVICE_OWNERS = frozenset(
    {"network:router_interface", "network:router_gateway", "network:dhcp"}
)


@dataclass(frozen=True)
class ObservedPort:
    id: str
    device_owner: str
    subnet_ids: tuple[str, ...]


def users(ports: list[ObservedPort]) -> list[ObservedPort]:
    """The ports that use the network: all but the router's and DHCP's."""
    return [p for p in ports if p.device_owner not in OWN_DEVICE_OWNERS]


def subnets_in_use(ports: list[ObservedPort]) -> set[str]:
    """IDs of the subnets some user's port has an address on."""
    return {s for p in users(ports) for s in p.subnet_ids}


def deletion_wait(ports: list[ObservedPort]) -> str | None:
    """Why the network cannot be deleted yet (Neutron refuses a network with ports), as a
    condition's message; None when nothing but its own ports remain."""
    left = users(ports)
    if not left:
        return None
    owners = sorted({p.device_owner or "unbound" for p in left})
    return f"{len(left)} port(s) still use the network ({', '.join(owners)}); deleted once they are gone"

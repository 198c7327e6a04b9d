"""Who should be a member of each port's pool: the Ready VMs of the group it names, read
from the object store; and which VM changes can move a LoadBalancer's pools at all.

A VM takes traffic once Ready with an address and stops as soon as it is being deleted
(so its deletion can wait until it has been drained). :class:`Wanted` keeps what each
VM's body says per port between passes (a cache: ``kinds/derived.py``), so a pass after
one VM's change does not build every member again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kumo.api.loadbalancer import LoadBalancerSpec, Port
from kumo.engine.objects import Body, Obj, Store
from kumo.kinds import ordering
from kumo.kinds.derived import Derived
from kumo.kinds.labels import GROUP_LABEL
from kumo.kinds.loadbalancer.members import WantedMember
from kumo.kinds.loadbalancer.monitors import monitor_port

#: All of a port that :func:`port_wanting` reads: equal keys, same answers.
PortKey = tuple[str, int, int | None]


def referenced_groups(spec: Body) -> set[str]:
    """Group names a raw LoadBalancer spec points at (for dependents; no validation)."""
    return {
        ref
        for port in spec.get("ports") or []
        if (ref := (port.get("realServers") or {}).get("virtualMachineGroupRef"))
    }


def is_member_vm(vm: Body) -> bool:
    """A VM takes traffic once Ready with an IP, and stops as soon as it is being deleted
    (so its deletion can wait until it has been drained)."""
    meta = vm.get("metadata") or {}
    status = vm.get("status") or {}
    if meta.get("deletionTimestamp") or not status.get("ip"):
        return False
    conditions = status.get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    return ready is not None and ready.get("status") == "True"


#: Phases of a VM still on its way to serving (no phase: not reconciled yet). Not
#: Error, Stopped or Observed: a VM stuck there would delay every addition to its pool
#: by an interval for as long as it stays.
COMING_PHASES = frozenset({None, "Pending", "Building", "Replacing", "Running"})


def coming_vms(vms: Iterable[Body]) -> int:
    """How many of a group's VMs are on their way to its pools: not being deleted, not
    a member yet (:func:`is_member_vm`), and in a phase that leads there."""
    return sum(
        1
        for vm in vms
        if not (vm.get("metadata") or {}).get("deletionTimestamp")
        and (vm.get("status") or {}).get("phase") in COMING_PHASES
        and not is_member_vm(vm)
    )


def moves_members(lb: Body, vm: Body) -> bool:
    """Can this state of a VM of a referenced group change the LoadBalancer's pools, as
    its status shows them? Yes while it should be a member and is not listed at its
    address in every port of its group (or is listed draining), or is listed and should
    not be (being deleted, gone, not Ready, a new address). A VM that is neither, such as
    one building or one already dropped, wakes no LoadBalancer: each member event of a
    big group made every LoadBalancer on it run a pass over all its members."""
    name = vm["metadata"]["name"]
    group = (vm["metadata"].get("labels") or {}).get(GROUP_LABEL)
    ports = [
        p.get("port")
        for p in (lb.get("spec") or {}).get("ports") or []
        if ((p.get("realServers") or {}).get("virtualMachineGroupRef")) == group
    ]
    listed = ordering.listed_members(lb, name)
    if not is_member_vm(vm):
        return bool(listed)
    ip = vm["status"]["ip"]
    serving = {port for port, m in listed if m.get("address") == ip and m.get("weight") != 0}
    return len(listed) != len(ports) or serving != set(ports)


def wanted_members(vms: list[Body], port: Port) -> list[WantedMember]:
    wanted = port_wanting(port)
    return sort_wanted(w for w in map(wanted, vms) if w is not None)


def sort_wanted(found: Iterable[WantedMember]) -> list[WantedMember]:
    """Sorted by the fields in order, as WantedMember's own order, without a Python-level
    comparison per pair (a 300-member pool took ~2,500 of them per pass)."""
    return sorted(found, key=WantedMember.fields)


def port_wanting(port: Port) -> Callable[[Body], WantedMember | None]:
    """What a VM is to ``port``'s pool: the member it should be, or None (another
    group's, or not Ready with an address)."""
    group = port.real_servers.virtual_machine_group_ref
    backend, mport = port.real_servers.port, monitor_port(port)

    def wanted(vm: Body) -> WantedMember | None:
        if (vm["metadata"].get("labels") or {}).get(GROUP_LABEL) != group or not is_member_vm(vm):
            return None
        return WantedMember(vm["metadata"]["name"], vm["status"]["ip"], backend, mport)

    return wanted


def port_key(port: Port) -> PortKey:
    """All of a port that :func:`port_wanting` reads: equal keys, same answers."""
    rs = port.real_servers
    return (rs.virtual_machine_group_ref, rs.port, monitor_port(port))


class Wanted:
    """Desired members per port, each VM's wanted member derived again only from a
    changed body. Rebuilt from the bodies after a restart, and for a port whose group,
    backend port or monitor port changed."""

    def __init__(self) -> None:
        #: (LB UID, port index) → (the port's key, its VMs' wanted members).
        self._ports: dict[tuple[str, int], tuple[PortKey, Derived[WantedMember | None]]] = {}

    def of(
        self, store: Store, obj: Obj, spec: LoadBalancerSpec
    ) -> tuple[list[list[WantedMember]], list[list[Body]]]:
        """Per port, its wanted members (sorted) and its group's VMs (to count those
        still coming: :func:`coming_vms`)."""
        wanted = []
        groups = []
        for i, port in enumerate(spec.ports):
            key = port_key(port)
            known = self._ports.get((obj.uid, i))
            if known is None or known[0] != key:
                known = self._ports[obj.uid, i] = (key, Derived(port_wanting(port)))
            group = port.real_servers.virtual_machine_group_ref
            vms = store.labelled("VirtualMachine", obj.namespace, GROUP_LABEL, group)
            found = known[1].of(obj.uid, vms)
            wanted.append(sort_wanted(w for w in found if w is not None))
            groups.append(vms)
        for stale in [k for k in self._ports if k[0] == obj.uid and k[1] >= len(spec.ports)]:
            del self._ports[stale]
        return wanted, groups

    def derived(self) -> int:
        """Bodies derived afresh so far, over every port (for tests)."""
        return sum(cache.derived for _, cache in self._ports.values())

    def forget(self, uid: str) -> None:
        """The LoadBalancer ``uid`` goes: its ports' caches with it."""
        for known in [k for k in self._ports if k[0] == uid]:
            del self._ports[known]

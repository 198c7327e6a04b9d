"""Share decisions, free of I/O: which addresses should have access, which rules to add
and remove, what status reports, and whether a listing has drifted.

Rule ownership: Manila access rules have no tags, but carry metadata since API 2.45;
Kumo writes ``kumo-owner: <uid>`` (and ``kumo-vm: <name>``) on every rule it creates.
A rule without that marker is foreign: never removed or changed, and an address it
already covers is not added again (Manila refuses a second rule for the same address).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from kumo.api.share import ShareSpec
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Body, Store
from kumo.kinds import ordering
from kumo.kinds.labels import GROUP_LABEL
from kumo.ports.model import RULE_VM_KEY, AccessRule, Share, metadata_owner

AVAILABLE = "available"
#: Share states in which Manila is still working (no change is accepted meanwhile).
BUSY = {"creating", "extending", "shrinking", "deleting", "manage_starting", "migrating"}
#: Rule states on the way out (Manila is removing them).
DENYING = {"queued_to_deny", "denying"}
ACTIVE = "active"
ERROR = "error"


@dataclass(frozen=True, order=True)
class WantedRule:
    """An address that should have access, and why."""

    access_to: str
    access_level: str
    vm: str | None = None  # the VirtualMachine it is for; None for a literal CIDR


@dataclass(frozen=True)
class RulePlan:
    add: list[WantedRule] = field(default_factory=list)
    remove: list[AccessRule] = field(default_factory=list)
    covered_by_foreign: list[WantedRule] = field(default_factory=list)


def share_name(namespace: str, name: str) -> str:
    return f"{namespace}-{name}"


# -- who should have access ------------------------------------------------------------------


def _is_member_vm(vm: Body) -> bool:
    """Ready with an address and not being deleted — the same test LoadBalancer pools use."""
    meta = vm.get("metadata") or {}
    status = vm.get("status") or {}
    if meta.get("deletionTimestamp") or not status.get("ip"):
        return False
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    return ready is not None and ready.get("status") == "True"


def keeps_access(vm: Body, store: Store) -> bool:
    """Does ``vm`` hold on to its access? A Ready member does; one being deleted keeps it
    while a LoadBalancer still sends it traffic (drain order: the LB first, then storage,
    then the server) — bounded by the same wait limit as other deletion ordering."""
    if _is_member_vm(vm):
        return True
    meta = vm.get("metadata") or {}
    if not meta.get("deletionTimestamp") or not (vm.get("status") or {}).get("ip"):
        return False
    if ordering.seconds_since(meta["deletionTimestamp"]) >= ordering.WAIT_LIMIT_SECONDS:
        return False
    return bool(
        ordering.load_balancers_holding(store, meta.get("namespace", "default"), meta["name"])
    )


def wanted_rules(spec: ShareSpec, namespace: str, store: Store) -> list[WantedRule]:
    """One rule per address; when two entries give one address, `rw` wins.

    A dangling reference is the user's to fix and must not revoke anything (bad input
    never deletes): it raises instead of yielding an empty list."""
    vms = store.list("VirtualMachine", namespace)
    by_address: dict[str, WantedRule] = {}

    def want(rule: WantedRule) -> None:
        old = by_address.get(rule.access_to)
        if old is None or (old.access_level == "ro" and rule.access_level == "rw"):
            by_address[rule.access_to] = rule

    for i, entry in enumerate(spec.access):
        level = entry.access_level
        if entry.virtual_machine_group_ref is not None:
            group = entry.virtual_machine_group_ref
            if store.get("VirtualMachineGroup", namespace, group) is None:
                raise TerminalError(
                    "GroupNotFound",
                    f"VirtualMachineGroup {group!r} not found in namespace {namespace!r}",
                    field=f"spec.access[{i}].virtualMachineGroupRef",
                )
            for vm in vms:
                if (vm["metadata"].get("labels") or {}).get(GROUP_LABEL) == group and keeps_access(
                    vm, store
                ):
                    want(WantedRule(vm["status"]["ip"], level, vm["metadata"]["name"]))
        elif entry.virtual_machine_ref is not None:
            vm_body = store.get("VirtualMachine", namespace, entry.virtual_machine_ref)
            if vm_body is None:
                raise TerminalError(
                    "VirtualMachineNotFound",
                    f"VirtualMachine {entry.virtual_machine_ref!r} not found in namespace "
                    f"{namespace!r}",
                    field=f"spec.access[{i}].virtualMachineRef",
                )
            if keeps_access(vm_body, store):
                want(WantedRule(vm_body["status"]["ip"], level, entry.virtual_machine_ref))
        elif entry.cidr is not None:
            want(WantedRule(normalize_cidr(entry.cidr, f"spec.access[{i}].cidr"), level))
    return sorted(by_address.values())


def normalize_cidr(value: str, field: str) -> str:
    """``10.10.0.0/24`` stays, ``10.10.0.5/32`` becomes ``10.10.0.5`` (how Manila keeps
    it); host bits set or not an address at all is the user's to fix."""
    try:
        network = ipaddress.ip_network(value.strip(), strict=True)
    except ValueError as error:
        raise TerminalError(
            "InvalidCIDR", f"{value!r} is not an address or CIDR: {error}", field=field
        ) from None
    if network.num_addresses == 1:
        return str(network.network_address)
    return str(network)


# -- what to change ------------------------------------------------------------------------


def is_mine(rule: AccessRule, uid: str) -> bool:
    return metadata_owner(rule.metadata) == uid


def plan_rules(wanted: list[WantedRule], rules: list[AccessRule], uid: str) -> RulePlan:
    """Rules to remove (Kumo's, no longer wanted or at another level, or a second one for
    an address) and addresses to add (wanted, held by no rule at all). Rules already on
    the way out are neither removed again nor counted as holding their address — the
    address is added once they are gone."""
    want = {w.access_to: w for w in wanted}
    live = [r for r in rules if r.state not in DENYING]
    remove: list[AccessRule] = []
    kept: set[str] = set()
    for rule in sorted(live, key=lambda r: r.id):
        if not is_mine(rule, uid):
            continue
        wish = want.get(rule.access_to)
        if wish is None or wish.access_level != rule.access_level or rule.access_to in kept:
            remove.append(rule)
        else:
            kept.add(rule.access_to)
    held = {r.access_to for r in rules}  # Manila refuses a second rule while one is going
    foreign = {r.access_to for r in live if not is_mine(r, uid)}
    add = [w for w in wanted if w.access_to not in held]
    covered = [w for w in wanted if w.access_to in foreign]
    return RulePlan(add=add, remove=remove, covered_by_foreign=covered)


def rule_metadata(uid: str, wish: WantedRule) -> dict[str, str]:
    metadata = {"kumo-owner": uid}
    if wish.vm:
        metadata[RULE_VM_KEY] = wish.vm
    return metadata


def unapplied_changes(spec: ShareSpec, share: Share, share_type_id: str | None) -> list[str]:
    """Spec fields that differ from the share and that Kumo does not apply."""
    changed = []
    if spec.size < share.size:
        changed.append("spec.size")
    if spec.protocol.upper() != share.protocol.upper():
        changed.append("spec.protocol")
    if share_type_id and share.share_type_id and share_type_id != share.share_type_id:
        changed.append("spec.shareType")
    if spec.availability_zone and spec.availability_zone != share.availability_zone:
        changed.append("spec.availabilityZone")
    return changed


# -- status and drift ----------------------------------------------------------------------


def rules_status(rules: list[AccessRule], uid: str) -> list[Body]:
    """Kumo's rules as status lists them (sorted by address), VM named when known."""
    return [
        {
            "accessTo": r.access_to,
            "accessLevel": r.access_level,
            "id": r.id,
            "state": r.state,
            "virtualMachine": r.metadata.get(RULE_VM_KEY),
        }
        for r in sorted(rules, key=lambda r: (r.access_to, r.id))
        if is_mine(r, uid)
    ]


def foreign_rules(rules: list[AccessRule], uid: str) -> list[str]:
    return sorted(
        f"{r.access_type}:{r.access_to} {r.access_level}" for r in rules if not is_mine(r, uid)
    )


def rules_summary(rules: list[AccessRule], wanted: list[WantedRule]) -> str:
    """``active/desired``: wanted addresses whose rule (Kumo's or foreign) is active."""
    active = {r.access_to for r in rules if r.state == ACTIVE}
    return f"{sum(1 for w in wanted if w.access_to in active)}/{len(wanted)}"

"""SecurityGroup decisions, free of I/O: which rules the spec wants (its references
resolved to addresses and group IDs), which rules to add and remove, and what status
reports.

Rule identity: Neutron has no rule update; a rule is its direction, ethertype, protocol,
port range and remote end. Two rules are the same when these are — with protocol names
and numbers taken as one (`tcp` = `6`), and "any address" written either as no prefix
or as `0.0.0.0/0` (`::/0`). Every rule of Kumo's group that the spec does not want is
removed: the group is Kumo's whole (rules have no tags; Kumo's own say `kumo` in their
description, which only tells the events apart).

Remote groups: a `securityGroupRef` becomes Neutron's ``remote_group_id`` (one rule
whatever the number of ports in that group). A `virtualMachineGroupRef` becomes one
/32 (/128) rule per Ready member address — what Share access does — because a group's
members are not in a security group of their own that a remote group could name.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from kumo.api.securitygroup import PORT_PROTOCOLS, SecurityGroupRuleSpec, SecurityGroupSpec
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Body, Store
from kumo.kinds.labels import GROUP_LABEL
from kumo.ports.model import SecurityGroupRule, rule_label

#: The description of the rules Kumo creates (rules have no tags).
RULE_DESCRIPTION = "kumo"
#: Protocol names Neutron takes as their numbers.
PROTOCOL_NUMBERS = {"tcp": "6", "udp": "17", "icmp": "1", "ipv6-icmp": "58", "icmpv6": "58"}
ANY_ADDRESS = {"IPv4": "0.0.0.0/0", "IPv6": "::/0"}

Key = tuple[str, str, str | None, int | None, int | None, str | None, str | None]


@dataclass(frozen=True, order=True)
class WantedRule:
    """A rule the spec asks for; ``vm``: the VirtualMachine whose address it is for."""

    direction: str
    ethertype: str
    protocol: str | None
    port_range_min: int | None
    port_range_max: int | None
    remote_ip_prefix: str | None
    remote_group_id: str | None
    vm: str | None = None

    @property
    def key(self) -> Key:
        return rule_key(self)

    @property
    def label(self) -> str:
        return rule_label(as_rule(self, ""))


@dataclass(frozen=True)
class Wanted:
    """What the spec asks for now, and what it cannot say yet (a referenced group with
    no ID, a LoadBalancer with no VIP): the rules those would give are neither added nor
    removed until they can be."""

    rules: list[WantedRule]
    waiting: list[str] = field(default_factory=list)
    #: True while a referenced group has no ID yet: rules naming a remote group stay.
    unsure_remote_groups: bool = False


@dataclass(frozen=True)
class RulePlan:
    add: list[WantedRule] = field(default_factory=list)
    remove: list[SecurityGroupRule] = field(default_factory=list)


def group_name(namespace: str, name: str) -> str:
    return f"{namespace}-{name}"


# -- identity ------------------------------------------------------------------------------


def rule_key(rule: SecurityGroupRule | WantedRule) -> Key:
    ethertype = rule.ethertype
    protocol = (rule.protocol or "").lower() or None
    if protocol == "any":
        protocol = None
    protocol = PROTOCOL_NUMBERS.get(protocol or "", protocol)
    if protocol == "1" and ethertype == "IPv6":
        protocol = "58"
    prefix = rule.remote_ip_prefix
    if prefix is not None:
        prefix = str(ipaddress.ip_network(prefix, strict=False))
    if rule.remote_group_id is None and prefix is None:
        prefix = ANY_ADDRESS.get(ethertype)
    return (
        rule.direction,
        ethertype,
        protocol,
        rule.port_range_min,
        rule.port_range_max,
        prefix,
        rule.remote_group_id,
    )


def as_rule(wanted: WantedRule, rule_id: str) -> SecurityGroupRule:
    return SecurityGroupRule(
        rule_id,
        wanted.direction,
        wanted.ethertype,
        wanted.protocol,
        wanted.port_range_min,
        wanted.port_range_max,
        wanted.remote_ip_prefix,
        wanted.remote_group_id,
        RULE_DESCRIPTION,
    )


# -- what the spec wants ---------------------------------------------------------------------


def is_ready_member(vm: Body) -> bool:
    """Ready with an address and not being deleted — the test Share access uses."""
    meta = vm.get("metadata") or {}
    status = vm.get("status") or {}
    if meta.get("deletionTimestamp") or not status.get("ip"):
        return False
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    return ready is not None and ready.get("status") == "True"


def _ports(entry: SecurityGroupRuleSpec, at: str) -> tuple[int | None, int | None]:
    low: int | None = entry.port
    high: int | None = entry.port
    if entry.port is None:
        low, high = entry.port_range_min, entry.port_range_max
    if low is None and high is None:
        return None, None
    if entry.protocol not in PORT_PROTOCOLS:
        raise TerminalError(
            "InvalidSpec",
            f"protocol {entry.protocol} has no ports: remove port/portRangeMin/portRangeMax",
            field=f"{at}.port",
        )
    low, high = low or high, high or low
    if low is not None and high is not None and low > high:
        raise TerminalError(
            "InvalidSpec", f"portRangeMin {low} > portRangeMax {high}", field=f"{at}.portRangeMin"
        )
    return low, high


def _host(address: str) -> tuple[str, str]:
    """``(prefix, ethertype)`` of one address: ``10.0.0.5/32``, ``IPv4``."""
    ip = ipaddress.ip_address(address)
    return f"{ip}/{ip.max_prefixlen}", f"IPv{ip.version}"


def _cidr(value: str, at: str) -> tuple[str, str]:
    try:
        network = ipaddress.ip_network(value.strip(), strict=True)
    except ValueError as error:
        raise TerminalError(
            "InvalidCIDR", f"{value!r} is not an address or CIDR: {error}", field=f"{at}.cidr"
        ) from None
    return str(network), f"IPv{network.version}"


@dataclass(frozen=True)
class _Target:
    """One other end of a rule: an address or CIDR, or a remote group."""

    prefix: str | None
    family: str
    remote_group: str | None = None
    vm: str | None = None


def wanted_rules(
    spec: SecurityGroupSpec, namespace: str, name: str, own_id: str | None, store: Store
) -> Wanted:
    """The rules the spec asks for, its references resolved in ``namespace``.

    A dangling reference is the user's to fix and must not remove anything (bad input
    never deletes): it raises, naming the field."""
    rules: dict[Key, WantedRule] = {}
    waiting: list[str] = []
    unsure = False
    for i, entry in enumerate(spec.rules):
        at = f"spec.rules[{i}]"
        low, high = _ports(entry, at)
        targets, wait = _targets(entry, at, namespace, name, own_id, store)
        if wait:
            waiting.append(wait)
            unsure = unsure or entry.security_group_ref is not None
        for target in targets:
            if entry.ethertype is not None and entry.ethertype != target.family:
                if target.vm is not None:
                    continue  # a member's address of the other family: not this rule's
                raise TerminalError(
                    "InvalidSpec", f"cidr {entry.cidr} is not {entry.ethertype}", field=f"{at}.cidr"
                )
            rule = WantedRule(
                entry.direction,
                entry.ethertype or target.family,
                None if entry.protocol == "any" else entry.protocol,
                low,
                high,
                target.prefix,
                target.remote_group,
                target.vm,
            )
            rules.setdefault(rule.key, rule)
    return Wanted(sorted(rules.values(), key=_order), waiting, unsure)


def _order(rule: WantedRule) -> tuple[tuple[bool, object], ...]:
    """A rule's place in a sorted list. Not the dataclass's own order: two rules for
    the same port, one from a CIDR and one from a remote group, differ first where one
    has None and the other a string, which Python cannot compare (a TypeError)."""
    return tuple(
        (value is not None, value if value is not None else 0)
        for value in (
            rule.direction,
            rule.ethertype,
            rule.protocol,
            rule.port_range_min,
            rule.port_range_max,
            rule.remote_ip_prefix,
            rule.remote_group_id,
            rule.vm,
        )
    )


def _targets(
    entry: SecurityGroupRuleSpec,
    at: str,
    namespace: str,
    name: str,
    own_id: str | None,
    store: Store,
) -> tuple[list[_Target], str | None]:
    """The other ends one rule entry names now, and what it waits for, if anything."""
    if entry.cidr is not None:
        prefix, family = _cidr(entry.cidr, at)
        return [_Target(prefix, family)], None
    if entry.security_group_ref is not None:
        ref = entry.security_group_ref
        remote = own_id if ref == name else _status_of(store, "SecurityGroup", namespace, ref, at)
        if remote is None:
            return [], f"SecurityGroup {ref!r} has no Neutron group yet ({at})"
        return [_Target(None, entry.ethertype or "IPv4", remote_group=str(remote))], None
    if entry.virtual_machine_group_ref is not None:
        group = entry.virtual_machine_group_ref
        _status_of(store, "VirtualMachineGroup", namespace, group, at)
        targets = []
        for vm in store.list("VirtualMachine", namespace):
            labels = (vm.get("metadata") or {}).get("labels") or {}
            if labels.get(GROUP_LABEL) == group and is_ready_member(vm):
                prefix, family = _host(vm["status"]["ip"])
                targets.append(_Target(prefix, family, vm=vm["metadata"]["name"]))
        return targets, None
    lb = entry.load_balancer_ref or ""
    vip = _status_of(store, "LoadBalancer", namespace, lb, at, "vip")
    if not vip:
        return [], f"LoadBalancer {lb!r} has no VIP yet ({at})"
    prefix, family = _host(str(vip))
    return [_Target(prefix, family)], None


#: The reason and the field naming a missing object of each kind a rule may reference.
_MISSING = {
    "SecurityGroup": ("SecurityGroupNotFound", "securityGroupRef"),
    "VirtualMachineGroup": ("GroupNotFound", "virtualMachineGroupRef"),
    "LoadBalancer": ("LoadBalancerNotFound", "loadBalancerRef"),
}


def _status_of(
    store: Store, kind: str, namespace: str, name: str, at: str, key: str = "id"
) -> object:
    """``status.<key>`` of the object a rule names; raises when there is no such object."""
    body = store.get(kind, namespace, name)
    if body is None:
        reason, field_name = _MISSING[kind]
        raise TerminalError(
            reason,
            f"{kind} {name!r} not found in namespace {namespace!r}",
            field=f"{at}.{field_name}",
        )
    return (body.get("status") or {}).get(key)


# -- what to change --------------------------------------------------------------------------


def plan_rules(wanted: Wanted, rules: list[SecurityGroupRule]) -> RulePlan:
    """Rules to remove (every one the spec does not want; one whose remote group may be
    a referenced group's not known yet stays meanwhile) and rules to add (wanted, not in
    the group)."""
    want = {w.key for w in wanted.rules}
    have: set[Key] = set()
    remove: list[SecurityGroupRule] = []
    for rule in sorted(rules, key=lambda r: r.id):
        key = rule_key(rule)
        if key in want and key not in have:
            have.add(key)
        elif not (wanted.unsure_remote_groups and rule.remote_group_id is not None):
            remove.append(rule)
    add = [w for w in wanted.rules if w.key not in have]
    return RulePlan(add=add, remove=remove)


def origin(rule: SecurityGroupRule) -> str:
    """Who made it, as far as its description tells (only for what the events say: every
    rule of the group is Kumo's to keep or remove)."""
    if (rule.description or "") == RULE_DESCRIPTION:
        return "Kumo's"
    default = rule.direction == "egress" and rule.protocol is None and not rule.description
    if default and rule.remote_ip_prefix is None and rule.remote_group_id is None:
        return "Neutron's default"
    return "added outside Kumo"


# -- status ------------------------------------------------------------------------------


def applied_rules(rules: list[SecurityGroupRule], wanted: Wanted) -> list[Body]:
    vms = {w.key: w.vm for w in wanted.rules if w.vm}
    listed = []
    for rule in sorted(rules, key=rule_label):
        entry: Body = {"rule": rule_label(rule), "id": rule.id}
        vm = vms.get(rule_key(rule))
        if vm:
            entry["virtualMachine"] = vm
        listed.append(entry)
    return listed


def rules_summary(rules: list[SecurityGroupRule], wanted: Wanted) -> str:
    """``applied/desired``: wanted rules the group holds."""
    have = {rule_key(r) for r in rules}
    return f"{sum(1 for w in wanted.rules if w.key in have)}/{len(wanted.rules)}"


def users(vms: list[Body], names: set[str]) -> list[str]:
    """The VirtualMachines whose ``spec.securityGroups`` name one of ``names`` (the
    SecurityGroup's name, its Neutron name or ID): its deletion waits for them."""
    return sorted(
        vm["metadata"]["name"]
        for vm in vms
        if names & set((vm.get("spec") or {}).get("securityGroups") or [])
    )

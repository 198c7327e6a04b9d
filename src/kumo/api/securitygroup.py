"""SecurityGroup (short name `sg`): a Neutron security group and its rules, kept whole.

The spec is the whole group: a rule deleted by hand comes back, and a rule added by hand
(Neutron's two default egress rules included) is removed, with an event naming it. A
rule's other end is a literal CIDR, another SecurityGroup (Neutron's remote group), the
Ready members of a VirtualMachineGroup (one /32 or /128 rule per address, following
scaling, healing and rolling replacement) or a LoadBalancer's VIP.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import ConfigDict, Field

from kumo.api.common import (
    CIDR_MAX,
    ImportableSpec,
    KumoModel,
    ManagedSpec,
    ManagedStatus,
    MarkedDescription,
    ObjectName,
    Rule,
    exactly_one_of,
)

Direction = Literal["ingress", "egress"]
EtherType = Literal["IPv4", "IPv6"]
#: Protocols whose rules may name ports (by name or IANA number): TCP, UDP, DCCP, SCTP,
#: UDP-Lite. Neutron refuses a port range on any other.
PORT_PROTOCOLS = ("tcp", "udp", "6", "17", "33", "132", "136")
#: More rules than this is a mistake (Neutron's default quota is 100 per group).
MAX_RULES = 500

_PORTS = "(has(self.port) || has(self.portRangeMin) || has(self.portRangeMax))"


class SecurityGroupRuleSpec(KumoModel):
    """One rule. Give exactly one of `cidr`, `securityGroupRef`, `virtualMachineGroupRef`
    and `loadBalancerRef`: where traffic comes from (ingress) or goes to (egress)."""

    model_config = ConfigDict(
        json_schema_extra=exactly_one_of(
            "cidr", "securityGroupRef", "virtualMachineGroupRef", "loadBalancerRef"
        )
    )
    cel_rules: ClassVar[tuple[Rule, ...]] = (
        Rule(
            f"!{_PORTS} || self.protocol in {list(PORT_PROTOCOLS)}",
            "spec.rules[].port, portRangeMin and portRangeMax need protocol tcp or udp "
            "(or 33, 132, 136): icmp and any have no ports",
        ),
        Rule(
            "!has(self.port) || (!has(self.portRangeMin) && !has(self.portRangeMax))",
            "spec.rules[]: give port or portRangeMin/portRangeMax, not both",
        ),
        Rule(
            "has(self.portRangeMin) == has(self.portRangeMax)",
            "spec.rules[]: portRangeMin and portRangeMax go together (or use port)",
        ),
        Rule(
            "!has(self.portRangeMin) || !has(self.portRangeMax)"
            " || self.portRangeMin <= self.portRangeMax",
            "spec.rules[].portRangeMin must not be greater than portRangeMax",
        ),
    )

    direction: Direction = "ingress"
    """`ingress` (traffic to the group's ports) or `egress` (from them)."""
    protocol: str = Field(default="any", max_length=4, pattern=r"^(tcp|udp|icmp|any|[0-9]{1,3})$")
    """`tcp`, `udp`, `icmp`, `any`, or an IP protocol number (`0`-`255`)."""
    port: int | None = Field(default=None, ge=1, le=65535)
    """One port (tcp/udp). Unset, with no range: every port."""
    port_range_min: int | None = Field(default=None, ge=1, le=65535)
    """First port of a range (tcp/udp)."""
    port_range_max: int | None = Field(default=None, ge=1, le=65535)
    """Last port of a range (tcp/udp)."""
    ethertype: EtherType | None = None
    """`IPv4` or `IPv6`. Unset: the CIDR's or the address's own; `IPv4` for a
    `securityGroupRef`."""
    cidr: str | None = Field(default=None, min_length=1, max_length=CIDR_MAX)
    """A literal address or CIDR (`10.0.0.0/24`, `0.0.0.0/0`); a bare address is a /32
    (/128)."""
    security_group_ref: ObjectName | None = None
    """Another SecurityGroup (same namespace, or this one's own name): any port in that
    group (Neutron's remote group; one rule however many members)."""
    virtual_machine_group_ref: ObjectName | None = None
    """Every Ready member of this VirtualMachineGroup (same namespace): one /32 (/128)
    rule per member address, following scaling, healing and rolling replacement."""
    load_balancer_ref: ObjectName | None = None
    """A LoadBalancer (same namespace): its VIP address, as a /32 (/128) rule."""


class SecurityGroupSpec(ManagedSpec, ImportableSpec):
    """Desired state of a SecurityGroup."""

    description: MarkedDescription | None = None
    """The group's description, at most 194 characters (Kumo appends its ownership
    marker; Neutron allows 255 in all)."""
    rules: list[SecurityGroupRuleSpec] = Field(default_factory=list, max_length=MAX_RULES)
    """Every rule of the group. Empty: the group lets nothing in and nothing out
    (Neutron's default egress rules are removed too: list an egress rule to keep them)."""


class AppliedRule(KumoModel):
    """One rule of the group as Neutron holds it."""

    rule: str
    """The rule in one line: `ingress IPv4 tcp 22 from 10.0.0.5/32`."""
    id: str | None = None
    """Neutron's rule ID."""
    virtual_machine: str | None = None
    """The VirtualMachine whose address the rule is for (a `virtualMachineGroupRef`)."""


class SecurityGroupStatus(ManagedStatus):
    """Observed state of a SecurityGroup."""

    name: str | None = None
    """The Neutron group's name (`<namespace>-<name>`)."""
    rules: str | None = None
    """Rules `applied/desired`, for `kubectl get`."""
    applied_rules: list[AppliedRule] = Field(default_factory=list)
    """Every rule of the group, as Neutron holds it."""

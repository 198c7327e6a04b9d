"""DNSRecord (short name `dns`): one Designate recordset that follows its target."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, StringConstraints

from kumo.api.common import (
    KUBE_NAME_MAX,
    MARKER_ROOM,
    CloudRef,
    ImportableSpec,
    ManagedSpec,
    ManagedStatus,
    exactly_one_of,
    fixed_once_created,
)

RecordType = Literal["A", "AAAA", "CNAME", "TXT"]

#: Designate allows 160 characters; Kumo appends " kumo-owner=<uid>@<cluster>" (61).
DNS_DESCRIPTION_MAX = 160 - MARKER_ROOM
#: The most literal values of one record.
MAX_VALUES = 100
#: The longest literal value: an address or a name is far shorter; a TXT value may hold
#: several 255-character strings (a DKIM key).
MAX_VALUE_LENGTH = 1024


class DNSRecordSpec(ManagedSpec, ImportableSpec):
    """Desired state of a DNSRecord. Give exactly one target."""

    model_config = ConfigDict(
        json_schema_extra=exactly_one_of(
            "loadBalancerRef",
            "virtualMachineRef",
            "virtualMachineGroupRef",
            "floatingIPRef",
            "values",
        )
    )

    object_rules = (
        fixed_once_created(
            "zone",
            "spec.zone is immutable: a recordset cannot move to another zone; delete and "
            "recreate the DNSRecord to move it",
        ),
        fixed_once_created(
            "type",
            "spec.type is immutable: Designate cannot change a recordset's type; delete and "
            "recreate the DNSRecord to change it",
        ),
    )

    zone: CloudRef
    """Designate zone name (e.g. `example.test.`) or ID."""
    name: CloudRef
    """Record name, relative to the zone (`api`) or fully qualified (`api.example.test.`)."""
    type: RecordType = "A"
    """Record type."""
    ttl: int = Field(default=300, ge=1)
    """Time to live in seconds."""
    description: str | None = Field(default=None, max_length=DNS_DESCRIPTION_MAX)
    """Recordset description, at most 99 characters (Kumo appends its ownership marker;
    Designate allows 160 in all)."""
    load_balancer_ref: str | None = Field(default=None, max_length=KUBE_NAME_MAX)
    """Target: the VIP of this LoadBalancer (same namespace)."""
    virtual_machine_ref: str | None = Field(default=None, max_length=KUBE_NAME_MAX)
    """Target: the address of this VirtualMachine (same namespace)."""
    virtual_machine_group_ref: str | None = Field(default=None, max_length=KUBE_NAME_MAX)
    """Target: the addresses of all members of this VirtualMachineGroup (same namespace)."""
    floating_ip_ref: str | None = Field(
        default=None, alias="floatingIPRef", max_length=KUBE_NAME_MAX
    )
    """Target: the address of this FloatingIP (same namespace)."""
    values: list[Annotated[str, StringConstraints(max_length=MAX_VALUE_LENGTH)]] = Field(
        default_factory=list, max_length=MAX_VALUES
    )
    """Target: literal record values (at most 100)."""


class DNSRecordStatus(ManagedStatus):
    """Observed state of a DNSRecord."""

    zone_id: str | None = None
    """Designate zone ID."""
    fqdn: str | None = None
    """Fully qualified record name."""
    records: list[str] = Field(default_factory=list)
    """Values currently published."""

"""Kumo as a Cluster API infrastructure provider (API group ``infrastructure.kumo.dev``).

``KumoCluster`` (a Cluster's infrastructure: network, security groups, the API load
balancer, server groups) and ``KumoMachine`` (one server per Machine), with their
templates for ClusterClass and MachineDeployments. The fields CAPI reads follow its
contract v1beta2 (``spec.controlPlaneEndpoint``, ``spec.providerID``,
``status.initialization.provisioned``, ``status.failureDomains`` as a list,
``status.addresses``, ``status.failureDomain``, ``status.conditions``); the v1beta1
fields CAPI v1.14 still reads are kept beside them (``status.ready``, and the top-level
``status.failureReason``/``failureMessage``). Field names CAPI spells against camelCase
(``providerID``, ``allowedCIDRs``, ``floatingIP``) carry explicit aliases.
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator

from kumo.api.common import (
    CIDR_MAX,
    CLOUD_NAME_MAX,
    VERSION,
    CloudName,
    KumoModel,
    ManagedStatus,
)
from kumo.api.common import INFRA_GROUP as INFRA_GROUP
from kumo.api.virtualmachine import MAX_SECURITY_GROUPS, RootVolumeSpec

#: The provider's API group (``INFRA_GROUP``) and version.
INFRA_VERSION = VERSION
#: Cluster API's own group, and the contract the CRDs implement: the label
#: ``cluster.x-k8s.io/v1beta2: v1alpha1`` maps the contract to the CRD's versions.
CAPI_GROUP = "cluster.x-k8s.io"
CONTRACT = "v1beta2"
CONTRACT_LABEL = f"{CAPI_GROUP}/{CONTRACT}"
#: The category ``kubectl get cluster-api`` lists.
CATEGORY = "cluster-api"

#: The port the workload cluster's API servers listen on, and its load balancer.
API_SERVER_PORT = 6443
#: The longest endpoint host CAPI takes.
HOST_MAX = 512
#: The most availability zones (failure domains) of one cluster.
MAX_ZONES = 32
#: The smallest nodes' subnet: the network, gateway and VIP addresses, and some nodes.
MIN_ADDRESSES = 8
#: The most CIDRs allowed to reach the API.
MAX_CIDRS = 64
#: A failure domain's name, as CAPI bounds it.
FAILURE_DOMAIN_MAX = 256
#: Labels and annotations of a template's object metadata.
META_MAX = 64
LabelKey = Annotated[str, StringConstraints(min_length=1, max_length=317)]
LabelValue = Annotated[str, StringConstraints(max_length=4096)]
Cidr = Annotated[str, StringConstraints(min_length=1, max_length=CIDR_MAX)]
ServerGroupPolicy = Literal["anti-affinity", "soft-anti-affinity", "none"]


class APIEndpoint(KumoModel):
    """Where the workload cluster's API is reached."""

    host: str | None = Field(default=None, min_length=1, max_length=HOST_MAX)
    """Host name or address of the API endpoint."""
    port: int | None = Field(default=None, ge=1, le=65535)
    """Its port."""


class ClusterNetworkSpec(KumoModel):
    """The cluster's own Neutron network (a Kumo Network, with a router to the outside)."""

    cidr: str = Field(
        default="10.6.0.0/24", min_length=3, max_length=CIDR_MAX, pattern=r"^[0-9a-fA-F:.]+/\d+$"
    )
    """The subnet of the nodes (at least 8 addresses). Its last address but one is the API
    load balancer's VIP, kept out of the addresses Neutron hands the nodes."""

    @field_validator("cidr")
    @classmethod
    def _cidr(cls, value: str) -> str:
        try:
            net = ipaddress.ip_network(value, strict=True)
        except ValueError as e:
            raise ValueError(f"spec.network.cidr {value!r} is not a network prefix: {e}") from e
        if net.num_addresses < MIN_ADDRESSES:
            raise ValueError(
                f"spec.network.cidr {value} is too small: at least a /29 (8 addresses)"
            )
        return value

    external_network: str | None = Field(default=None, min_length=1, max_length=CLOUD_NAME_MAX)
    """The router's external network (name or ID). Default: the cloud's only one."""
    dns_nameservers: list[Annotated[str, StringConstraints(max_length=45)]] = Field(
        default_factory=list, max_length=5
    )
    """DNS servers DHCP hands out to the nodes."""


class ClusterDNSSpec(KumoModel):
    """A Designate record for the API endpoint."""

    zone: str = Field(min_length=1, max_length=CLOUD_NAME_MAX)
    """The zone (name or ID), e.g. `example.org.`."""
    name: str = Field(min_length=1, max_length=CLOUD_NAME_MAX)
    """The record's name in the zone, e.g. `api.prod`."""


class KumoClusterSpec(KumoModel):
    """A Cluster's infrastructure: a Network with a router, a `-node` and an `-api`
    SecurityGroup, a LoadBalancer on 6443 whose pool follows the control-plane machines,
    optionally a FloatingIP and a DNSRecord, and one Nova server group per machine set.
    Each is a Kumo object owned by the KumoCluster and named after the Cluster."""

    control_plane_endpoint: APIEndpoint | None = None
    """Where the API is reached: written by Kumo once the API load balancer (or its
    floating IP) has an address, then never changed. Set by hand, Kumo leaves it."""
    network: ClusterNetworkSpec = Field(default_factory=ClusterNetworkSpec)
    """The nodes' network."""
    allowed_cidrs: list[Cidr] = Field(
        default_factory=lambda: ["0.0.0.0/0"], max_length=MAX_CIDRS, alias="allowedCIDRs"
    )
    """Who may reach the API (6443) from outside the cluster: one rule of the `-api`
    SecurityGroup per CIDR. The nodes reach it among themselves."""
    floating_ip: bool = Field(default=False, alias="floatingIP")
    """Give the API load balancer a floating IP (its address becomes the endpoint)."""
    dns: ClusterDNSSpec | None = None
    """A DNS A record for the endpoint (its name becomes the endpoint)."""
    availability_zones: list[CloudName] = Field(default_factory=list, max_length=MAX_ZONES)
    """Nova availability zones, reported as the cluster's failure domains (CAPI spreads
    the control plane over them). Empty: none (Nova picks)."""
    server_group_policy: ServerGroupPolicy = "anti-affinity"
    """The policy of the Nova server group of each machine set (the control plane, each
    MachineDeployment): `anti-affinity` (default: no two machines of a set on one host),
    `soft-anti-affinity`, or `none` (no server groups)."""


class Initialization(KumoModel):
    """CAPI contract v1beta2: initialization completed."""

    provisioned: bool | None = None
    """True once the infrastructure is provisioned."""


class FailureDomain(KumoModel):
    """A place machines can be put in (a Nova availability zone)."""

    name: str = Field(min_length=1, max_length=FAILURE_DOMAIN_MAX)
    """The zone's name."""
    control_plane: bool | None = None
    """Fit for control-plane machines."""


class ServerGroupStatus(KumoModel):
    """The Nova server group of one machine set."""

    name: str
    """The machine set: `control-plane`, or the MachineDeployment's (or MachineSet's) name."""
    id: str
    """The Nova server group's ID."""
    policy: str
    """Its policy."""


class KumoClusterStatus(ManagedStatus):
    """Observed state of a KumoCluster."""

    initialization: Initialization | None = None
    """`provisioned` once every part is Ready and the endpoint is written."""
    ready: bool | None = None
    """The same, as CAPI's v1beta1 contract reads it."""
    failure_domains: list[FailureDomain] = Field(default_factory=list)
    """The cluster's failure domains: its availability zones."""
    failure_reason: str | None = None
    """v1beta1 contract: why the infrastructure cannot be made (a part's name taken, bad
    input), until fixed."""
    failure_message: str | None = None
    """v1beta1 contract: the message of that failure, naming the field."""
    cluster_name: str | None = None
    """The owning Cluster."""
    network: str | None = None
    """The Network object's name."""
    load_balancer: str | None = None
    """The API LoadBalancer object's name."""
    vip: str | None = None
    """The API load balancer's VIP."""
    floating_ip: str | None = Field(default=None, alias="floatingIP")
    """The API's floating IP address."""
    server_groups: list[ServerGroupStatus] = Field(default_factory=list)
    """The Nova server groups of the machine sets."""
    parts: str | None = None
    """Parts Ready/all, for `kubectl get`."""


class KumoMachineSpec(KumoModel):
    """One server for one Machine: a Kumo VirtualMachine booted with the Machine's
    bootstrap data, in its machine set's server group, never rebuilt (a Machine's
    providerID cannot change; MachineHealthCheck replaces the Machine)."""

    provider_id: str | None = Field(default=None, min_length=1, max_length=512, alias="providerID")
    """`openstack:///<server ID>`: written by Kumo once the server exists."""
    image: str = Field(min_length=1, max_length=CLOUD_NAME_MAX)
    """Glance image name or ID."""
    flavor: str = Field(min_length=1, max_length=CLOUD_NAME_MAX)
    """Nova flavor name or ID."""
    key_name: str | None = Field(default=None, min_length=1, max_length=CLOUD_NAME_MAX)
    """A Nova keypair (or a KeyPair object of the namespace) to inject."""
    security_groups: list[CloudName] = Field(
        default_factory=list, max_length=MAX_SECURITY_GROUPS - 2
    )
    """More security groups, besides the cluster's `-node` (and `-api` on the control
    plane)."""
    root_volume: RootVolumeSpec | None = None
    """Boot from a new Cinder volume of this size."""


class MachineAddress(KumoModel):
    """One address of the machine, as CAPI types it."""

    type: Literal["Hostname", "ExternalIP", "InternalIP", "ExternalDNS", "InternalDNS"]
    """Its type."""
    address: str
    """The address."""


class KumoMachineStatus(ManagedStatus):
    """Observed state of a KumoMachine (``id``: the server's)."""

    cluster_name: str | None = None
    """The Cluster it belongs to."""

    initialization: Initialization | None = None
    """`provisioned` once the server is ACTIVE."""
    ready: bool | None = None
    """The same, as CAPI's v1beta1 contract reads it."""
    addresses: list[MachineAddress] = Field(default_factory=list)
    """The server's addresses."""
    failure_domain: str | None = None
    """The availability zone the server was asked for."""
    failure_reason: str | None = None
    """v1beta1 contract: the server was lost or failed and will not be rebuilt
    (`UpdateError`), or the spec cannot be built (`InvalidConfiguration`)."""
    failure_message: str | None = None
    """v1beta1 contract: the message of that failure, naming the field."""
    virtual_machine: str | None = None
    """The VirtualMachine object's name."""
    server_group: str | None = None
    """The Nova server group the server was put in."""


class TemplateMeta(KumoModel):
    """Labels and annotations the made object gets."""

    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict, max_length=META_MAX)
    """Labels."""
    annotations: dict[LabelKey, LabelValue] = Field(default_factory=dict, max_length=META_MAX)
    """Annotations."""


class KumoClusterTemplateResource(KumoModel):
    """What a KumoCluster made from the template holds."""

    metadata: TemplateMeta | None = None
    """Its labels and annotations."""
    spec: KumoClusterSpec
    """Its spec."""


class KumoClusterTemplateSpec(KumoModel):
    """A KumoCluster for a ClusterClass."""

    template: KumoClusterTemplateResource
    """The KumoCluster to make."""


class KumoMachineTemplateResource(KumoModel):
    """What a KumoMachine made from the template holds."""

    metadata: TemplateMeta | None = None
    """Its labels and annotations."""
    spec: KumoMachineSpec
    """Its spec."""


class KumoMachineTemplateSpec(KumoModel):
    """KumoMachines for a control plane or a MachineDeployment; a change rolls them out
    (CAPI makes new Machines from the new template)."""

    template: KumoMachineTemplateResource
    """The KumoMachine to make."""

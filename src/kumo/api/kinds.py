"""The registry of Kumo's kinds: names, models and how `kubectl get` shows them.

Everything that needs to know "which kinds exist" — CRD generation, the runtime
wiring, RBAC — reads this one table.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pydantic import BaseModel

from kumo.api import (
    capi,
    dnsrecord,
    floatingip,
    keypair,
    loadbalancer,
    network,
    port,
    securitygroup,
    share,
    virtualmachine,
    virtualmachinegroup,
    volume,
)
from kumo.api.common import GROUP, VERSION

READY = '.status.conditions[?(@.type=="Ready")].status'
STALLED = '.status.conditions[?(@.type=="Stalled")].status'


@dataclass(frozen=True)
class PrinterColumn:
    name: str
    json_path: str
    type: str = "string"
    description: str = ""
    priority: int = 0


AGE = PrinterColumn("Age", ".metadata.creationTimestamp", "date")
#: With `-o wide`: True when the object waits on its user (a permanent error).
STALLED_COLUMN = PrinterColumn(
    "Stalled", STALLED, description="True: waits on a fix by the user", priority=1
)
READY_COLUMN = PrinterColumn("Ready", READY)
#: With `-o wide`: the main cloud resource's ID.
ID_COLUMN = PrinterColumn("ID", ".status.id", priority=1)


def columns(
    *shown: PrinterColumn, wide: tuple[PrinterColumn, ...] = (), cloud_id: bool = True
) -> tuple[PrinterColumn, ...]:
    """A kind's `kubectl get` columns: ``shown``; with `-o wide` also ``wide`` and (unless
    not ``cloud_id``) the cloud ID; then what every kind shows last, Stalled (wide) and Age."""
    more = tuple(dataclasses.replace(column, priority=1) for column in wide)
    return (*shown, *more, *((ID_COLUMN,) if cloud_id else ()), STALLED_COLUMN, AGE)


@dataclass(frozen=True)
class KindInfo:
    kind: str
    plural: str
    short_names: tuple[str, ...]
    spec_model: type[BaseModel]
    #: None: a kind with no status (a Cluster API template: CRD only, no controller).
    status_model: type[BaseModel] | None
    description: str
    printer_columns: tuple[PrinterColumn, ...]
    scalable: bool = False
    group: str = GROUP
    version: str = VERSION
    categories: tuple[str, ...] = ("kumo",)

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def crd_name(self) -> str:
        """The CRD's name, e.g. ``virtualmachines.kumo.dev``."""
        return f"{self.plural}.{self.group}"

    @property
    def finalizer(self) -> str:
        """Kumo's finalizer for this kind, e.g. ``virtualmachine.kumo.dev/finalizer``."""
        return f"{self.singular}.{self.group}/finalizer"


VIRTUAL_MACHINE = KindInfo(
    kind="VirtualMachine",
    plural="virtualmachines",
    short_names=("vm",),
    spec_model=virtualmachine.VirtualMachineSpec,
    status_model=virtualmachine.VirtualMachineStatus,
    description="A Nova server kept true to its spec.",
    printer_columns=columns(
        PrinterColumn("Phase", ".status.phase"),
        READY_COLUMN,
        PrinterColumn("IP", ".status.ip"),
        wide=(PrinterColumn("Flavor", ".spec.flavor"), PrinterColumn("Image", ".spec.image")),
    ),
)

VIRTUAL_MACHINE_GROUP = KindInfo(
    kind="VirtualMachineGroup",
    plural="virtualmachinegroups",
    short_names=("vmg",),
    spec_model=virtualmachinegroup.VirtualMachineGroupSpec,
    status_model=virtualmachinegroup.VirtualMachineGroupStatus,
    description="N VirtualMachines built from one template, spread by a Nova server group.",
    printer_columns=columns(
        PrinterColumn("Desired", ".spec.replicas", "integer"),
        PrinterColumn("Current", ".status.replicas", "integer"),
        PrinterColumn("Ready", ".status.readyReplicas", "integer"),
        PrinterColumn("Up-to-date", ".status.updatedReplicas", "integer"),
        PrinterColumn("HA", ".spec.haPolicy"),
        wide=(PrinterColumn("Status", READY),),
        cloud_id=False,
    ),
    scalable=True,
)

LOAD_BALANCER = KindInfo(
    kind="LoadBalancer",
    plural="loadbalancers",
    short_names=("lb",),
    spec_model=loadbalancer.LoadBalancerSpec,
    status_model=loadbalancer.LoadBalancerStatus,
    description="An Octavia load balancer whose pools follow VirtualMachineGroups.",
    printer_columns=columns(
        PrinterColumn("VIP", ".status.vip"),
        PrinterColumn("Phase", ".status.phase"),
        READY_COLUMN,
        wide=(PrinterColumn("Type", ".spec.vipType"),),
    ),
)

FLOATING_IP = KindInfo(
    kind="FloatingIP",
    plural="floatingips",
    short_names=("fip",),
    spec_model=floatingip.FloatingIPSpec,
    status_model=floatingip.FloatingIPStatus,
    description="A Neutron floating IP, held or following a VirtualMachine or LoadBalancer.",
    printer_columns=columns(
        PrinterColumn("Address", ".status.address"),
        PrinterColumn("Phase", ".status.phase"),
        READY_COLUMN,
        PrinterColumn("VM", ".spec.virtualMachineRef"),
        wide=(
            PrinterColumn("LB", ".spec.loadBalancerRef"),
            PrinterColumn("Port", ".status.portId"),
        ),
    ),
)

DNS_RECORD = KindInfo(
    kind="DNSRecord",
    plural="dnsrecords",
    short_names=("dns",),
    spec_model=dnsrecord.DNSRecordSpec,
    status_model=dnsrecord.DNSRecordStatus,
    description="A Designate recordset that follows a LoadBalancer, VM, group or literal values.",
    printer_columns=columns(
        PrinterColumn("FQDN", ".status.fqdn"),
        PrinterColumn("Type", ".spec.type"),
        PrinterColumn("Records", ".status.records"),
        READY_COLUMN,
        cloud_id=False,
    ),
)

SHARE = KindInfo(
    kind="Share",
    plural="shares",
    short_names=(),
    spec_model=share.ShareSpec,
    status_model=share.ShareStatus,
    description="A Manila share whose access rules follow VirtualMachines and groups.",
    printer_columns=columns(
        PrinterColumn("Size", ".status.size", "integer", "GiB"),
        PrinterColumn("Protocol", ".spec.protocol"),
        PrinterColumn("Export", ".status.exportLocation"),
        PrinterColumn("Rules", ".status.rules", description="access rules active/desired"),
        READY_COLUMN,
        wide=(PrinterColumn("Exports", ".status.exportLocations"),),
    ),
)

SECURITY_GROUP = KindInfo(
    kind="SecurityGroup",
    plural="securitygroups",
    short_names=("sg",),
    spec_model=securitygroup.SecurityGroupSpec,
    status_model=securitygroup.SecurityGroupStatus,
    description="A Neutron security group whose rules follow VirtualMachineGroups and "
    "LoadBalancers.",
    printer_columns=columns(
        PrinterColumn("Name", ".status.name"),
        PrinterColumn("Rules", ".status.rules", description="rules applied/desired"),
        READY_COLUMN,
    ),
)

KEY_PAIR = KindInfo(
    kind="KeyPair",
    plural="keypairs",
    short_names=("kp",),
    spec_model=keypair.KeyPairSpec,
    status_model=keypair.KeyPairStatus,
    description="A Nova keypair whose public key is inline or read from a ConfigMap or Secret.",
    printer_columns=columns(
        PrinterColumn("Key Name", ".status.keyName"),
        PrinterColumn("Type", ".status.keyType"),
        PrinterColumn("Fingerprint", ".status.fingerprint"),
        READY_COLUMN,
        cloud_id=False,
    ),
)

VOLUME = KindInfo(
    kind="Volume",
    plural="volumes",
    short_names=("vol",),
    spec_model=volume.VolumeSpec,
    status_model=volume.VolumeStatus,
    description="A Cinder volume: empty or from an image or snapshot; grows in place.",
    printer_columns=columns(
        PrinterColumn("Size", ".status.size", "integer", "GiB"),
        PrinterColumn("Status", ".status.volumeStatus"),
        READY_COLUMN,
        wide=(PrinterColumn("Attached", ".status.attachments"),),
    ),
)

NETWORK = KindInfo(
    kind="Network",
    plural="networks",
    short_names=("net",),
    spec_model=network.NetworkSpec,
    status_model=network.NetworkStatus,
    description="A Neutron network, its subnets and, optionally, a router to the outside.",
    printer_columns=columns(
        PrinterColumn("Name", ".status.name"),
        PrinterColumn("Subnets", ".status.subnets[*].cidr"),
        PrinterColumn("External", ".status.externalAddress"),
        READY_COLUMN,
    ),
)

PORT = KindInfo(
    kind="Port",
    plural="ports",
    short_names=(),
    spec_model=port.PortSpec,
    status_model=port.PortStatus,
    description="A Neutron port: a fixed address VirtualMachines boot on, kept through "
    "their replacement.",
    printer_columns=columns(
        PrinterColumn("Address", ".status.address"),
        PrinterColumn("Phase", ".status.phase"),
        READY_COLUMN,
        PrinterColumn("Server", ".status.deviceId"),
        wide=(PrinterColumn("Network", ".status.networkId"),),
    ),
)

#: Cluster API's kinds of Kumo (``infrastructure.kumo.dev``): reconciled like the others,
#: and listed in CAPI's category too.
CAPI_CATEGORIES = ("kumo", capi.CATEGORY)

KUMO_CLUSTER = KindInfo(
    kind="KumoCluster",
    plural="kumoclusters",
    short_names=("kcl",),
    spec_model=capi.KumoClusterSpec,
    status_model=capi.KumoClusterStatus,
    description="A Cluster API Cluster's infrastructure on Kumo: network, security groups, "
    "the API load balancer, server groups.",
    printer_columns=(
        PrinterColumn("Cluster", ".status.clusterName"),
        PrinterColumn("Endpoint", ".spec.controlPlaneEndpoint.host"),
        PrinterColumn("Provisioned", ".status.initialization.provisioned", "boolean"),
        PrinterColumn("Ready", READY),
        PrinterColumn("Parts", ".status.parts", description="parts Ready/all", priority=1),
        STALLED_COLUMN,
        AGE,
    ),
    group=capi.INFRA_GROUP,
    version=capi.INFRA_VERSION,
    categories=CAPI_CATEGORIES,
)

KUMO_MACHINE = KindInfo(
    kind="KumoMachine",
    plural="kumomachines",
    short_names=("kma",),
    spec_model=capi.KumoMachineSpec,
    status_model=capi.KumoMachineStatus,
    description="A Cluster API Machine's server on Kumo: one VirtualMachine, never rebuilt.",
    printer_columns=(
        PrinterColumn("Cluster", ".status.clusterName"),
        PrinterColumn("Provider ID", ".spec.providerID"),
        PrinterColumn("Provisioned", ".status.initialization.provisioned", "boolean"),
        PrinterColumn("Ready", READY),
        PrinterColumn("Flavor", ".spec.flavor", priority=1),
        PrinterColumn("Image", ".spec.image", priority=1),
        STALLED_COLUMN,
        AGE,
    ),
    group=capi.INFRA_GROUP,
    version=capi.INFRA_VERSION,
    categories=CAPI_CATEGORIES,
)

#: Templates CAPI makes KumoClusters and KumoMachines from: CRDs only, no controller.
KUMO_CLUSTER_TEMPLATE = KindInfo(
    kind="KumoClusterTemplate",
    plural="kumoclustertemplates",
    short_names=(),
    spec_model=capi.KumoClusterTemplateSpec,
    status_model=None,
    description="A KumoCluster for a ClusterClass.",
    printer_columns=(AGE,),
    group=capi.INFRA_GROUP,
    version=capi.INFRA_VERSION,
    categories=CAPI_CATEGORIES,
)

KUMO_MACHINE_TEMPLATE = KindInfo(
    kind="KumoMachineTemplate",
    plural="kumomachinetemplates",
    short_names=(),
    spec_model=capi.KumoMachineTemplateSpec,
    status_model=None,
    description="KumoMachines for a control plane or a MachineDeployment.",
    printer_columns=(
        PrinterColumn("Flavor", ".spec.template.spec.flavor"),
        PrinterColumn("Image", ".spec.template.spec.image"),
        AGE,
    ),
    group=capi.INFRA_GROUP,
    version=capi.INFRA_VERSION,
    categories=CAPI_CATEGORIES,
)

#: Kinds others use first: where no reference orders two kinds, the fixtures and the bench
#: delete the later one first (``registry.deletion_order``), so security groups and
#: KeyPairs, which VMs name, come before them here (deleting everything takes them last).
KINDS: tuple[KindInfo, ...] = (
    NETWORK,
    SECURITY_GROUP,
    KEY_PAIR,
    VOLUME,  # before the VMs that attach it: deleted after them
    PORT,  # before the VMs that boot on it: deleted after them
    VIRTUAL_MACHINE,
    VIRTUAL_MACHINE_GROUP,
    LOAD_BALANCER,
    FLOATING_IP,
    DNS_RECORD,
    SHARE,
    # Cluster API's: deleted before the Kumo objects they make (registry.deletion_order).
    KUMO_MACHINE,
    KUMO_CLUSTER,
)

#: Kinds with a CRD and no controller.
TEMPLATES: tuple[KindInfo, ...] = (KUMO_CLUSTER_TEMPLATE, KUMO_MACHINE_TEMPLATE)


def of_group(group: str) -> tuple[KindInfo, ...]:
    """Every kind with a CRD in ``group``: the reconciled ones, then the templates."""
    return tuple(info for info in (*KINDS, *TEMPLATES) if info.group == group)

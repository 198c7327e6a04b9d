"""VirtualMachine (short name `vm`): one Nova server."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, StringConstraints, model_validator

from kumo.api.common import (
    CLOUD_NAME_MAX,
    MAX_ADDRESS_PAIRS,
    AddressPair,
    CloudName,
    CloudRef,
    ConfigMapKeyRef,
    Description,
    ImportableSpec,
    KumoModel,
    ManagedSpec,
    ManagedStatus,
    ObjectName,
    ObjectRef,
    Rule,
    SecretKeyRef,
    atomic_list,
    exactly_one_of,
)
from kumo.api.volume import MAX_VOLUME_GIB

#: Nova's limit on user_data, which travels base64-encoded: 65535 characters.
USER_DATA_MAX_BASE64 = 65535
#: The longest script whose base64 fits: 4 * ceil(49149 / 3) = 65532 <= 65535. The schema
#: counts characters; Kumo checks the UTF-8 bytes of the script it sends, whatever the
#: source (a ConfigMap or a Secret too), before calling Nova.
INIT_SCRIPT_MAX_BYTES = USER_DATA_MAX_BASE64 // 4 * 3
#: Nova's default quota of metadata items per server ...
NOVA_METADATA_QUOTA = 128
#: ... of which Kumo uses two (kumo:object, kumo:spec-hash).
MAX_METADATA_ITEMS = NOVA_METADATA_QUOTA - 2
#: Nova limits metadata keys and values to 255 characters each. The key limit is a CEL
#: rule in the CRD; the controller's InvalidSpec stays the second line.
MetadataKey = Annotated[str, StringConstraints(min_length=1, max_length=255)]
MetadataValue = Annotated[str, StringConstraints(max_length=255)]
#: The most networks one server is attached to ...
MAX_NETWORKS = 16
#: ... and the most security groups on its ports.
MAX_SECURITY_GROUPS = 32
#: The most Port objects one server takes.
MAX_PORTS = 16


class InitScript(KumoModel):
    """The script cloud-init runs at first boot (Nova user_data). Give exactly one source."""

    model_config = ConfigDict(
        json_schema_extra=exactly_one_of("value", "configMapRef", "secretRef")
    )

    value: str | None = Field(default=None, max_length=INIT_SCRIPT_MAX_BYTES)
    """The script itself, inline (at most 49149 bytes: Nova takes 64 KiB of base64)."""
    config_map_ref: ConfigMapKeyRef | None = None
    """Read the script from a ConfigMap key; a change of that key replaces the server."""
    secret_ref: SecretKeyRef | None = None
    """Read the script from a Secret key (same namespace), for scripts holding
    credentials; a change of that key replaces the server (noticed at the next resync)."""


class VirtualMachineTemplate(KumoModel):
    """What a server looks like. Shared by VirtualMachine and VirtualMachineGroup.template."""

    image: CloudRef
    """Glance image name or ID. Changing it replaces the server."""
    flavor: CloudRef
    """Nova flavor name or ID. Changing it replaces the server."""
    init_script: InitScript | None = None
    """First-boot script (Nova user_data). Changing it replaces the server."""
    description: Description | None = None
    """Server description; updated in place."""
    networks: list[CloudName] = Field(default_factory=list, max_length=MAX_NETWORKS)
    """Neutron network names or IDs to attach, in order (at most 16). Empty: the
    project's network (none when the VM names `ports`)."""
    availability_zone: str | None = Field(default=None, max_length=CLOUD_NAME_MAX)
    """Nova availability zone. Changing it replaces the server."""
    key_name: str | None = Field(default=None, max_length=CLOUD_NAME_MAX)
    """Nova keypair name injected into the server. Changing it replaces the server."""
    security_groups: list[CloudName] = Field(default_factory=list, max_length=MAX_SECURITY_GROUPS)
    """Security group names or IDs (at most 32). Changing them replaces the server."""
    metadata: dict[MetadataKey, MetadataValue] = Field(
        default_factory=dict,
        max_length=MAX_METADATA_ITEMS,
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "self.all(k, size(k) <= 255)",
                    "message": "metadata keys are at most 255 characters (Nova's limit)",
                }
            ]
        },
    )
    """Server metadata (key/value, each at most 255 characters; at most 126 entries:
    Nova's default quota is 128 and Kumo adds two); updated in place."""
    allowed_address_pairs: list[AddressPair] = Field(
        default_factory=list, max_length=MAX_ADDRESS_PAIRS
    )
    """Addresses the server's own port (the one Nova makes on `networks`) may also send
    from, set in place on that port: a VIP a group's members share through keepalived
    (VRRP). In a group's template they are part of the template (a change rolls the
    members); each member sets them on its server's port, again after a replacement."""


#: ``Always``: a server that must go (lost, in ERROR past its grace, a field Nova cannot
#: change in place changed) is replaced. ``Never``: it is reported, never rebuilt.
ReplacementPolicy = Literal["Always", "Never"]

#: Nova's default limit of volumes attached to one server (``max_volumes_per_server``
#: is unlimited by default, but libvirt has 26 virtio disks to name: vdb..vdz).
MAX_VOLUMES = 25


class VolumeAttachmentSpec(KumoModel):
    """A volume to attach to the server, in place (Nova's ``os-volume_attachments``): the
    server is never replaced for it. Give exactly one of `volumeRef` and `name`."""

    cel_rules = (
        Rule(
            "has(self.volumeRef) != has(self.name)",
            "spec.volumes[]: give exactly one of volumeRef and name",
        ),
    )

    volume_ref: ObjectName | None = None
    """A Volume object in the VM's namespace: attached once it is Ready; its deletion
    waits while a VM names it."""
    name: CloudRef | None = None
    """An existing Cinder volume Kumo does not manage, by name or ID."""
    device: str | None = Field(
        default=None, min_length=1, max_length=32, pattern=r"^/dev/[a-z0-9]+$"
    )
    """Device name to ask Nova for (`/dev/vdb`); a hint the hypervisor may ignore. Unset:
    Nova picks the next free one."""

    @model_validator(mode="after")
    def _one_source(self) -> VolumeAttachmentSpec:
        if (self.volume_ref is None) == (self.name is None):
            raise ValueError("spec.volumes[]: give exactly one of volumeRef and name")
        return self


class RootVolumeSpec(KumoModel):
    """Boot from a new Cinder volume made from `image` (deleted with the server)."""

    size: int = Field(ge=1, le=MAX_VOLUME_GIB)
    """Size in GiB (at least the image's minimum disk). Changing it replaces the server."""
    volume_type: CloudRef | None = None
    """Cinder volume type; unset: the cloud's default. Changing it replaces the server."""


class VirtualMachineSpec(VirtualMachineTemplate, ManagedSpec, ImportableSpec):
    """Desired state of a VirtualMachine."""

    volumes: list[VolumeAttachmentSpec] = Field(
        default_factory=list,
        max_length=MAX_VOLUMES,
        json_schema_extra=atomic_list,
    )
    """Volumes to attach, in place: adding one attaches it once the server is ACTIVE,
    removing one detaches it; the server is never replaced for either. A volume attached
    to another server is waited for (`VolumeInUse`, naming the server): Kumo never
    detaches it from a server it does not own. A replaced server gets the same volumes."""
    root_volume: RootVolumeSpec | None = None
    """Boot from a new volume made from `image` instead of the flavor's local disk; the
    volume is deleted with the server. Changing it replaces the server."""

    ports: list[ObjectRef] = Field(default_factory=list, max_length=MAX_PORTS)
    """Port objects (same namespace) the server is attached to, after `networks`: each
    waits until it is Ready and no other server holds it (`WaitingForPort`). A replaced
    server gets the same ports, so the same addresses. With ports and no `networks`, the
    server is on its ports only. Changing the list replaces the server."""

    server_group: str | None = Field(default=None, max_length=CLOUD_NAME_MAX)
    """Nova server group ID to schedule into (a VirtualMachineGroup sets it for its
    members). Changing it replaces the server. Not checked on import: Nova cannot add an
    existing server to a group, so an imported server stays outside it."""
    replacement_policy: ReplacementPolicy = "Always"
    """`Always` (default): a server lost, left in ERROR or whose replaced-on-change field
    changed is replaced by a new one. `Never`: it is reported instead (`ServerLost`,
    `ServerError`, `ReplacementRefused`, naming the field) and no second server is ever
    made: for a server whose identity others hold (a Cluster API Machine's providerID),
    which is replaced by deleting the object."""


class Address(KumoModel):
    """One IP address of the server."""

    network: str
    """Network name the address is on."""
    ip: str
    """The address."""
    version: int = 4
    """IP version, 4 or 6."""


class AttachedVolume(KumoModel):
    """One volume attached to the server through `spec.volumes`."""

    id: str
    """The Cinder volume's ID."""
    name: str | None = None
    """The `volumeRef` or `name` of the spec's entry."""
    device: str | None = None
    """The device asked for, when the spec names one."""


class VirtualMachineStatus(ManagedStatus):
    """Observed state of a VirtualMachine."""

    ip: str | None = None
    """First fixed IP address, for `kubectl get` and references."""
    addresses: list[Address] = Field(default_factory=list)
    """Every address of the server."""
    host_id: str | None = None
    """Nova's opaque host ID: two servers with the same value share a hypervisor."""
    server_group_id: str | None = None
    """Server group the server was scheduled in (set by a VirtualMachineGroup). Empty for
    an imported server: Nova adds a server to a group only when it boots it."""
    volumes: list[AttachedVolume] = Field(default_factory=list)
    """The volumes of `spec.volumes` attached to the server (Nova's view)."""
    allowed_address_pairs: list[AddressPair] = Field(default_factory=list)
    """The allowed address pairs Neutron shows on the server's own port, once
    `spec.allowedAddressPairs` was set on it."""
    spec_hash: str | None = None
    """Hash of the fields whose change replaces the server, as built."""
    error_replacements: int | None = None
    """How many times Kumo replaced a server Nova put in ERROR since the last ACTIVE one
    (reset when a server becomes ACTIVE or the spec changes)."""
    last_error_replacement: str | None = None
    """When Kumo last replaced a server in ERROR; each further replacement waits twice as
    long as the one before (60 s, 2 m, 4 m, … up to 1 h)."""
    replacing_id: str | None = None
    """The server being deleted to make way for a new one. In a server group the new one
    boots only once it is gone: Nova counts a member being deleted on its host, so a
    replacement booted at once would find no host under `hard` anti-affinity."""

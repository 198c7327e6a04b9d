"""Pieces every Kumo kind shares: the base model, references, conditions, status.

These models are the API contract. The CRD schemas in ``deploy/base/crds`` are
generated from them (see :mod:`kumo.api.crd`), and the controllers parse
objects with them, so the two can never disagree.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, NamedTuple

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    StringConstraints,
    field_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonDict, JsonSchemaValue
from pydantic_core import CoreSchema

GROUP = "kumo.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
#: The Cluster API provider's group (kumo.api.capi); each group is a CRD file of its own.
INFRA_GROUP = f"infrastructure.{GROUP}"
GROUPS = (GROUP, INFRA_GROUP)

#: Finalizer names of the operator Kumo replaces; treated as aliases of Kumo's own
#: so objects created from Verda manifests are never stuck in deletion.
LEGACY_FINALIZER_GROUP = "verda.linecorp.com"

#: ``"true"`` holds the object: Kumo writes nothing to the cloud for it, still reads and
#: reports (``kumo.engine.pause``).
PAUSED_ANNOTATION = f"{GROUP}/paused"
#: Any new value asks for a pass now; ``status.lastHandledReconcileAt`` echoes it once done.
RECONCILE_REQUEST_ANNOTATION = f"{GROUP}/reconcile-requested-at"


class Rule(NamedTuple):
    """A CEL validation rule the API server checks at admission (``x-kubernetes-validations``).

    ``rule`` sees the model's object as ``self`` (and, on an update, the stored one as
    ``oldSelf``; a rule using it is a transition rule, checked on updates only). Field
    names are the wire names; a CEL keyword is escaped (``import`` -> ``__import__``).
    ``message`` names the field at fault, as Kumo's own conditions do."""

    rule: str
    message: str


class KumoModel(BaseModel):
    """Base of every API model: camelCase on the wire, docstrings become descriptions.

    A model's ``cel_rules`` (and its bases') become the CRD's CEL validations on its object:
    what the API server rejects at admission, before Kumo sees the change. The
    controllers keep their own checks as the second line (an object stored before a
    rule existed, an API server older than CEL)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        use_attribute_docstrings=True,
        extra="ignore",
        frozen=True,
    )
    cel_rules: ClassVar[tuple[Rule, ...]] = ()
    #: Rules on a kind's whole object, for those that must see status besides spec
    #: (set on spec models; see :func:`fixed_once_created`).
    object_rules: ClassVar[tuple[Rule, ...]] = ()

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        if rules := _inherited(cls, "cel_rules"):
            target = handler.resolve_ref_schema(schema)
            target["x-kubernetes-validations"] = [r._asdict() for r in rules]
        return schema


def _inherited(model: type[BaseModel], attribute: str) -> list[Rule]:
    """The rules ``attribute`` holds on ``model`` and its bases, base first, each once."""
    found = [r for klass in reversed(model.__mro__) for r in vars(klass).get(attribute, ())]
    return list(dict.fromkeys(found))


def cel_name(field: str) -> str:
    """How CEL spells a wire field name (its keywords are escaped as ``__name__``)."""
    return f"__{field}__" if field in CEL_KEYWORDS else field


def once_created(condition: str, message: str) -> Rule:
    """An object rule: ``condition`` (CEL over ``self``/``oldSelf``) must hold once the
    cloud resource exists (``status.id``); before that nothing is built from the spec."""
    return Rule(f"!has(oldSelf.status) || !has(oldSelf.status.id) || ({condition})", message)


def fixed_once_created(field: str, message: str) -> Rule:
    """An object rule: ``spec.<field>`` (wire name) keeps its value, set or unset, once
    the cloud resource exists (``status.id``). Before that nothing is built from it yet,
    and a spec brought in line with an imported resource that did not match can still
    be corrected. ``message`` names the field and says what to do instead."""
    f = cel_name(field)
    return once_created(
        f"has(self.spec.{f}) == has(oldSelf.spec.{f})"
        f" && (!has(self.spec.{f}) || self.spec.{f} == oldSelf.spec.{f})",
        message,
    )


def object_rules(model: type[BaseModel]) -> list[Rule]:
    """The object rules of a spec model and its bases (``object_rules``), base first."""
    return _inherited(model, "object_rules")


#: Field names CEL reserves; Kubernetes escapes them as ``__name__`` in rules.
CEL_KEYWORDS = frozenset(
    {"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
     "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
     "void", "while"}
)  # fmt: skip


def exactly_one_of(*fields: str) -> JsonDict:
    """Schema fragment requiring exactly one of ``fields`` (enforced at admission)."""
    return {"oneOf": [{"required": [f]} for f in fields]}


def atomic_list(schema: JsonDict) -> None:
    """Schema hook for a list of objects without a key field: ``atomic`` (server-side
    apply replaces it whole, one manager owns it). Not ``set``: a set of objects makes
    every server-side apply of the object fail ("associative list without keys has an
    element that's a map type"), and a CEL uniqueness rule over 1,000 items is over the
    cost limit, so repeats are the controller's check (``InvalidSpec``)."""
    schema["x-kubernetes-list-type"] = "atomic"
    items = schema.get("items")
    if isinstance(items, dict):
        items["x-kubernetes-map-type"] = "atomic"


DeletionPolicy = Literal["Delete", "Orphan"]
ManagementPolicy = Literal["Manage", "Observe"]
DriftPolicy = Literal["Correct", "Report"]

#: Nova, Octavia and Designate store descriptions of at most 255 characters.
MAX_DESCRIPTION = 255
# Every string, list and map of a spec is bounded (tests/unit/api/test_bounds.py walks
# the CRDs for one left unbounded): besides refusing what the cloud would, the bounds let
# the API server estimate the cost of CEL rules, and keep one object from filling etcd
# or Kumo's memory.
#: A reference to another object of the namespace: a Kubernetes object name (a DNS
#: subdomain, RFC 1123), and a ConfigMap's or Secret's data key, are at most 253.
KUBE_NAME_MAX = 253
#: An OpenStack name or ID (of an image, flavor, network, zone, type, ...): Nova, Neutron,
#: Cinder, Glance, Octavia and Manila names are at most 255 characters, IDs 36.
CLOUD_NAME_MAX = 255
#: An IP address as text (the longest, an IPv4-mapped IPv6 address: 45) ...
ADDRESS_MAX = 45
#: ... and one with a prefix length (``/128``).
CIDR_MAX = ADDRESS_MAX + 4
#: An item of a list of OpenStack names or IDs.
CloudName = Annotated[str, StringConstraints(max_length=CLOUD_NAME_MAX)]
#: The longest cluster ID (kumo.ports.markers): the first 12 hex digits of the
#: ``kube-system`` namespace's UID, or what ``--cluster-id`` gives.
CLUSTER_ID_MAX = 12
#: Kumo's ownership marker as a word of a name or description,
#: ``kumo-owner=<36-character UID>@<cluster ID>``, at its longest ...
MARKER_WORD_MAX = len("kumo-owner=") + 36 + len("@") + CLUSTER_ID_MAX
#: ... and the room it takes after the user's own text (a space, then the word).
MARKER_ROOM = 1 + MARKER_WORD_MAX
#: What a user's description may hold where Kumo appends its marker word to it (a
#: FloatingIP's, a Network's and a SecurityGroup's Neutron resource carries it from its
#: create call on: kumo/kinds/described.py); Neutron allows 255 characters in all.
MARKED_DESCRIPTION_MAX = MAX_DESCRIPTION - MARKER_ROOM

# The field types the kinds' specs repeat (each a bounded string; the schema the same as
# the ``Field(...)`` each spelled out).
#: The name of another object of the namespace (a reference: ``volumeRef``, ...).
ObjectName = Annotated[str, StringConstraints(min_length=1, max_length=KUBE_NAME_MAX)]
#: An OpenStack name or ID (an image, a flavor, a network, a type, ...), never empty.
CloudRef = Annotated[str, StringConstraints(min_length=1, max_length=CLOUD_NAME_MAX)]
#: A description as Nova, Octavia, Cinder and Manila store it.
Description = Annotated[str, StringConstraints(max_length=MAX_DESCRIPTION)]
#: A description Kumo appends its marker word to (:data:`MARKED_DESCRIPTION_MAX`).
MarkedDescription = Annotated[str, StringConstraints(max_length=MARKED_DESCRIPTION_MAX)]


class ManagedSpec(KumoModel):
    """Fields every kind's spec has."""

    deletion_policy: DeletionPolicy = "Delete"
    """What happens to the cloud resources when this object is deleted: `Delete` removes
    them, `Orphan` leaves them in the cloud, released: Kumo's ownership marker is replaced
    by `kumo-orphan=<uid>` (the orphan sweep leaves them alone; `spec.import` may take
    them over)."""
    management_policy: ManagementPolicy = "Manage"
    """`Manage` (default): Kumo makes the cloud match the spec. `Observe`: Kumo only reads
    the resource and reports what differs from the spec in `status.drift` and the
    `Drifted` condition; it changes, creates and deletes nothing (deleting the object
    leaves the resource). Switching back to `Manage` applies the spec."""
    drift_policy: DriftPolicy = "Correct"
    """For managed objects. `Correct` (default): changes made behind Kumo's back are put
    back. `Report`: they are only reported in `status.drift` (like `Observe`); Kumo still
    applies the spec whenever it changes (a new `metadata.generation`), until the object
    is Ready again."""


class ImportRef(KumoModel):
    """An existing cloud resource to take over. Give exactly one of `id` and `name`."""

    model_config = ConfigDict(json_schema_extra=exactly_one_of("id", "name"))

    id: str | None = Field(default=None, min_length=1, max_length=CLOUD_NAME_MAX)
    """The resource's cloud ID."""
    name: str | None = Field(default=None, min_length=1, max_length=CLOUD_NAME_MAX)
    """The resource's name (exactly one resource must have it)."""

    @property
    def key(self) -> str:
        return import_key({"id": self.id, "name": self.name}) or ""


def import_key(ref: Mapping[str, Any]) -> str | None:
    """``id=<id>`` or ``name=<name>``: how Kumo compares and prints an import reference
    (as a spec holds it, or an ImportRef's fields); None when it names nothing."""
    if ref.get("id"):
        return f"id={ref['id']}"
    if ref.get("name"):
        return f"name={ref['name']}"
    return None


class ImportableSpec(KumoModel):
    """The `import` field of kinds that can take over an existing resource."""

    #: Checked on the whole object (it needs status): once the resource is taken over
    #: (``status.id`` set), ``spec.import`` may be removed but not pointed elsewhere.
    #: Before that, a wrong name can still be corrected.
    object_rules: ClassVar[tuple[Rule, ...]] = (
        once_created(
            "!has(oldSelf.spec.__import__) || !has(self.spec.__import__)"
            " || self.spec.__import__ == oldSelf.spec.__import__",
            "spec.import cannot name another resource once it took one over (status.id): "
            "delete this object (deletionPolicy: Orphan keeps the resource) and create a new one",
        ),
    )

    import_: ImportRef | None = Field(default=None, alias="import")
    """Take over this existing resource instead of creating one: Kumo checks that what
    cannot change matches the spec (else `ImportMismatch`, naming the field), refuses one
    another object owns (`AlreadyOwned`), puts its ownership marker on it, records its ID
    and from then on manages it like its own (with `managementPolicy: Observe` it only
    reads it). Without `import`, Kumo never touches a resource it did not create."""


class ConfigMapKeyRef(KumoModel):
    """A key of a ConfigMap in the object's own namespace."""

    name: str = Field(min_length=1, max_length=KUBE_NAME_MAX)
    """Name of the ConfigMap (same namespace)."""
    key: str = Field(min_length=1, max_length=KUBE_NAME_MAX)
    """Key inside the ConfigMap's data."""


class SecretKeyRef(KumoModel):
    """A key of a Secret in the object's own namespace (there is no namespace field: a
    reference can never reach another namespace's Secrets)."""

    name: str = Field(min_length=1, max_length=KUBE_NAME_MAX)
    """Name of the Secret (same namespace)."""
    key: str = Field(min_length=1, max_length=KUBE_NAME_MAX)
    """Key inside the Secret's data."""


class Condition(KumoModel):
    """A Kubernetes-style condition."""

    type: str
    """Condition type: `Ready`, `Reconciling`, `Stalled`, `Drifted` or `Paused`."""
    status: Literal["True", "False", "Unknown"]
    """`True`, `False` or `Unknown`."""
    reason: str = ""
    """One CamelCase word saying why, e.g. `ImageNotFound`."""
    message: str = ""
    """What happened, naming the spec field at fault when there is one."""
    last_transition_time: str | None = None
    """When `status` last changed."""
    observed_generation: int | None = None
    """The metadata.generation this condition was computed for."""


class DriftEntry(KumoModel):
    """One way the cloud differs from the spec."""

    field: str
    """The spec field (or the resource, when it is missing or would be replaced)."""
    desired: str = ""
    """What the spec asks for."""
    actual: str = ""
    """What the cloud holds."""


class ManagedStatus(KumoModel):
    """Status fields every kind has."""

    id: str | None = None
    """ID of the main cloud resource, recorded as soon as it exists."""
    phase: str | None = None
    """Short summary of the state, for `kubectl get`."""
    observed_generation: int | None = None
    """The metadata.generation the controller last acted on."""
    conditions: list[Condition] = Field(default_factory=list)
    """Current conditions: `Ready` summarises the object; `Stalled` is True while it
    waits on something only its user can fix, False while Kumo progresses or retries;
    `Drifted` (observed objects) is True while the cloud differs from the spec."""
    drift: list[DriftEntry] = Field(default_factory=list)
    """What differs from the spec, field by field, while Kumo only observes
    (`managementPolicy: Observe`, or `driftPolicy: Report` once the spec is applied)."""
    applied_generation: int | None = None
    """With `driftPolicy: Report`: the metadata.generation whose spec Kumo last applied
    in full; later drift at this generation is reported, not corrected."""
    last_handled_reconcile_at: str | None = None
    """The value of the `kumo.dev/reconcile-requested-at` annotation the last pass served
    (set it to anything new, e.g. the time, to ask for a pass now)."""


class ObjectRef(KumoModel):
    """Another Kumo object of the same namespace, by name (there is no namespace field:
    a reference never reaches another namespace)."""

    name: ObjectName
    """Name of the object (same namespace)."""


#: Neutron's default ``max_allowed_address_pair``.
MAX_ADDRESS_PAIRS = 10


class AddressPair(KumoModel):
    """An address a port may also send from (Neutron's allowed address pair): a VIP that
    keepalived (VRRP) moves between servers, without a load balancer."""

    ip_address: str = Field(
        min_length=1, max_length=CIDR_MAX, pattern=r"^[0-9a-fA-F:.]+(/[0-9]{1,3})?$"
    )
    """An IP address or a prefix (`10.0.0.100`, `10.0.0.0/24`)."""
    mac_address: str | None = Field(
        default=None, pattern=r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$", max_length=17
    )
    """The MAC address it may use; unset: the port's own."""

    @field_validator("ip_address")
    @classmethod
    def _address(cls, value: str) -> str:
        try:
            ipaddress.ip_network(value, strict=False)
        except ValueError as e:
            raise ValueError(f"ipAddress {value!r} is not an address or prefix: {e}") from e
        return value

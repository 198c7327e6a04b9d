"""Which field of which kind names an object of another kind, declared once.

The deletion waits and the wake-ups they need (:mod:`kumo.kinds.ordering`), the deletion
order of the test fixtures and the bench (:func:`kumo.kinds.registry.deletion_order`) read
this table, and a unit test checks every path against the referrer's spec model, so a
renamed field fails a test instead of silently breaking an ordering.
"""

from __future__ import annotations

from dataclasses import dataclass

from kumo.engine.objects import Body, Key, Store


@dataclass(frozen=True)
class Reference:
    referrer: str
    #: Path in the referrer's spec in camelCase; ``[]`` marks a list, e.g.
    #: ``ports[].realServers.virtualMachineGroupRef``.
    field: str
    target: str
    #: True when the referrer's deletion goes first (its target waits for it).
    referrer_first: bool = False
    #: False when deleting everything at once needs no order between the two (the
    #: referrer only reads the target, and may point at its own kind).
    orders: bool = True


REFERENCES: tuple[Reference, ...] = (
    Reference("DNSRecord", "loadBalancerRef", "LoadBalancer", referrer_first=True),
    Reference("DNSRecord", "virtualMachineRef", "VirtualMachine", referrer_first=True),
    Reference("DNSRecord", "virtualMachineGroupRef", "VirtualMachineGroup", referrer_first=True),
    Reference("DNSRecord", "floatingIPRef", "FloatingIP", referrer_first=True),
    Reference("LoadBalancer", "ports[].realServers.virtualMachineGroupRef", "VirtualMachineGroup"),
    # A FloatingIP follows its target; deleting the target does not wait for it.
    Reference("FloatingIP", "virtualMachineRef", "VirtualMachine"),
    Reference("FloatingIP", "loadBalancerRef", "LoadBalancer"),
    Reference("Share", "access[].virtualMachineRef", "VirtualMachine"),
    Reference("Share", "access[].virtualMachineGroupRef", "VirtualMachineGroup"),
    # A SecurityGroup's rules read their targets; it goes after the VMs that use it.
    Reference("SecurityGroup", "rules[].securityGroupRef", "SecurityGroup", orders=False),
    Reference(
        "SecurityGroup", "rules[].virtualMachineGroupRef", "VirtualMachineGroup", orders=False
    ),
    Reference("SecurityGroup", "rules[].loadBalancerRef", "LoadBalancer", orders=False),
    Reference("VirtualMachine", "securityGroups[]", "SecurityGroup"),
    # A VM boots with the KeyPair of that name (in its namespace) once it is Ready, else
    # with the cloud's keypair of that name. Not referrer_first: Nova injects the key at
    # boot, so deleting a keypair a server was booted with harms nothing; the fixtures
    # and the bench still delete VMs first (registry.deletion_order).
    Reference("VirtualMachine", "keyName", "KeyPair"),
    # A KumoMachine's VirtualMachine boots with it (the VM waits for it, not the machine).
    Reference("KumoMachine", "keyName", "KeyPair"),
    # Objects on a Network wait for it to be Ready and hold its deletion while they name
    # it (Neutron refuses to delete a network with ports); they go first.
    Reference("VirtualMachine", "networks[]", "Network"),
    # A VM attaches a Volume once it is Ready; the Volume's deletion waits while a VM
    # names it (the VM detaches it when it leaves spec.volumes). VMs go first.
    Reference("VirtualMachine", "volumes[].volumeRef", "Volume"),
    # A VM boots on a Port once it is Ready; the Port's deletion waits while a VM names
    # it. VMs go first.
    Reference("VirtualMachine", "ports[]", "Port"),
    Reference("Port", "network", "Network"),
    Reference("Port", "securityGroups[]", "SecurityGroup"),
    Reference("VirtualMachineGroup", "template.networks[]", "Network"),
    Reference("LoadBalancer", "vipNetwork", "Network"),
    # Objects Kumo does not own: a change to one re-queues the objects that read it.
    Reference("VirtualMachine", "initScript.configMapRef", "ConfigMap"),
    Reference("VirtualMachine", "initScript.secretRef", "Secret"),
    Reference("KeyPair", "publicKeyFrom.configMapRef", "ConfigMap"),
    Reference("KeyPair", "publicKeyFrom.secretRef", "Secret"),
)


def readers_of(target: str) -> list[Reference]:
    """The references to ``target``, a kind of Kumo's or ConfigMap/Secret."""
    return [ref for ref in REFERENCES if ref.target == target]


def goes_first(target: str) -> list[Reference]:
    """The references to ``target`` whose referrer is deleted before it."""
    return [ref for ref in REFERENCES if ref.target == target and ref.referrer_first]


def referenced_names(spec: dict[str, object], field: str) -> list[str]:
    """Every name ``field`` holds in ``spec``, through its lists (``[]``): plain strings
    or ``{name: …}`` references; empty values are left out."""
    values: list[object] = [spec]
    for part in field.split("."):
        key = part.removesuffix("[]")
        values = [value.get(key) if isinstance(value, dict) else None for value in values]
        if part.endswith("[]"):
            values = [item for value in values if isinstance(value, list) for item in value]
    names = [value.get("name") if isinstance(value, dict) else value for value in values]
    return [name for name in names if isinstance(name, str) and name]


def referenced_name(spec: dict[str, object], field: str) -> str | None:
    """The name a dotted ``field`` (no lists) holds in ``spec``: a plain string or a
    ``{name: …}`` reference such as an initScript's ``configMapRef``."""
    value: object = spec
    for part in field.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if isinstance(value, dict):
        value = value.get("name")
    return value if isinstance(value, str) else None


def referencing(referrer: str) -> dict[str, str]:
    """Target kind → field, for the references ``referrer`` declares at its spec's top."""
    return {ref.target: ref.field for ref in REFERENCES if ref.referrer == referrer}


@dataclass(frozen=True)
class Resolved:
    """What a name that may name an object of another kind stands for: ``value`` to give
    the cloud, or ``waiting`` (why not yet: the object exists but is not Ready)."""

    value: str | None
    waiting: str | None = None


def resolve(store: Store, namespace: str, target: str, name: str | None, field: str) -> Resolved:
    """``name`` as a referrer's spec gives it: when an object of ``target`` has that name
    in ``namespace``, its ``status.<field>`` once it is Ready and not being deleted (a
    wait before); else the name itself, the cloud's own resource of that name."""
    if not name:
        return Resolved(None)
    body = store.get(target, namespace, name)
    if body is None:
        return Resolved(name)
    status = body.get("status") or {}
    conditions = status.get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    value = status.get(field)
    if (body.get("metadata") or {}).get("deletionTimestamp"):
        return Resolved(None, f"{target} {name!r} is being deleted")
    if not ready or not value:
        return Resolved(None, f"{target} {name!r} is not Ready yet")
    return Resolved(str(value))


def unbuilt_referrers(store: Store, referrer: str, target: str, body: Body) -> list[Key]:
    """The objects of ``referrer`` in ``body``'s namespace that name ``body`` (an object of
    ``target``) in a declared reference and have no cloud resource yet (no ``status.id``):
    those that may be waiting for it."""
    fields = [r.field for r in REFERENCES if r.referrer == referrer and r.target == target]
    if not fields:
        return []
    meta = body.get("metadata") or {}
    namespace, name = meta.get("namespace", "default"), meta.get("name")
    return [
        Key(referrer, namespace, other["metadata"]["name"])
        for other in store.list(referrer, namespace)
        if not (other.get("status") or {}).get("id")
        and any(name in referenced_names(other.get("spec") or {}, f) for f in fields)
    ]


def users_of(store: Store, namespace: str, target: str, name: str) -> dict[str, list[str]]:
    """Referrer kind → the objects in ``namespace`` naming the ``target`` object ``name``
    in a declared reference (sorted): what a target's deletion waits for."""
    users: dict[str, set[str]] = {}
    for ref in readers_of(target):
        for other in store.list(ref.referrer, namespace):
            if name in referenced_names(other.get("spec") or {}, ref.field):
                users.setdefault(ref.referrer, set()).add(other["metadata"]["name"])
    return {kind: sorted(names) for kind, names in sorted(users.items())}


def deleting_targets(store: Store, kind: str, body: Body, target: str) -> list[Key]:
    """The ``target`` objects being deleted that ``body`` (an object of ``kind``) names
    in a declared reference: its change, or its deletion, may end their wait."""
    fields = [ref.field for ref in readers_of(target) if ref.referrer == kind]
    if not fields:
        return []
    spec = body.get("spec") or {}
    namespace = (body.get("metadata") or {}).get("namespace", "default")
    named = {n for f in fields for n in referenced_names(spec, f)}
    return [
        Key(target, namespace, other["metadata"]["name"])
        for other in store.list(target, namespace)
        if other["metadata"]["name"] in named and other["metadata"].get("deletionTimestamp")
    ]

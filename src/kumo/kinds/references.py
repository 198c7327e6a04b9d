"""Which field of which kind names an object of another kind, declared once.

The deletion waits and the wake-ups they need (:mod:`kumo.kinds.ordering`), the deletion
order of the test fixtures and the bench (:func:`kumo.kinds.registry.deletion_order`) read
this table, and a unit test checks every path against the referrer's spec model, so a
renamed field fails a test instead of silently breaking an ordering.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Reference:
    referrer: str
    #: Path in the referrer's spec in camelCase; ``[]`` marks a list, e.g.
    #: ``ports[].realServers.virtualMachineGroupRef``.
    field: str
    target: str
    #: True when the referrer's deletion goes first (its target waits for it).
    referrer_first: bool = False


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
    # Objects Kumo does not own: a change to one re-queues the objects that read it.
    Reference("VirtualMachine", "initScript.configMapRef", "ConfigMap"),
    Reference("VirtualMachine", "initScript.secretRef", "Secret"),
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

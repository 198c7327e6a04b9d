"""Declared references name real spec fields of real kinds, and every field that names
another object is declared."""

from __future__ import annotations

import re
import types
import typing

import pytest
from pydantic import BaseModel

from kumo.api.common import ConfigMapKeyRef, ObjectRef, SecretKeyRef
from kumo.api.kinds import KEY_PAIR, KINDS
from kumo.kinds import registry
from kumo.kinds.references import (
    REFERENCES,
    Reference,
    Resolved,
    goes_first,
    readers_of,
    referenced_names,
    referencing,
    resolve,
)
from kumo.runtime.store import MemoryStore
from tests.unit.fakes import make_body

SPECS = {info.kind: info.spec_model for info in KINDS}


def _models(annotation: object) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (through Optional, unions and lists)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType, list, tuple):
        return [m for arg in typing.get_args(annotation) for m in _models(arg)]
    return []


def _is_list(annotation: object) -> bool:
    """A list, or an optional one (``list[str] | None``)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return len(args) == 1 and _is_list(args[0])
    return typing.get_origin(annotation) is list


def has_field(model: type[BaseModel], path: str) -> bool:
    """True when the camelCase ``path`` (``[]`` marks a list) exists in ``model``."""
    head, _, rest = path.partition(".")
    is_list = head.endswith("[]")
    name = head.removesuffix("[]")
    field = next((f for f in model.model_fields.values() if f.alias == name), None)
    if field is None:
        return False
    if is_list != _is_list(field.annotation):
        return False
    if not rest:
        return True
    return any(has_field(inner, rest) for inner in _models(field.annotation))


@pytest.mark.parametrize("ref", REFERENCES, ids=lambda r: f"{r.referrer}.{r.field}")
def test_reference_names_a_spec_field(ref: Reference) -> None:
    assert ref.target in SPECS or ref.target in ("ConfigMap", "Secret")
    assert has_field(SPECS[ref.referrer], ref.field)


def test_the_check_fails_on_a_field_the_spec_lacks() -> None:
    lb = SPECS["LoadBalancer"]
    assert has_field(lb, "ports[].realServers.virtualMachineGroupRef")
    assert not has_field(lb, "ports[].realServers.virtualMachineRef")
    assert not has_field(lb, "ports.realServers.virtualMachineGroupRef")  # a list, not marked
    assert not has_field(SPECS["DNSRecord"], "loadBalancer")


def test_dns_records_go_first_for_each_of_their_targets() -> None:
    fields = [  # DNSRecord's fields and the kind each names
        ("loadBalancerRef", "LoadBalancer"),
        ("virtualMachineRef", "VirtualMachine"),
        ("virtualMachineGroupRef", "VirtualMachineGroup"),
        ("floatingIPRef", "FloatingIP"),
    ]
    for field, target in fields:
        assert [(r.referrer, r.field) for r in goes_first(target)] == [("DNSRecord", field)]
    assert goes_first("DNSRecord") == goes_first("Share") == []
    assert [r.referrer for r in goes_first("VirtualMachine")] == ["DNSRecord"], (
        "a FloatingIP does not hold its VM back"
    )
    assert referencing("DNSRecord") == {target: field for field, target in fields}


def test_referenced_names_walk_lists_and_name_references() -> None:
    lb = {"ports": [{"realServers": {"virtualMachineGroupRef": "web"}}, {"realServers": {}}]}
    assert referenced_names(lb, "ports[].realServers.virtualMachineGroupRef") == ["web"]
    share = {"access": [{"virtualMachineRef": "a"}, {"virtualMachineRef": "b"}, {}]}
    assert referenced_names(share, "access[].virtualMachineRef") == ["a", "b"]
    vm = {"initScript": {"configMapRef": {"name": "boot", "key": "sh"}}}
    assert referenced_names(vm, "initScript.configMapRef") == ["boot"]
    assert referenced_names({"virtualMachineRef": ""}, "virtualMachineRef") == []
    assert referenced_names({"access": "oops"}, "access[].virtualMachineRef") == []
    assert referenced_names({}, "loadBalancerRef") == []


def test_a_vm_names_its_key_pair_without_holding_the_key_pairs_deletion() -> None:
    """Nova reads a keypair only when it boots a server: a KeyPair does not wait for the
    VMs naming it, but the fixtures and the bench still delete VMs first."""
    assert referencing("VirtualMachine")["KeyPair"] == "keyName"
    assert goes_first("KeyPair") == []
    assert [r.field for r in readers_of("ConfigMap") if r.referrer == "KeyPair"] == [
        "publicKeyFrom.configMapRef"
    ]


def test_resolve_a_name_to_the_object_of_that_name_when_there_is_one() -> None:
    store = MemoryStore()
    assert resolve(store, "ns", "KeyPair", None, "keyName") == Resolved(None)
    assert resolve(store, "ns", "KeyPair", "deploy", "keyName") == Resolved("deploy")
    body = make_body(KEY_PAIR, "deploy", {}, namespace="ns")
    store.put("KeyPair", body)
    waiting = resolve(store, "ns", "KeyPair", "deploy", "keyName")
    assert waiting == Resolved(None, "KeyPair 'deploy' is not Ready yet")
    body["status"] = {"keyName": "ns-deploy", "conditions": [{"type": "Ready", "status": "True"}]}
    assert resolve(store, "ns", "KeyPair", "deploy", "keyName") == Resolved("ns-deploy")
    assert resolve(store, "other", "KeyPair", "deploy", "keyName") == Resolved("deploy")


# -- the table is complete ---------------------------------------------------------------------

#: The types of a field that names another object of the namespace.
REFERENCE_TYPES = (ObjectRef, ConfigMapKeyRef, SecretKeyRef)
KIND_NAMES = "|".join(info.kind for info in KINDS)
KINDS_NAMED = re.compile(rf"\b({KIND_NAMES})s? objects?\b")


def _inner(annotation: object) -> tuple[object, bool]:
    """The type a field holds (through Optional and a list) and whether it is a list."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _inner(args[0]) if len(args) == 1 else (annotation, False)
    if typing.get_origin(annotation) is list:
        return _inner(typing.get_args(annotation)[0])[0], True
    return annotation, False


def spec_fields(model: type[BaseModel], prefix: str = "") -> list[tuple[str, object, str]]:
    """(path as REFERENCES writes it, type, description) of every field, nested ones too."""
    found = []
    for name, field in model.model_fields.items():
        alias = field.alias or name
        kind, is_list = _inner(field.annotation)
        path = f"{prefix}{alias}{'[]' if is_list else ''}"
        found.append((path, kind, field.description or ""))
        if isinstance(kind, type) and issubclass(kind, BaseModel) and kind not in REFERENCE_TYPES:
            found += spec_fields(kind, f"{path}.")
    return found


def undeclared(refs: tuple[Reference, ...] = REFERENCES) -> list[str]:
    """Fields that name another object but are missing from REFERENCES: by their type (a
    ``{name}`` reference, a ConfigMap or Secret key), their name (``…Ref``) or what their
    description says they name (``a Network object``). A group's template is its members'
    spec (the VirtualMachine's references cover it), and a kind is not said to reference
    what it creates (a group's volume templates)."""
    declared = {(r.referrer, r.field) for r in refs}
    targets = {(r.referrer, r.field, r.target) for r in refs}
    missing = []
    for record in registry.RECORDS:
        kind = record.info.kind
        made = {info.kind for info in record.creates}
        for path, type_, description in spec_fields(record.info.spec_model):
            if path.split(".")[0] == "import":
                continue
            head, _, rest = path.partition(".")
            if head == "template" and any((m, rest) in declared for m in made):
                continue
            shaped = type_ in REFERENCE_TYPES or path.removesuffix("[]").endswith("Ref")
            if shaped and (kind, path) not in declared:
                missing.append(f"{kind}.{path}")
            for target in set(KINDS_NAMED.findall(description)) - made:
                if (kind, path, target) not in targets:
                    missing.append(f"{kind}.{path} → {target}")
    return missing


def test_every_field_naming_another_object_is_declared() -> None:
    assert undeclared() == [], "declare these in kumo/kinds/references.py"


def test_the_completeness_check_sees_a_forgotten_reference() -> None:
    forgotten = {("VirtualMachine", "ports[]"), ("Port", "network")}
    kept = tuple(r for r in REFERENCES if (r.referrer, r.field) not in forgotten)
    assert undeclared(kept) == [
        "VirtualMachine.ports[]",
        "VirtualMachine.ports[] → Port",
        "Port.network → Network",
    ]

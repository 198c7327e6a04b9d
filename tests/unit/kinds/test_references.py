"""Declared references name real spec fields of real kinds."""

from __future__ import annotations

import types
import typing

import pytest
from pydantic import BaseModel

from kumo.api.kinds import KEY_PAIR, KINDS
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

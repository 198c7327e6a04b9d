"""Declared references name real spec fields of real kinds."""

from __future__ import annotations

import types
import typing

import pytest
from pydantic import BaseModel

from kumo.api.kinds import KINDS
from kumo.kinds import ordering
from kumo.kinds.references import REFERENCES, Reference, referencing

SPECS = {info.kind: info.spec_model for info in KINDS}


def _models(annotation: object) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (through Optional, unions and lists)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType, list, tuple):
        return [m for arg in typing.get_args(annotation) for m in _models(arg)]
    return []


def has_field(model: type[BaseModel], path: str) -> bool:
    """True when the camelCase ``path`` (``[]`` marks a list) exists in ``model``."""
    head, _, rest = path.partition(".")
    is_list = head.endswith("[]")
    name = head.removesuffix("[]")
    field = next((f for f in model.model_fields.values() if f.alias == name), None)
    if field is None:
        return False
    if is_list != (typing.get_origin(field.annotation) is list):
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


def test_dns_deletion_waits_derive_from_the_references() -> None:
    assert ordering.DNS_REF_FIELD == {
        "LoadBalancer": "loadBalancerRef",
        "VirtualMachine": "virtualMachineRef",
        "VirtualMachineGroup": "virtualMachineGroupRef",
    }
    assert referencing("DNSRecord") == ordering.DNS_REF_FIELD

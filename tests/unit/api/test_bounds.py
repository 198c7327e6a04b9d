"""Every list, string and map of every kind's spec is bounded in the CRDs.

Bounds are what let the API server estimate the cost of a CEL rule (an unbounded list
or string makes it assume the whole request size), and what keeps one object from
filling etcd or Kumo's memory. No exception list: a new field without a bound fails
here. ``status`` is Kumo's own writing and is not walked."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest
import yaml
from pydantic import Field

from kumo.api.common import CIDR_MAX, CLOUD_NAME_MAX, GROUPS, KUBE_NAME_MAX, KumoModel
from kumo.api.crd import crd_documents, structural_schema
from kumo.api.dnsrecord import MAX_VALUES, DNSRecordSpec
from kumo.api.kinds import KINDS, TEMPLATES
from kumo.api.loadbalancer import MAX_MONITORS, MAX_PORTS, LoadBalancerSpec
from kumo.api.share import MAX_ACCESS, ShareSpec
from kumo.api.virtualmachine import MAX_NETWORKS, MAX_SECURITY_GROUPS, VirtualMachineSpec
from kumo.api.virtualmachinegroup import MAX_ZONES, VirtualMachineGroupSpec

ROOT = Path(__file__).resolve().parents[3]
VM = {"image": "centos79", "flavor": "n3-1vcpu-2gb"}


def port(number: int) -> dict[str, Any]:
    return {
        "port": number,
        "protocol": "http",
        "realServers": {"protocol": "http", "port": 80, "virtualMachineGroupRef": "g"},
    }


def unbounded(node: dict[str, Any], path: str) -> Iterator[str]:
    """The paths under ``node`` of arrays without maxItems, strings without maxLength
    (an enum or a format bounds one too) and maps without maxProperties."""
    kind = node.get("type")
    if kind == "array":
        if "maxItems" not in node:
            yield f"{path}: array without maxItems"
        yield from unbounded(node["items"], f"{path}[]")
    elif kind == "string":
        if not {"maxLength", "enum", "format"} & node.keys():
            yield f"{path}: string without maxLength"
    elif kind == "object":
        for name, sub in node.get("properties", {}).items():
            yield from unbounded(sub, f"{path}.{name}")
        values = node.get("additionalProperties")
        if isinstance(values, dict):
            if "maxProperties" not in node:
                yield f"{path}: map without maxProperties"
            yield from unbounded(values, f"{path}{{}}")


def spec_schemas() -> dict[str, dict[str, Any]]:
    return {
        doc["spec"]["names"]["kind"]: doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"][
            "properties"
        ]["spec"]
        for group in GROUPS
        for doc in crd_documents(group)
    }


@pytest.mark.parametrize("kind", [k.kind for k in (*KINDS, *TEMPLATES)])
def test_every_list_string_and_map_of_the_spec_is_bounded(kind: str) -> None:
    assert list(unbounded(spec_schemas()[kind], f"{kind}.spec")) == []


class _Loose(KumoModel):
    names: list[str] = Field(default_factory=list)
    """Unbounded list of unbounded strings."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Unbounded map."""
    mode: str = Field(default="a", pattern="^a$")
    """A pattern alone bounds nothing."""


def test_the_walk_finds_what_is_unbounded() -> None:
    """The walk above would fail a field like these (it cannot pass by finding nothing)."""
    assert sorted(unbounded(structural_schema(_Loose), "x")) == [
        "x.labels: map without maxProperties",
        "x.labels{}: string without maxLength",
        "x.mode: string without maxLength",
        "x.names: array without maxItems",
        "x.names[]: string without maxLength",
    ]


def test_the_bounds_are_the_documented_ones() -> None:
    schemas = spec_schemas()
    lb = schemas["LoadBalancer"]["properties"]["ports"]
    assert lb["maxItems"] == MAX_PORTS == 64
    assert lb["items"]["properties"]["monitors"]["maxItems"] == MAX_MONITORS
    real = lb["items"]["properties"]["realServers"]["properties"]
    assert real["virtualMachineGroupRef"]["maxLength"] == KUBE_NAME_MAX == 253
    dns = schemas["DNSRecord"]["properties"]
    assert dns["values"]["maxItems"] == MAX_VALUES == 100
    assert dns["zone"]["maxLength"] == CLOUD_NAME_MAX == 255
    share = schemas["Share"]["properties"]["access"]
    assert share["maxItems"] == MAX_ACCESS
    assert share["items"]["properties"]["cidr"]["maxLength"] == CIDR_MAX
    vm = schemas["VirtualMachine"]["properties"]
    assert vm["networks"]["maxItems"] == MAX_NETWORKS
    assert vm["securityGroups"]["maxItems"] == MAX_SECURITY_GROUPS
    assert vm["securityGroups"]["items"]["maxLength"] == CLOUD_NAME_MAX
    ref = vm["initScript"]["properties"]["secretRef"]["properties"]
    assert ref["name"]["maxLength"] == ref["key"]["maxLength"] == KUBE_NAME_MAX
    vmg = schemas["VirtualMachineGroup"]["properties"]
    assert vmg["availabilityZones"]["maxItems"] == MAX_ZONES
    assert vmg["import"]["properties"]["members"]["items"]["properties"]["id"]["maxLength"] == 255


@pytest.mark.parametrize(
    ("model", "at_bound", "past_bound"),
    [
        (
            LoadBalancerSpec,
            {"ports": [port(p) for p in range(1, MAX_PORTS + 1)]},
            {"ports": [port(p) for p in range(1, MAX_PORTS + 2)]},
        ),
        (
            LoadBalancerSpec,
            {"ports": [{**port(80), "monitors": [{"protocol": "tcp", "port": 80}] * MAX_MONITORS}]},
            {"ports": [{**port(80), "monitors": [{"protocol": "tcp", "port": 80}] * 9}]},
        ),
        (
            DNSRecordSpec,
            {"zone": "z.", "name": "a", "values": ["10.0.0.1"] * MAX_VALUES},
            {"zone": "z.", "name": "a", "values": ["10.0.0.1"] * (MAX_VALUES + 1)},
        ),
        (
            DNSRecordSpec,
            {"zone": "z.", "name": "a", "virtualMachineRef": "v" * KUBE_NAME_MAX},
            {"zone": "z.", "name": "a", "virtualMachineRef": "v" * (KUBE_NAME_MAX + 1)},
        ),
        (
            ShareSpec,
            {"size": 1, "access": [{"cidr": "10.0.0.0/24"}] * MAX_ACCESS},
            {"size": 1, "access": [{"cidr": "10.0.0.0/24"}] * (MAX_ACCESS + 1)},
        ),
        (
            VirtualMachineSpec,
            {**VM, "networks": ["n" * CLOUD_NAME_MAX] * MAX_NETWORKS},
            {**VM, "networks": ["n"] * (MAX_NETWORKS + 1)},
        ),
        (
            VirtualMachineSpec,
            {**VM, "securityGroups": ["s"] * MAX_SECURITY_GROUPS},
            {**VM, "securityGroups": ["s" * (CLOUD_NAME_MAX + 1)]},
        ),
        (
            VirtualMachineGroupSpec,
            {"template": VM, "availabilityZones": ["az"] * MAX_ZONES},
            {"template": VM, "availabilityZones": ["az"] * (MAX_ZONES + 1)},
        ),
    ],
)
def test_pydantic_holds_the_same_bounds(
    model: type[pydantic.BaseModel], at_bound: dict[str, Any], past_bound: dict[str, Any]
) -> None:
    """The controllers parse with the models: an object stored before a bound existed
    is refused there (InvalidSpec), as admission refuses it now."""
    model.model_validate(at_bound)
    with pytest.raises(pydantic.ValidationError):
        model.model_validate(past_bound)


def exceeded(value: object, schema: dict[str, Any], path: str) -> Iterator[str]:
    """Where ``value`` is past a bound of ``schema``."""
    if isinstance(value, dict):
        if len(value) > schema.get("maxProperties", len(value)):
            yield f"{path}: {len(value)} entries"
        for key, sub in value.items():
            node = schema.get("properties", {}).get(key) or schema.get("additionalProperties")
            if isinstance(node, dict):
                yield from exceeded(sub, node, f"{path}.{key}")
    elif isinstance(value, list):
        if len(value) > schema.get("maxItems", len(value)):
            yield f"{path}: {len(value)} items"
        for i, sub in enumerate(value):
            yield from exceeded(sub, schema["items"], f"{path}[{i}]")
    elif isinstance(value, str) and len(value) > schema.get("maxLength", len(value)):
        yield f"{path}: {len(value)} characters"


def test_the_examples_fit_the_bounds() -> None:
    schemas = spec_schemas()
    by_kind = {k.kind: k for k in KINDS}
    paths = sorted((ROOT / "examples").rglob("*.yaml"))
    assert paths
    for path in paths:
        for manifest in yaml.safe_load_all(path.read_text()):
            if manifest["apiVersion"].split("/")[0] not in GROUPS:
                continue  # Cluster API's own objects (examples/capi)
            kind = manifest["kind"]
            assert list(exceeded(manifest["spec"], schemas[kind], f"{path.name}:spec")) == []
            by_kind[kind].spec_model.model_validate(manifest["spec"])

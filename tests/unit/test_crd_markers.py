"""Every generated CRD schema carries only the list and map markers the API server
accepts.

The API server refuses a whole CRD for one misplaced marker, and nothing but a live API
server said so: two stops ago ``atomic_list`` on a list of strings put
``x-kubernetes-map-type`` on string items, and the lab refused the CRD at the start of
the integration run. These are the API server's own rules for the markers (read from
k8s.io/apiextensions-apiserver v0.37.2, ``validation.go``), checked on every node of
every schema Kumo generates:

* ``x-kubernetes-map-type`` only on ``type: object``, and only ``atomic`` or ``granular``;
* ``x-kubernetes-list-type`` only on ``type: array``, one of ``atomic``, ``set``, ``map``;
* ``set``: items scalar, or an atomic object, or an atomic list;
* ``map``: ``x-kubernetes-list-map-keys`` not empty, items an object whose properties
  include each key, scalar, and required or defaulted; the keys without repeats;
* ``x-kubernetes-list-map-keys`` only with ``map``;
* ``uniqueItems: true`` is refused (quadratic to check);
* a CEL rule using ``oldSelf`` below a list that is not ``map`` (its items cannot be
  matched old to new).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import Field

from kumo.api.common import KumoModel, atomic_list
from kumo.api.crd import crd_documents, structural_schema

Schema = dict[str, Any]
SCALARS = ("string", "integer", "number", "boolean")


def nodes(
    schema: Schema, path: str = "", correlated: bool = True
) -> Iterator[tuple[str, Schema, bool]]:
    """(path, node, whether old and new values can be matched there) of every node."""
    yield path, schema, correlated
    for name, sub in (schema.get("properties") or {}).items():
        yield from nodes(sub, f"{path}.{name}", correlated)
    if isinstance(schema.get("additionalProperties"), dict):
        yield from nodes(schema["additionalProperties"], f"{path}.*", correlated)
    if isinstance(schema.get("items"), dict):
        keyed = schema.get("x-kubernetes-list-type") == "map"
        yield from nodes(schema["items"], f"{path}[]", correlated and keyed)


def refusals(schema: Schema) -> list[str]:
    """What the API server would refuse in ``schema``, one line each."""
    found = []
    for path, node, correlated in nodes(schema):
        kind = node.get("type")
        map_type = node.get("x-kubernetes-map-type")
        list_type = node.get("x-kubernetes-list-type")
        keys = node.get("x-kubernetes-list-map-keys") or []
        items = node.get("items") if isinstance(node.get("items"), dict) else {}
        if map_type is not None and kind != "object":
            found.append(f"{path}: x-kubernetes-map-type on type {kind!r}, not object")
        if map_type not in (None, "atomic", "granular"):
            found.append(f"{path}: x-kubernetes-map-type {map_type!r}")
        if list_type is not None and kind != "array":
            found.append(f"{path}: x-kubernetes-list-type on type {kind!r}, not array")
        if list_type not in (None, "atomic", "set", "map"):
            found.append(f"{path}: x-kubernetes-list-type {list_type!r}")
        if list_type == "set":
            if items.get("type") == "object" and items.get("x-kubernetes-map-type") != "atomic":
                found.append(f"{path}: a set of objects that are not atomic")
            if items.get("type") == "array" and items.get("x-kubernetes-list-type", "atomic") != (
                "atomic"
            ):
                found.append(f"{path}: a set of lists that are not atomic")
        if keys and list_type != "map":
            found.append(f"{path}: x-kubernetes-list-map-keys without list-type map")
        if list_type == "map":
            properties = items.get("properties") or {}
            if not keys:
                found.append(f"{path}: list-type map without x-kubernetes-list-map-keys")
            if items.get("type") != "object":
                found.append(f"{path}: list-type map of {items.get('type')!r} items")
            if len(set(keys)) != len(keys):
                found.append(f"{path}: x-kubernetes-list-map-keys repeat")
            for key in keys:
                prop = properties.get(key)
                if prop is None:
                    found.append(f"{path}: map key {key!r} is no item property")
                    continue
                if prop.get("type") not in SCALARS:
                    found.append(f"{path}: map key {key!r} is of type {prop.get('type')!r}")
                if key not in (items.get("required") or []) and "default" not in prop:
                    found.append(f"{path}: map key {key!r} neither required nor defaulted")
        if node.get("uniqueItems"):
            found.append(f"{path}: uniqueItems")
        if not correlated:
            for rule in node.get("x-kubernetes-validations") or []:
                if "oldSelf" in rule.get("rule", ""):
                    found.append(f"{path}: oldSelf below a list that is not list-type map")
    return found


DOCUMENTS = crd_documents()


@pytest.mark.parametrize("crd", DOCUMENTS, ids=lambda d: d["spec"]["names"]["kind"])
def test_every_generated_schema_has_only_markers_the_api_server_accepts(crd: Schema) -> None:
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert refusals(schema) == []


def test_the_generated_schemas_use_the_markers_at_all() -> None:
    """The walk reaches them: atomic lists and a map list keyed by port are generated."""
    found = {
        (node.get("x-kubernetes-list-type"), node.get("x-kubernetes-map-type"))
        for crd in DOCUMENTS
        for _, node, _ in nodes(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    }
    assert {("atomic", None), ("map", None), (None, "atomic")} <= found


class Strings(KumoModel):
    """What broke the CRD two stops ago: ``atomic_list`` on a list of strings."""

    names: list[str] = Field(default_factory=list, json_schema_extra=atomic_list)
    """Names."""


class Keyed(KumoModel):
    """An item with an optional key."""

    port: int | None = None
    """Port."""


class Lists(KumoModel):
    """Lists the API server refuses."""

    keyed: list[Keyed] = Field(
        default_factory=list,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"]},
    )
    """Keyed by an optional property."""
    objects: list[Keyed] = Field(
        default_factory=list, json_schema_extra={"x-kubernetes-list-type": "set"}
    )
    """A set of granular objects."""
    unkeyed: list[str] = Field(
        default_factory=list, json_schema_extra={"x-kubernetes-list-type": "map"}
    )
    """A map list of strings, without keys."""


def test_the_check_catches_what_the_api_server_refused() -> None:
    assert refusals(structural_schema(Strings)) == [
        ".names[]: x-kubernetes-map-type on type 'string', not object"
    ]
    assert refusals(structural_schema(Lists)) == [
        ".keyed: map key 'port' neither required nor defaulted",
        ".objects: a set of objects that are not atomic",
        ".unkeyed: list-type map without x-kubernetes-list-map-keys",
        ".unkeyed: list-type map of 'string' items",
    ]
    rule = {"rule": "self == oldSelf", "message": "fixed"}
    inside = {"type": "array", "items": {"type": "object", "x-kubernetes-validations": [rule]}}
    assert refusals(inside) == ["[]: oldSelf below a list that is not list-type map"]
    assert refusals({"type": "array", "uniqueItems": True, "items": {"type": "string"}}) == [
        ": uniqueItems"
    ]

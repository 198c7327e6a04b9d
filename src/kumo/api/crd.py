"""Generate CustomResourceDefinitions from the pydantic API models.

Pure functions, no I/O: ``kumo crds`` prints what :func:`crd_documents` returns, and
a unit test keeps ``deploy/base/crds/`` in step with it. The conversion turns pydantic's
JSON Schema into a *structural* OpenAPI v3 schema as apiextensions/v1 requires:
references inlined, ``Optional`` unwrapped, titles dropped, descriptions kept for
``kubectl explain``.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

from kumo.api.capi import CONTRACT_LABEL, INFRA_GROUP
from kumo.api.common import GROUP, object_rules
from kumo.api.kinds import KindInfo, of_group

Schema = dict[str, Any]

# Keywords a structural schema may carry through unchanged.
_KEPT = {
    "type",
    "format",
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "pattern",
    "uniqueItems",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
    "x-kubernetes-int-or-string",
}


def structural_schema(model: type[BaseModel]) -> Schema:
    """Return the structural OpenAPI v3 schema of ``model`` (by alias, camelCase)."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs = raw.pop("$defs", {})
    return _convert(raw, defs)


def _convert(node: Schema, defs: dict[str, Schema]) -> Schema:
    node = _unwrap(node, defs)
    out: Schema = {k: copy.deepcopy(v) for k, v in node.items() if k in _KEPT}
    if "description" in node:
        out["description"] = " ".join(str(node["description"]).split())
    if "const" in node:
        out["enum"] = [node["const"]]
    if "exclusiveMinimum" in node:
        out["minimum"], out["exclusiveMinimum"] = node["exclusiveMinimum"], True
    if "exclusiveMaximum" in node:
        out["maximum"], out["exclusiveMaximum"] = node["exclusiveMaximum"], True
    if node.get("default") is not None:
        out["default"] = copy.deepcopy(node["default"])
    if "enum" in out and "type" not in out:
        out["type"] = _json_type(out["enum"][0])
    if "properties" in node:
        out["type"] = "object"
        out["properties"] = {k: _convert(v, defs) for k, v in node["properties"].items()}
        if node.get("required"):
            out["required"] = list(node["required"])
    if "items" in node:
        out["items"] = _convert(node["items"], defs)
    if isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = _convert(node["additionalProperties"], defs)
    if "oneOf" in node:
        # Only value validations (required lists) are allowed inside oneOf.
        out["oneOf"] = [{"required": list(branch["required"])} for branch in node["oneOf"]]
    if "type" not in out and not out.get("x-kubernetes-int-or-string"):
        raise ValueError(f"cannot derive a structural type for schema {node!r}")
    return out


def _unwrap(node: Schema, defs: dict[str, Schema]) -> Schema:
    """Inline ``$ref``/``allOf`` and drop the ``null`` branch of ``Optional``."""
    site_description = node.get("description")
    site_default = node.get("default")
    if "anyOf" in node:
        branches = [b for b in node["anyOf"] if b.get("type") != "null"]
        if sorted(b.get("type", "") for b in branches) == ["integer", "string"]:
            node = {k: v for k, v in node.items() if k != "anyOf"}
            node.update(_int_or_string(branches))
        elif len(branches) != 1:
            raise ValueError(f"unions are not structural: {node!r}")
        else:
            node = {**{k: v for k, v in node.items() if k != "anyOf"}, **branches[0]}
    if "allOf" in node and len(node["allOf"]) == 1:
        node = {**{k: v for k, v in node.items() if k != "allOf"}, **node["allOf"][0]}
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        node = _unwrap(node, defs)
    if site_description is not None:
        node["description"] = site_description
    if site_default is not None:
        node["default"] = site_default
    return node


def _int_or_string(branches: list[Schema]) -> Schema:
    """``int | str`` (a count or a percentage, like a Deployment's maxSurge): an
    int-or-string field. A structural schema cannot type its branches, so their bounds
    and pattern become one CEL rule on the field (the API server names the field)."""
    number = next(b for b in branches if b["type"] == "integer")
    text = next(b for b in branches if b["type"] == "string")
    unknown = (set(number) - {"type", "minimum", "maximum"}) | (set(text) - {"type", "pattern"})
    if unknown:
        raise ValueError(f"int-or-string branches may carry only bounds and a pattern: {unknown}")
    int_checks = [f"self >= {number['minimum']}"] if "minimum" in number else []
    int_checks += [f"self <= {number['maximum']}"] if "maximum" in number else []
    out: Schema = {"x-kubernetes-int-or-string": True}
    if int_checks or "pattern" in text:
        pattern = text.get("pattern")
        on_int = " && ".join(int_checks) or "true"
        if pattern and "'" in pattern:
            raise ValueError(f"a pattern with a quote does not fit a CEL raw string: {pattern}")
        on_str = f"self.matches(r'{pattern}')" if pattern else "true"
        low, high = number.get("minimum"), number.get("maximum")
        span = f" from {low}" if low is not None else ""
        span += f" to {high}" if high is not None else ""
        like = f" matching {pattern}" if pattern else ""
        out["x-kubernetes-validations"] = [
            {
                "rule": f"type(self) == int ? {on_int} : {on_str}",
                "message": f"must be an integer{span} or a string{like}",
            }
        ]
    return out


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"


def _object_validations(kind: KindInfo) -> Schema:
    """CEL rules on the whole object: those that must see status besides spec."""
    rules = object_rules(kind.spec_model)
    return {"x-kubernetes-validations": [r._asdict() for r in rules]} if rules else {}


def crd_document(kind: KindInfo) -> Schema:
    """Return the CustomResourceDefinition of one kind."""
    properties: Schema = {
        "apiVersion": {"type": "string", "description": kind.api_version},
        "kind": {"type": "string", "description": kind.kind},
        "metadata": {"type": "object"},
        "spec": structural_schema(kind.spec_model),
    }
    if kind.status_model is not None:
        properties["status"] = structural_schema(kind.status_model)
    version: Schema = {
        "name": kind.version,
        "served": True,
        "storage": True,
        "subresources": {"status": {}} if kind.status_model is not None else {},
        "additionalPrinterColumns": [
            {
                "name": c.name,
                "type": c.type,
                "jsonPath": c.json_path,
                **({"description": c.description} if c.description else {}),
                **({"priority": c.priority} if c.priority else {}),
            }
            for c in kind.printer_columns
        ],
        "schema": {
            "openAPIV3Schema": {
                "type": "object",
                "description": kind.description,
                "required": ["spec"],
                "properties": properties,
                **_object_validations(kind),
            }
        },
    }
    if not version["subresources"]:
        del version["subresources"]
    if kind.scalable:
        version["subresources"]["scale"] = {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        }
    metadata: Schema = {"name": kind.crd_name}
    if kind.group == INFRA_GROUP:
        # Cluster API maps its contract to the provider's versions by this label (its
        # book: "All resources: version").
        metadata["labels"] = {CONTRACT_LABEL: kind.version}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": {
            "group": kind.group,
            "scope": "Namespaced",
            "names": {
                "kind": kind.kind,
                "listKind": f"{kind.kind}List",
                "plural": kind.plural,
                "singular": kind.singular,
                "shortNames": list(kind.short_names),
                "categories": list(kind.categories),
            },
            "versions": [version],
        },
    }


def crd_documents(group: str = GROUP) -> list[Schema]:
    """Return the CRDs of every kind of ``group``, in a stable order (each group is one
    file of deploy/base/crds/)."""
    return [crd_document(kind) for kind in of_group(group)]

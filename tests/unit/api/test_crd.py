"""The pydantic → structural schema conversion, and the committed CRDs being current."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
import yaml
from pydantic import Field

from kumo.api.common import GROUPS, INFRA_GROUP, KumoModel, exactly_one_of
from kumo.api.crd import crd_documents, structural_schema
from kumo.api.kinds import KINDS, TEMPLATES

ROOT = Path(__file__).resolve().parents[3]


class Inner(KumoModel):
    """An inner thing."""

    some_value: int = Field(default=3, ge=1, le=9)
    """A bounded number."""


class Outer(KumoModel):
    """An outer thing."""

    model_config = {"json_schema_extra": exactly_one_of("left", "right")}

    name: str = Field(min_length=1)
    """The name."""
    maybe: str | None = None
    """Optional text."""
    inner: Inner
    """Required nested model."""
    optional_inner: Inner | None = None
    """Optional nested model, described at the use site."""
    items: list[Inner] = Field(default_factory=list)
    """A list of models."""
    mode: Literal["a", "b"] = "a"
    """An enum with a default."""
    labels: dict[str, str] = Field(default_factory=dict)
    """A map."""
    left: str | None = None
    """One side."""
    right: str | None = None
    """The other side."""


@pytest.fixture(scope="module")
def schema() -> dict:
    return structural_schema(Outer)


def test_required_and_camel_case(schema: dict) -> None:
    assert schema["type"] == "object"
    assert schema["required"] == ["name", "inner"]
    assert "optionalInner" in schema["properties"]
    assert "optional_inner" not in schema["properties"]


def test_optional_is_unwrapped_without_null_default(schema: dict) -> None:
    maybe = schema["properties"]["maybe"]
    assert maybe == {"type": "string", "description": "Optional text."}


def test_nested_models_are_inlined_with_site_description(schema: dict) -> None:
    inner = schema["properties"]["inner"]
    assert inner["type"] == "object"
    assert inner["description"] == "Required nested model."
    assert inner["properties"]["someValue"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 9,
        "default": 3,
        "description": "A bounded number.",
    }
    assert schema["properties"]["optionalInner"]["properties"].keys() == {"someValue"}


def test_lists_of_models(schema: dict) -> None:
    items = schema["properties"]["items"]
    assert items["type"] == "array"
    assert items["items"]["type"] == "object"
    assert "default" not in items, "default_factory lists must not be defaulted by the server"


def test_enums_and_defaults(schema: dict) -> None:
    assert schema["properties"]["mode"] == {
        "type": "string",
        "enum": ["a", "b"],
        "default": "a",
        "description": "An enum with a default.",
    }


def test_maps_and_one_of(schema: dict) -> None:
    assert schema["properties"]["labels"]["additionalProperties"] == {"type": "string"}
    assert schema["oneOf"] == [{"required": ["left"]}, {"required": ["right"]}]


def _walk(node: object):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


@pytest.mark.parametrize("kind", (*KINDS, *TEMPLATES), ids=lambda k: k.kind)
def test_every_field_is_structural_and_described(kind) -> None:
    for model in (kind.spec_model, kind.status_model):
        if model is None:
            continue
        for node in _walk(structural_schema(model)):
            if "properties" in node:
                for name, prop in node["properties"].items():
                    assert prop.get("description"), f"{kind.kind}.{name} has no description"
                    typed = "type" in prop or prop.get("x-kubernetes-int-or-string")
                    assert typed, f"{kind.kind}.{name} has no type"
            assert "$ref" not in node and "anyOf" not in node and "title" not in node


def test_seed_fields_are_in_the_schemas() -> None:
    """Every field used by the seed 000 manifests exists in the generated CRDs."""
    by_kind = {doc["spec"]["names"]["kind"]: doc for g in GROUPS for doc in crd_documents(g)}
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        for manifest in yaml.safe_load_all(path.read_text()):
            root = by_kind[manifest["kind"]]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
            _assert_known(manifest["spec"], root["properties"]["spec"], f"{path.name}:spec")


def _assert_known(value: object, schema: dict, where: str) -> None:
    if isinstance(value, dict) and "properties" in schema:
        for key, sub in value.items():
            assert key in schema["properties"], f"{where}.{key} is not in the schema"
            _assert_known(sub, schema["properties"][key], f"{where}.{key}")
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            _assert_known(sub, schema["items"], f"{where}[{i}]")


def test_scale_subresource_only_on_groups() -> None:
    scales = {
        doc["spec"]["names"]["kind"]: doc["spec"]["versions"][0]["subresources"].get("scale")
        for doc in crd_documents()
    }
    assert scales.pop("VirtualMachineGroup")["specReplicasPath"] == ".spec.replicas"
    assert not any(scales.values())


@pytest.mark.parametrize("group", GROUPS)
def test_committed_crds_are_current(group: str) -> None:
    committed = list(yaml.safe_load_all((ROOT / f"deploy/base/crds/{group}.yaml").read_text()))
    assert committed == crd_documents(group), "deploy/crds is stale: run `make crds`"


def test_the_cluster_api_crds_carry_the_contract_label_and_category() -> None:
    """CAPI maps its contract v1beta2 to the CRD's versions by a label (its book, "All
    resources: version"); kumo.dev's CRDs carry none."""
    for doc in crd_documents(INFRA_GROUP):
        assert doc["metadata"]["labels"] == {"cluster.x-k8s.io/v1beta2": "v1alpha1"}
        assert "cluster-api" in doc["spec"]["names"]["categories"]
        assert doc["spec"]["scope"] == "Namespaced"
    assert all("labels" not in doc["metadata"] for doc in crd_documents())


def test_a_template_has_no_status() -> None:
    """A kind without a status model (a CAPI template) has neither a status schema nor
    a status subresource (not an empty ``properties: {}``)."""
    (template,) = [
        d
        for d in crd_documents(INFRA_GROUP)
        if d["spec"]["names"]["kind"] == ("KumoMachineTemplate")
    ]
    version = template["spec"]["versions"][0]
    assert "subresources" not in version
    assert set(version["schema"]["openAPIV3Schema"]["properties"]) == {
        "apiVersion",
        "kind",
        "metadata",
        "spec",
    }

"""CEL rules declared on the API models reach the generated CRDs where the API server
will check them (the real server compiles and applies them: test_admission.py)."""

from __future__ import annotations

from typing import Any

from kumo.api.common import KumoModel, Rule, cel_name, fixed_once_created, object_rules
from kumo.api.crd import crd_document
from kumo.api.dnsrecord import DNSRecordSpec
from kumo.api.kinds import KINDS
from kumo.api.loadbalancer import LoadBalancerSpec
from kumo.api.share import ShareSpec


def kind(name: str) -> Any:
    return next(k for k in KINDS if k.kind == name)


def root(name: str) -> dict[str, Any]:
    return crd_document(kind(name))["spec"]["versions"][0]["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]


def messages(schema: dict[str, Any]) -> list[str]:
    return [v["message"] for v in schema.get("x-kubernetes-validations", [])]


def test_fixed_fields_are_object_rules_that_name_the_field() -> None:
    lb = messages(root("LoadBalancer"))
    for field in (
        "spec.zone",
        "spec.vipType",
        "spec.vipNetwork",
        "spec.vipAddress",
        "spec.serviceType",
        "spec.import",
    ):
        assert any(m.startswith(field) for m in lb), (field, lb)
    assert [m.split(" ")[0] for m in messages(root("DNSRecord"))] == [
        "spec.import",
        "spec.zone",
        "spec.type",
    ]
    share = messages(root("Share"))
    assert any(m.startswith("spec.size cannot shrink") for m in share)
    assert not any(m.startswith("spec.import") for m in share)  # a Share cannot import


def test_a_fixed_field_may_change_until_the_resource_exists() -> None:
    rule = fixed_once_created("zone", "spec.zone is immutable")
    assert rule.rule.startswith("!has(oldSelf.status) || !has(oldSelf.status.id) || ")
    assert "has(self.spec.zone) == has(oldSelf.spec.zone)" in rule.rule


def test_cel_keywords_are_escaped() -> None:
    assert cel_name("import") == "__import__"
    assert cel_name("zone") == "zone"
    assert "self.spec.__import__" in object_rules(DNSRecordSpec)[0].rule


def test_object_rules_collect_from_the_bases_first_and_once() -> None:
    rules = object_rules(LoadBalancerSpec)
    assert rules[0].message.startswith("spec.import")
    assert len(rules) == len(set(rules)) == 6
    assert object_rules(ShareSpec)[-1].message.startswith("spec.size")


def test_model_rules_land_on_the_models_own_schema() -> None:
    class Inner(KumoModel):
        cel_rules = (Rule("self.a < self.b", "a must be below b"),)
        a: int
        b: int

    class Outer(KumoModel):
        inner: Inner

    schema = Outer.model_json_schema(by_alias=True)
    inner = schema["$defs"]["Inner"]
    assert inner["x-kubernetes-validations"] == [
        {"rule": "self.a < self.b", "message": "a must be below b"}
    ]
    assert "x-kubernetes-validations" not in schema


def test_lb_ports_are_a_list_keyed_by_port() -> None:
    ports = root("LoadBalancer")["properties"]["spec"]["properties"]["ports"]
    assert (ports["x-kubernetes-list-type"], ports["x-kubernetes-list-map-keys"]) == (
        "map",
        ["port"],
    )
    assert "port" in ports["items"]["required"]

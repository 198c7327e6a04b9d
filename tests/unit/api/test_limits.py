"""Input limits at admission: what the cloud would reject (or be hurt by) is refused by
the schema, and pydantic (the engine's InvalidSpec) agrees with it."""

from __future__ import annotations

import base64
from typing import Any

import pydantic
import pytest

from kumo.api import virtualmachine as vm_api
from kumo.api.common import MAX_DESCRIPTION, SecretKeyRef
from kumo.api.crd import crd_documents, structural_schema
from kumo.api.dnsrecord import DNS_DESCRIPTION_MAX, DNSRecordSpec
from kumo.api.loadbalancer import LoadBalancerSpec
from kumo.api.virtualmachine import (
    INIT_SCRIPT_MAX_BYTES,
    MAX_METADATA_ITEMS,
    NOVA_METADATA_QUOTA,
    USER_DATA_MAX_BASE64,
    VirtualMachineSpec,
)
from kumo.api.virtualmachinegroup import MAX_REPLICAS, VirtualMachineGroupSpec
from kumo.kinds.virtualmachine import plan

VM = {"image": "centos79", "flavor": "n3-1vcpu-2gb"}
PORT = {
    "port": 80,
    "protocol": "http",
    "realServers": {"protocol": "http", "port": 80, "virtualMachineGroupRef": "g"},
}


def spec_schema(kind: str) -> dict[str, Any]:
    by_kind = {d["spec"]["names"]["kind"]: d for d in crd_documents()}
    root = by_kind[kind]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return root["properties"]["spec"]  # type: ignore[no-any-return]


def test_the_init_script_limit_is_novas_user_data_limit() -> None:
    assert len(base64.b64encode(b"x" * INIT_SCRIPT_MAX_BYTES)) <= USER_DATA_MAX_BASE64
    assert len(base64.b64encode(b"x" * (INIT_SCRIPT_MAX_BYTES + 1))) > USER_DATA_MAX_BASE64
    assert INIT_SCRIPT_MAX_BYTES == 49_149


def test_kumo_metadata_keys_fit_in_novas_quota() -> None:
    spec = VirtualMachineSpec.model_validate(
        {**VM, "metadata": {f"k{i}": "v" for i in range(MAX_METADATA_ITEMS)}}
    )
    assert len(plan.desired_metadata(spec, "ns", "vm", "hash")) == NOVA_METADATA_QUOTA


def test_limits_are_in_the_crds() -> None:
    vm = spec_schema("VirtualMachine")["properties"]
    assert vm["initScript"]["properties"]["value"]["maxLength"] == INIT_SCRIPT_MAX_BYTES
    assert vm["metadata"]["maxProperties"] == MAX_METADATA_ITEMS
    assert vm["metadata"]["additionalProperties"]["maxLength"] == 255
    assert vm["description"]["maxLength"] == MAX_DESCRIPTION
    vmg = spec_schema("VirtualMachineGroup")["properties"]
    assert vmg["replicas"]["maximum"] == MAX_REPLICAS == 1000
    assert vmg["description"]["maxLength"] == MAX_DESCRIPTION
    assert vmg["template"]["properties"]["metadata"]["maxProperties"] == MAX_METADATA_ITEMS
    assert spec_schema("LoadBalancer")["properties"]["description"]["maxLength"] == 255
    # Designate's 160 and Neutron's 255, less a space and the longest marker word
    # (kumo-owner=<36-character UID>@<12-character cluster ID>).
    assert spec_schema("DNSRecord")["properties"]["description"]["maxLength"] == 160 - 61
    assert spec_schema("FloatingIP")["properties"]["description"]["maxLength"] == 255 - 61


@pytest.mark.parametrize(
    ("model", "spec"),
    [
        (VirtualMachineGroupSpec, {"replicas": MAX_REPLICAS + 1, "template": VM}),
        (VirtualMachineSpec, {**VM, "initScript": {"value": "x" * (INIT_SCRIPT_MAX_BYTES + 1)}}),
        (VirtualMachineSpec, {**VM, "metadata": {f"k{i}": "v" for i in range(127)}}),
        (VirtualMachineSpec, {**VM, "metadata": {"k" * 256: "v"}}),
        (VirtualMachineSpec, {**VM, "metadata": {"": "v"}}),
        (VirtualMachineSpec, {**VM, "metadata": {"k": "v" * 256}}),
        (VirtualMachineSpec, {**VM, "description": "d" * 256}),
        (VirtualMachineGroupSpec, {"template": VM, "description": "d" * 256}),
        (
            VirtualMachineGroupSpec,
            {"template": VM, "import": {"members": [{"id": f"s{i}"} for i in range(1001)]}},
        ),
        (VirtualMachineGroupSpec, {"template": VM, "import": {"members": [{"name": ""}]}}),
        (LoadBalancerSpec, {"ports": [PORT], "description": "d" * 256}),
        (
            DNSRecordSpec,
            {"zone": "z.", "name": "a", "values": ["1.2.3.4"], "description": "d" * 113},
        ),
    ],
)
def test_pydantic_rejects_what_admission_rejects(
    model: type[pydantic.BaseModel], spec: dict
) -> None:
    with pytest.raises(pydantic.ValidationError):
        model.model_validate(spec)


def test_limits_themselves_are_accepted() -> None:
    VirtualMachineGroupSpec.model_validate({"replicas": MAX_REPLICAS, "template": VM})
    VirtualMachineSpec.model_validate(
        {
            **VM,
            "initScript": {"value": "x" * INIT_SCRIPT_MAX_BYTES},
            "metadata": {f"{i:0>255}": "v" * 255 for i in range(MAX_METADATA_ITEMS)},
            "description": "d" * MAX_DESCRIPTION,
        }
    )
    DNSRecordSpec.model_validate(
        {"zone": "z.", "name": "a", "values": ["1.2.3.4"], "description": "d" * DNS_DESCRIPTION_MAX}
    )


def test_init_script_sources_are_exactly_one_of_three() -> None:
    schema = structural_schema(vm_api.InitScript)
    assert schema["oneOf"] == [
        {"required": ["value"]},
        {"required": ["configMapRef"]},
        {"required": ["secretRef"]},
    ]


def test_a_secret_ref_cannot_name_another_namespace() -> None:
    """The ref has a name and a key, nothing else: the Secret is always looked up in the
    object's own namespace, and a `namespace` given anyway is dropped (pruned by the API
    server, ignored by the model)."""
    assert set(SecretKeyRef.model_fields) == {"name", "key"}
    ref = spec_schema("VirtualMachine")["properties"]["initScript"]["properties"]["secretRef"]
    assert set(ref["properties"]) == {"name", "key"}
    parsed = SecretKeyRef.model_validate({"name": "s", "key": "k", "namespace": "other"})
    assert "namespace" not in parsed.model_dump()


def test_group_import_refs_are_at_most_max_replicas_at_admission_and_apply_server_side() -> None:
    """An atomic list: a `set` of objects fails every server-side apply of the group.
    Repeats are the controller's check (test_pydantic_names_the_repeated_import_ref)."""
    members = spec_schema("VirtualMachineGroup")["properties"]["import"]["properties"]["members"]
    assert members["x-kubernetes-list-type"] == "atomic"
    assert members["items"]["x-kubernetes-map-type"] == "atomic"
    assert members["maxItems"] == MAX_REPLICAS
    assert members["items"]["oneOf"] == [{"required": ["id"]}, {"required": ["name"]}]
    assert "uniqueItems" not in members


def test_pydantic_names_the_repeated_import_ref() -> None:
    refs = [{"name": "a"}, {"id": "a"}, {"name": "b"}, {"name": "a"}]
    with pytest.raises(pydantic.ValidationError) as raised:
        VirtualMachineGroupSpec.model_validate({"template": VM, "import": {"members": refs}})
    (error,) = raised.value.errors()
    assert error["loc"] == ("import", "members")
    assert "members[3] repeats members[0] (name=a)" in error["msg"]
    ok = [{"name": "a"}, {"id": "a"}]  # an ID and a name are different refs
    VirtualMachineGroupSpec.model_validate({"template": VM, "import": {"members": ok}})

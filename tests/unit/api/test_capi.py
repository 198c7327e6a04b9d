"""The Cluster API provider's contract (CAPI v1.14, contract v1beta2, read from its book:
developer/providers/contracts/infra-cluster.md and infra-machine.md): field names and
shapes CAPI reads, the CRDs' names, label and scope, and deploy/capi (RBAC aggregated
into CAPI's managers, the ClusterClass) with the example that uses it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kumo.api import capi
from kumo.api.crd import crd_documents
from kumo.api.kinds import KUMO_CLUSTER, KUMO_MACHINE, TEMPLATES, of_group

ROOT = Path(__file__).resolve().parents[3]
CAPI_DIR = ROOT / "deploy" / "capi"


def schema(kind: str) -> dict[str, Any]:
    (doc,) = [d for d in crd_documents(capi.INFRA_GROUP) if d["spec"]["names"]["kind"] == kind]
    return dict(doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"])


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


# -- the contract's fields -------------------------------------------------------------------


def test_infra_cluster_fields_are_spelled_as_capi_reads_them() -> None:
    spec = schema("KumoCluster")["spec"]["properties"]
    endpoint = spec["controlPlaneEndpoint"]["properties"]
    assert set(endpoint) == {"host", "port"}
    assert endpoint["port"]["type"] == "integer"
    assert {"allowedCIDRs", "floatingIP"} <= set(spec), "explicit aliases, not allowedCidrs"
    status = schema("KumoCluster")["status"]["properties"]
    assert status["initialization"]["properties"]["provisioned"]["type"] == "boolean"
    assert status["ready"]["type"] == "boolean", "v1beta1: status.ready"
    # v1beta2's failure domains are a list of {name, controlPlane, ...} (v1beta1's a map).
    domains = status["failureDomains"]
    assert domains["type"] == "array"
    assert {"name", "controlPlane"} <= set(domains["items"]["properties"])
    # v1beta1's terminal failures are top-level status fields.
    assert status["failureReason"]["type"] == status["failureMessage"]["type"] == "string"
    assert "conditions" in status


def test_infra_machine_fields_are_spelled_as_capi_reads_them() -> None:
    spec = schema("KumoMachine")["spec"]["properties"]
    assert "providerID" in spec and "providerId" not in spec
    assert spec["providerID"]["maxLength"] == 512
    status = schema("KumoMachine")["status"]["properties"]
    assert status["initialization"]["properties"]["provisioned"]["type"] == "boolean"
    address = status["addresses"]["items"]["properties"]
    assert set(address["type"]["enum"]) == {
        "Hostname",
        "ExternalIP",
        "InternalIP",
        "ExternalDNS",
        "InternalDNS",
    }
    assert status["failureDomain"]["type"] == "string"
    assert {"failureReason", "failureMessage", "ready", "conditions"} <= set(status)


def test_a_model_reads_and_writes_the_wire_names() -> None:
    machine = capi.KumoMachineSpec.model_validate(
        {"image": "i", "flavor": "f", "providerID": "openstack:///x"}
    )
    assert machine.provider_id == "openstack:///x"
    assert machine.model_dump(by_alias=True, exclude_none=True)["providerID"] == "openstack:///x"
    cluster = capi.KumoClusterSpec.model_validate(
        {"allowedCIDRs": ["10.0.0.0/8"], "floatingIP": True}
    )
    assert cluster.allowed_cidrs == ["10.0.0.0/8"] and cluster.floating_ip
    assert capi.KumoClusterSpec().allowed_cidrs == ["0.0.0.0/0"]


def test_the_templates_hold_the_kinds_specs() -> None:
    for template, kind in (
        ("KumoClusterTemplate", "KumoCluster"),
        ("KumoMachineTemplate", "KumoMachine"),
    ):
        held = schema(template)["spec"]["properties"]["template"]["properties"]
        assert held["spec"] == {**schema(kind)["spec"], "description": held["spec"]["description"]}
        assert set(held["metadata"]["properties"]) == {"labels", "annotations"}
        assert "status" not in schema(template)


# -- the CRDs ------------------------------------------------------------------------------------


def test_the_crds_are_named_as_capi_computes_them_and_labelled_with_the_contract() -> None:
    """CAPI finds a CRD by ``contract.CalculateCRDName(group, kind)`` (the kind's plural,
    lowercase, dot group) and reads ``cluster.x-k8s.io/<contract>`` on it."""
    docs = crd_documents(capi.INFRA_GROUP)
    assert [d["metadata"]["name"] for d in docs] == [
        f"{info.kind.lower()}s.{capi.INFRA_GROUP}" for info in of_group(capi.INFRA_GROUP)
    ]
    for doc in docs:
        assert doc["metadata"]["labels"] == {capi.CONTRACT_LABEL: capi.INFRA_VERSION}
        assert doc["spec"]["scope"] == "Namespaced"
        assert doc["spec"]["names"]["listKind"] == f"{doc['spec']['names']['kind']}List"
    kinds = {d["spec"]["names"]["kind"] for d in docs}
    assert kinds == {KUMO_CLUSTER.kind, KUMO_MACHINE.kind, *(t.kind for t in TEMPLATES)}
    assert CAPI_DIR.joinpath("..", "base", "crds", f"{capi.INFRA_GROUP}.yaml").exists()


def test_the_finalizers_are_of_the_provider_group() -> None:
    assert KUMO_CLUSTER.finalizer == "kumocluster.infrastructure.kumo.dev/finalizer"
    assert KUMO_MACHINE.api_version == "infrastructure.kumo.dev/v1alpha1"


# -- deploy/capi and the example -----------------------------------------------------------------


def test_capis_managers_get_kumos_kinds_through_both_aggregation_labels() -> None:
    """The core manager aggregates ``cluster.x-k8s.io/aggregate-to-manager``, the kubeadm
    control plane's ``kubeadm.controlplane.cluster.x-k8s.io/aggregate-to-manager`` (it
    makes the control plane's KumoMachines): with only the first, no KumoMachine was ever
    made on the lab."""
    (role,) = [d for d in documents(CAPI_DIR / "rbac.yaml") if d["kind"] == "ClusterRole"]
    assert role["metadata"]["labels"] == {
        "cluster.x-k8s.io/aggregate-to-manager": "true",
        "kubeadm.controlplane.cluster.x-k8s.io/aggregate-to-manager": "true",
    }
    (rule,) = role["rules"]
    assert rule["apiGroups"] == [capi.INFRA_GROUP]
    plurals = {i.plural for i in of_group(capi.INFRA_GROUP)}
    assert plurals <= set(rule["resources"])
    assert set(rule["verbs"]) == {"create", "delete", "get", "list", "patch", "update", "watch"}


def test_kumo_reads_bootstrap_secrets_in_every_namespace_of_a_management_cluster() -> None:
    (binding,) = [d for d in documents(CAPI_DIR / "rbac.yaml") if d["kind"] == "ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == "kumo-boot-secrets"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "kumo", "namespace": "kumo-system"}
    ]
    assert documents(CAPI_DIR / "kustomization.yaml")[0]["resources"] == [
        "rbac.yaml",
        "clusterclass.yaml",
    ]


def clusterclass() -> tuple[dict[str, Any], dict[tuple[str, str, str], dict[str, Any]]]:
    docs = documents(CAPI_DIR / "clusterclass.yaml")
    (cc,) = [d for d in docs if d["kind"] == "ClusterClass"]
    by_ref = {(d["apiVersion"], d["kind"], d["metadata"]["name"]): d for d in docs}
    return cc, by_ref


def refs(node: Any) -> list[dict[str, str]]:
    if isinstance(node, dict):
        found = [node["templateRef"]] if "templateRef" in node else []
        return found + [r for k, v in node.items() if k != "templateRef" for r in refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in refs(v)]
    return []


def test_the_clusterclass_names_templates_it_ships_and_kumos_parse() -> None:
    cc, by_ref = clusterclass()
    assert (
        cc["apiVersion"] == "cluster.x-k8s.io/v1beta2" and cc["metadata"]["name"] == "kumo-kubeadm"
    )
    named = refs(cc["spec"])
    assert len(named) == 5
    for ref in named:
        template = by_ref[(ref["apiVersion"], ref["kind"], ref["name"])]
        if ref["kind"] == "KumoClusterTemplate":
            capi.KumoClusterTemplateSpec.model_validate(template["spec"])
        elif ref["kind"] == "KumoMachineTemplate":
            capi.KumoMachineTemplateSpec.model_validate(template["spec"])


def test_the_clusterclass_remediates_lost_servers_and_unready_nodes() -> None:
    """A KumoMachine never rebuilds its server: a Machine whose infrastructure is not
    Ready for 15 min, or whose Node is not Ready for 5, is replaced by CAPI."""
    cc, _ = clusterclass()
    checks = [cc["spec"]["controlPlane"]["healthCheck"]["checks"]]
    checks += [md["healthCheck"]["checks"] for md in cc["spec"]["workers"]["machineDeployments"]]
    for check in checks:
        assert {"type": "InfrastructureReady", "status": "False", "timeoutSeconds": 900} in check[
            "unhealthyMachineConditions"
        ]
        assert {"type": "Ready", "status": "False", "timeoutSeconds": 300} in check[
            "unhealthyNodeConditions"
        ]


def test_the_example_is_one_cluster_of_the_class() -> None:
    (cluster,) = documents(ROOT / "examples" / "capi" / "cluster.yaml")
    cc, _ = clusterclass()
    topology = cluster["spec"]["topology"]
    assert cluster["kind"] == "Cluster" and cluster["apiVersion"] == "cluster.x-k8s.io/v1beta2"
    assert topology["classRef"]["name"] == cc["metadata"]["name"]
    assert topology["controlPlane"]["replicas"] == 1
    classes = {md["class"] for md in cc["spec"]["workers"]["machineDeployments"]}
    assert [md["class"] for md in topology["workers"]["machineDeployments"]] == sorted(classes)


def node_registrations(by_ref: dict[tuple[str, str, str], dict[str, Any]]) -> list[dict[str, Any]]:
    """Every nodeRegistration of the class's kubeadm templates (init and joins)."""
    found = []
    for (_, kind, _), doc in by_ref.items():
        if kind == "KubeadmControlPlaneTemplate":
            spec = doc["spec"]["template"]["spec"]["kubeadmConfigSpec"]
            found += [spec["initConfiguration"], spec["joinConfiguration"]]
        elif kind == "KubeadmConfigTemplate":
            found.append(doc["spec"]["template"]["spec"]["joinConfiguration"])
    return [c["nodeRegistration"] for c in found]


def test_every_kubelet_names_itself_by_its_server_as_the_kumomachine_does() -> None:
    """CAPI matches a Node to its Machine by providerID: the kubelet's, from the metadata
    service's instance ID, must be the KumoMachine's ``openstack:///<server ID>``."""
    _, by_ref = clusterclass()
    registrations = node_registrations(by_ref)
    assert len(registrations) == 3
    for registration in registrations:
        assert {
            "name": "provider-id",
            "value": "openstack:///{{ ds.meta_data.instance_id }}",
        } in registration["kubeletExtraArgs"]
        assert registration["ignorePreflightErrors"] == ["SystemVerification"]
        assert registration["name"] == "{{ ds.meta_data.local_hostname }}"


def test_the_control_plane_fits_the_labs_boot_shim() -> None:
    """Images from registry.kumo.lab (the lab pulls nothing), no kube-proxy or CoreDNS."""
    _, by_ref = clusterclass()
    (kcp,) = [d for (_, kind, _), d in by_ref.items() if kind == "KubeadmControlPlaneTemplate"]
    spec = kcp["spec"]["template"]["spec"]["kubeadmConfigSpec"]
    assert spec["format"] == "cloud-config"
    assert spec["clusterConfiguration"]["imageRepository"] == "registry.kumo.lab"
    assert spec["initConfiguration"]["skipPhases"] == ["addon/kube-proxy", "addon/coredns"]

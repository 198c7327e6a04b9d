"""deploy/ as files: the Pod meets Pod Security `restricted`, the metrics port is the one
every manifest names, and the NetworkPolicy and PodDisruptionBudget select the Pods.
(The real API server judges the rendered install in tests/integration/test_operator_pods.py
and test_rbac.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kumo.cli import build_parser

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
RESTRICTED = {
    f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "audit", "warn")
}


def load(path: str) -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / path).read_text())  # type: ignore[no-any-return]


def pod() -> dict[str, Any]:
    return load("base/manager.yaml")["spec"]["template"]  # type: ignore[no-any-return]


def test_the_pod_meets_restricted() -> None:
    spec = pod()["spec"]
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] != 0
    assert not spec.get("hostNetwork") and not spec.get("hostPID") and not spec.get("hostIPC")
    (container,) = spec["containers"]
    context = container["securityContext"]
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context["readOnlyRootFilesystem"] is True
    assert not context.get("privileged")
    assert all("hostPort" not in p for p in container["ports"])


def test_tmp_is_in_memory_and_bounded() -> None:
    spec = pod()["spec"]
    (container,) = spec["containers"]
    (mount,) = (m for m in container["volumeMounts"] if m["mountPath"] == "/tmp")
    (volume,) = (v for v in spec["volumes"] if v["name"] == mount["name"])
    assert volume["emptyDir"] == {"medium": "Memory", "sizeLimit": "16Mi"}


def test_metrics_listen_on_the_pods_address_on_the_port_every_manifest_names() -> None:
    template = pod()
    (container,) = template["spec"]["containers"]
    args = container["args"]
    assert "--metrics-address=$(POD_IP)" in args
    (env,) = (e for e in container["env"] if e["name"] == "POD_IP")
    assert env["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    parsed = build_parser().parse_args([a for a in args if a != "--metrics-address=$(POD_IP)"])
    port = parsed.metrics_port
    assert port == 9464
    assert container["ports"] == [{"name": "http", "containerPort": port}]
    assert template["metadata"]["annotations"]["prometheus.io/port"] == str(port)
    (service_port,) = load("base/service.yaml")["spec"]["ports"]
    assert service_port["port"] == port and service_port["targetPort"] == "http"
    policy = load("base/networkpolicy.yaml")["spec"]
    assert policy["policyTypes"] == ["Ingress"]
    assert policy["ingress"] == [{"ports": [{"protocol": "TCP", "port": port}]}]


def test_policy_and_budget_select_the_pods() -> None:
    labels = pod()["metadata"]["labels"]
    policy = load("base/networkpolicy.yaml")
    budget = load("base/pdb.yaml")
    for doc in (policy, budget):
        assert doc["metadata"]["namespace"] == "kumo-system"
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert budget["spec"]["minAvailable"] == 1
    assert load("base/manager.yaml")["spec"]["replicas"] > 1  # else a drain would block
    resources = load("base/kustomization.yaml")["resources"]
    assert {"networkpolicy.yaml", "pdb.yaml", "namespace.yaml"} <= set(resources)


def test_kumo_system_enforces_restricted_and_the_lab_only_lifts_enforce() -> None:
    assert load("base/namespace.yaml")["metadata"]["labels"].items() >= RESTRICTED.items()
    lab = load("overlays/lab/kustomization.yaml")
    assert {"path": "namespace.yaml"} in lab["patches"]
    patch = load("overlays/lab/namespace.yaml")
    assert patch["metadata"]["labels"] == {"pod-security.kubernetes.io/enforce": "privileged"}
    assert load("overlays/lab/deployment.yaml")["spec"]["template"]["spec"]["hostNetwork"]


def test_the_json_logs_overlay_passes_a_log_format_kumo_run_takes() -> None:
    overlay = load("overlays/json-logs/kustomization.yaml")
    assert "../../base" in overlay["resources"]
    patch = yaml.safe_load((DEPLOY / "overlays/json-logs/log-format.yaml").read_text())
    flag = patch[0]["value"]
    assert flag == "--log-format=json"
    assert build_parser().parse_args(["run", flag]).log_format == "json"

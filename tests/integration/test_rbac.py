"""deploy/ applied for real on the API server: everything is installed, and Kumo's
ServiceAccount may do what it needs and no more."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.integration.kube_fixtures import KubeEnv, kubectl
from tests.integration.polling import wait_until

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SA = "system:serviceaccount:kumo-system:kumo"


@pytest.fixture(scope="module")
def rbac(crds: KubeEnv) -> KubeEnv:
    kubectl("apply", "-k", str(DEPLOY))  # what docs/install.md tells a user to run
    return crds


def test_apply_k_installs_everything(rbac: KubeEnv) -> None:
    for kind, name in [
        ("namespace", "kumo-system"),
        ("serviceaccount", "kumo"),
        ("role", "kumo-leader-election"),
        ("role", "kumo-default-credentials"),
        ("secret", "kumo-default-cloud"),
        ("service", "kumo-metrics"),
        ("deployment", "kumo"),
        ("networkpolicy", "kumo"),
        ("poddisruptionbudget", "kumo"),
    ]:
        assert kubectl("get", kind, name, "-n", "kumo-system", "-o", "name").stdout.strip()
    for name in ("clusterrole/kumo-operator", "clusterrolebinding/kumo-operator"):
        assert kubectl("get", name, "-o", "name").stdout.strip()
    deployment = json.loads(
        kubectl("get", "deployment", "kumo", "-n", "kumo-system", "-o", "json").stdout
    )
    spec = deployment["spec"]
    container = spec["template"]["spec"]["containers"][0]
    assert spec["replicas"] == 2
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    # The controller manager accepted it: a ReplicaSet with two Pods. (The shipped
    # Deployment cannot run on the lab's node: its image tag is not imported there and
    # its Pods are not host-network; test_operator_pods runs the lab overlay.)
    wait_until(
        "the Deployment's two Pods",
        lambda: (
            len(
                kubectl(
                    "get", "pods", "-n", "kumo-system", "-l", "app=kumo", "-o", "name"
                ).stdout.split()
            )
            == 2
        ),
        60,
    )
    # Checked: now none of them, so the node does not retry sandboxes it cannot make.
    kubectl("scale", "deployment/kumo", "-n", "kumo-system", "--replicas=0")


@pytest.mark.parametrize("overlay", ["single-namespace", "no-default-cloud", "cloud-notifications"])
def test_overlays_are_valid(rbac: KubeEnv, overlay: str) -> None:
    rendered = kubectl("kustomize", str(DEPLOY / "overlays" / overlay)).stdout
    kubectl("apply", "--dry-run=server", "-f", "-", input=rendered)  # the API server accepts it
    if overlay == "single-namespace":
        assert "--namespace=team-a" in rendered
    elif overlay == "cloud-notifications":
        assert "--notifications-secret=kumo-system/kumo-cloud-notifications" in rendered
        role = next(
            d
            for d in yaml.safe_load_all(rendered)
            if d["kind"] == "Role" and d["metadata"]["name"] == "kumo-cloud-notifications"
        )
        assert role["rules"] == [
            {
                "apiGroups": [""],
                "resources": ["secrets"],
                "resourceNames": ["kumo-cloud-notifications"],
                "verbs": ["get"],
            }
        ]
    else:
        assert "--credentials-secret" not in rendered and "kumo-default-cloud" not in rendered


def can(*args: str) -> bool:
    proc = kubectl("auth", "can-i", "--as", SA, *args, check=False)
    return proc.stdout.strip() == "yes"


@pytest.mark.parametrize(
    "args",
    [
        ("watch", "virtualmachines.kumo.dev", "--all-namespaces"),
        ("patch", "loadbalancers.kumo.dev/status", "-n", "team-a"),
        ("create", "virtualmachines.kumo.dev", "-n", "team-a"),
        # blockOwnerDeletion on members: OpenShift's owner-reference admission checks it.
        ("update", "virtualmachinegroups.kumo.dev", "--subresource=finalizers", "-n", "team-a"),
        ("delete", "virtualmachines.kumo.dev", "-n", "team-a"),
        # A KumoCluster makes and deletes its API LoadBalancer (and its other parts).
        ("delete", "loadbalancers.kumo.dev", "-n", "team-a"),
        ("patch", "kumoclusters.infrastructure.kumo.dev", "-n", "team-a"),
        ("patch", "kumomachines.infrastructure.kumo.dev/status", "-n", "team-a"),
        ("get", "secret/kumo-cloud-credentials", "-n", "team-a"),
        ("get", "secret/kumo-default-cloud", "-n", "kumo-system"),
        ("get", "configmap/boot-script", "-n", "team-a"),
        ("get", "namespace/team-a"),
        ("create", "events", "-n", "team-a"),
        ("create", "leases.coordination.k8s.io", "-n", "kumo-system"),
        ("update", "leases.coordination.k8s.io/kumo", "-n", "kumo-system"),
    ],
)
def test_kumo_may(rbac: KubeEnv, args: tuple[str, ...]) -> None:
    assert can(*args), f"Kumo needs: {' '.join(args)}"


@pytest.mark.parametrize(
    "args",
    [
        # Only Secrets named kumo-cloud-credentials, and the default cloud in kumo-system;
        # boot Secrets only where a namespace opts in (test_boot_secrets_are_opt_in).
        ("get", "secret/other-app-password", "-n", "team-a"),
        ("get", "secret/boot-script", "-n", "team-a"),
        ("get", "secret/kumo-default-cloud", "-n", "team-a"),
        ("get", "secret/kube-controller-manager-token", "-n", "kube-system"),
        ("list", "secrets", "-n", "team-a"),
        ("list", "secrets", "--all-namespaces"),
        ("watch", "secrets", "--all-namespaces"),
        # ConfigMaps are read by name, never listed or watched (kube-system's neither).
        ("list", "configmaps", "--all-namespaces"),
        ("watch", "configmaps", "--all-namespaces"),
        ("list", "configmaps", "-n", "kube-system"),
        ("create", "secrets", "-n", "team-a"),
        ("update", "secret/kumo-cloud-credentials", "-n", "team-a"),
        ("delete", "shares.kumo.dev", "-n", "team-a"),
        ("create", "kumomachines.infrastructure.kumo.dev", "-n", "team-a"),
        ("update", "virtualmachines.kumo.dev", "-n", "team-a"),
        ("update", "virtualmachines.kumo.dev", "--subresource=finalizers", "-n", "team-a"),
        ("create", "pods", "-n", "team-a"),
        ("delete", "customresourcedefinitions.apiextensions.k8s.io"),
        ("update", "leases.coordination.k8s.io/kube-scheduler", "-n", "kumo-system"),
        ("update", "leases.coordination.k8s.io/kumo", "-n", "team-a"),
    ],
)
def test_kumo_may_not(rbac: KubeEnv, args: tuple[str, ...]) -> None:
    assert not can(*args), f"Kumo must not: {' '.join(args)}"


def test_boot_secrets_are_opt_in_per_namespace(rbac: KubeEnv, namespace: str) -> None:
    """initScript.secretRef: readable only in a namespace that binds kumo-boot-secrets."""
    assert not can("get", "secret/boot-script", "-n", namespace)
    kubectl(
        "create", "rolebinding", "kumo-boot-secrets", "-n", namespace,
        "--clusterrole=kumo-boot-secrets", "--serviceaccount=kumo-system:kumo",
    )  # fmt: skip
    assert can("get", "secret/boot-script", "-n", namespace)
    assert not can("get", "secret/boot-script", "-n", "team-a")
    assert not can("list", "secrets", "-n", namespace)

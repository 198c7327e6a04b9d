"""deploy/rbac.yaml on the real API server: Kumo may do what it needs and no more."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.kube_fixtures import KubeEnv, kubectl

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SA = "system:serviceaccount:kumo-system:kumo"


@pytest.fixture(scope="module")
def rbac(crds: KubeEnv) -> KubeEnv:
    kubectl("create", "namespace", "kumo-system", check=False)
    # The Deployment is valid (no controller runs it here: server-side dry run).
    kubectl("apply", "-f", str(DEPLOY / "manager.yaml"), "--dry-run=server")
    kubectl("apply", "-f", str(DEPLOY / "rbac.yaml"))
    return crds


def can(*args: str) -> bool:
    proc = kubectl("auth", "can-i", "--as", SA, *args, check=False)
    return proc.stdout.strip() == "yes"


@pytest.mark.parametrize(
    "args",
    [
        ("watch", "virtualmachines.kumo.dev", "--all-namespaces"),
        ("patch", "loadbalancers.kumo.dev/status", "-n", "team-a"),
        ("create", "virtualmachines.kumo.dev", "-n", "team-a"),
        ("delete", "virtualmachines.kumo.dev", "-n", "team-a"),
        ("get", "secret/kumo-cloud-credentials", "-n", "team-a"),
        ("get", "secret/boot-script", "-n", "team-a"),  # an initScript.secretRef
        ("get", "secret/kumo-default-cloud", "-n", "kumo-system"),
        ("watch", "configmaps", "--all-namespaces"),
        ("create", "events", "-n", "team-a"),
    ],
)
def test_kumo_may(rbac: KubeEnv, args: tuple[str, ...]) -> None:
    assert can(*args), f"Kumo needs: {' '.join(args)}"


@pytest.mark.parametrize(
    "args",
    [
        # `get` by name is granted (initScript.secretRef names any Secret of the object's
        # namespace); enumerating or watching Secrets is not.
        ("list", "secrets", "-n", "team-a"),
        ("list", "secrets", "--all-namespaces"),
        ("watch", "secrets", "--all-namespaces"),
        ("create", "secrets", "-n", "team-a"),
        ("update", "secret/kumo-cloud-credentials", "-n", "team-a"),
        ("delete", "loadbalancers.kumo.dev", "-n", "team-a"),
        ("update", "virtualmachines.kumo.dev", "-n", "team-a"),
        ("create", "pods", "-n", "team-a"),
        ("delete", "customresourcedefinitions.apiextensions.k8s.io"),
    ],
)
def test_kumo_may_not(rbac: KubeEnv, args: tuple[str, ...]) -> None:
    assert not can(*args), f"Kumo must not: {' '.join(args)}"

"""Cluster API in the lab for the tests: the management cluster (dev/capi, on
https://127.0.0.1:6445) with the three CAPI managers, and Kumo installed there as a
user installs the provider (its CRDs, RBAC, deploy/capi) and run as a process with the
ServiceAccount's own token, so the generated RBAC and deploy/capi's are what it has.

tests/integration/test_capi_lab.py (``make test-clusters``) uses :func:`start_capi`
alone; tests/integration/test_capi_provider.py (``make test``) starts CAPI for its
module and stops it at the module's end when it was not running before: CAPI's
managers do not run beside the rest of the suite.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.kube_fixtures import KubeEnv, delete_namespace
from tests.integration.kumo_fixtures import STATE, KumoOperator, wait_until

__all__ = ["capi_kumo", "capi_management", "capi_namespace"]

REPO_ROOT = Path(__file__).resolve().parents[2]
CAPI_DIR = REPO_ROOT / "dev" / "capi"
KUBE_ENV_SH = REPO_ROOT / "dev" / "kube" / "env.sh"
CAPI_SERVER = "https://127.0.0.1:6445"
#: Kumo as a CAPI management cluster installs it: namespace, CRDs, RBAC, deploy/capi's RBAC.
INSTALL = (
    REPO_ROOT / "deploy" / "base" / "namespace.yaml",
    REPO_ROOT / "deploy" / "base" / "crds",
    REPO_ROOT / "deploy" / "base" / "rbac.yaml",
    REPO_ROOT / "deploy" / "capi" / "rbac.yaml",
)
CLUSTERCLASS = REPO_ROOT / "deploy" / "capi" / "clusterclass.yaml"
EXAMPLE = REPO_ROOT / "examples" / "capi" / "cluster.yaml"


def start_capi() -> tuple[KubeEnv, bool]:
    """CAPI's management cluster and managers (dev/capi/up.sh: idempotent, the build
    cached), and whether they were running already."""
    running = subprocess.run(["bash", str(CAPI_DIR / "cluster.sh"), "status"], capture_output=True)
    up = subprocess.run(
        ["bash", str(CAPI_DIR / "up.sh")], capture_output=True, text=True, timeout=1200
    )
    if up.returncode != 0:
        pytest.fail(f"dev/capi/up.sh failed ({up.returncode}):\n{up.stderr[-4000:]}", pytrace=False)
    kubectl_path = subprocess.run(
        ["bash", "-c", f'source "{KUBE_ENV_SH}" && printf "%s" "$KUBECTL"'],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    env = KubeEnv(
        kubeconfig=Path(up.stdout.split()[-1]), kubectl_path=Path(kubectl_path), server=CAPI_SERVER
    )
    return env, running.returncode == 0


def stop_capi() -> None:
    """The managers and the management cluster (data kept: dev/capi/down.sh)."""
    subprocess.run(["bash", str(CAPI_DIR / "down.sh")], capture_output=True, timeout=300)


@pytest.fixture(scope="module")
def capi_management(kube_env: KubeEnv) -> Iterator[KubeEnv]:
    """CAPI for one test module, with Kumo's CRDs and RBAC installed; stopped after the
    module unless it ran before it. (``kube_env``: the lab's PKI and binaries.)"""
    env, was_running = start_capi()
    try:
        for path in INSTALL:
            env.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(path))
        env.kubectl(
            "wait",
            "--for=condition=Established",
            "-f",
            str(REPO_ROOT / "deploy" / "base" / "crds"),
            "--timeout=60s",
        )
        yield env
    finally:
        if not was_running:
            stop_capi()


def service_account_kubeconfig(env: KubeEnv) -> Path:
    """A kubeconfig of ServiceAccount kumo-system/kumo on ``env`` (a TokenRequest token:
    the management cluster's controller manager makes the ServiceAccount)."""
    wait_until(
        "ServiceAccount kumo-system/kumo on the CAPI management cluster",
        lambda: env.kubectl("get", "sa", "kumo", "-n", "kumo-system", check=False).returncode == 0,
        60,
    )
    token = env.kubectl(
        "create", "token", "kumo", "-n", "kumo-system", "--duration=2h"
    ).stdout.strip()
    admin = yaml.safe_load(env.kubeconfig.read_text())
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "capi", "cluster": admin["clusters"][0]["cluster"]}],
        "users": [{"name": "kumo", "user": {"token": token}}],
        "contexts": [{"name": "kumo", "context": {"cluster": "capi", "user": "kumo"}}],
        "current-context": "kumo",
    }
    path = STATE / "capi" / "kumo-operator.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


@pytest.fixture(scope="module")
def capi_kumo(capi_management: KubeEnv, openstack_lab: str) -> Iterator[KumoOperator]:
    """Kumo for the management cluster (its own leader Lease and cluster ID), on the
    kumo-demo project, as the ServiceAccount deploy/ and deploy/capi give rights to."""
    kubeconfig = service_account_kubeconfig(capi_management)
    operator = KumoOperator(
        capi_management, openstack_lab, "kumo-demo", "operator-capi.log", kubeconfig
    )
    operator.start()
    try:
        operator.wait_role("leader", 90)
        yield operator
    finally:
        operator.stop()


@pytest.fixture
def capi_namespace(capi_management: KubeEnv) -> Iterator[str]:
    """A namespace of the management cluster holding the ClusterClass kumo-kubeadm."""
    name = f"capi-{uuid.uuid4().hex[:8]}"
    capi_management.kubectl("create", "namespace", name)
    capi_management.kubectl("apply", "-n", name, "-f", str(CLUSTERCLASS))
    yield name
    delete_namespace(name, timeout=120, kube=capi_management)


def get(env: KubeEnv, resource: str, name: str, namespace: str) -> dict[str, Any] | None:
    out = env.kubectl(
        "get", resource, name, "-n", namespace, "-o", "json", "--ignore-not-found"
    ).stdout
    return json.loads(out) if out.strip() else None


def items(env: KubeEnv, resource: str, namespace: str, *selector: str) -> list[dict[str, Any]]:
    out = env.kubectl("get", resource, "-n", namespace, *selector, "-o", "json").stdout
    return list(json.loads(out)["items"])

"""Kumo as it ships: the image (`make image`), installed with `kubectl apply -k deploy/`,
run with podman on the host network with the kumo ServiceAccount's token — exactly the
RBAC of deploy/ — reaches Ready and runs the seed story, then hands the lease back on
SIGTERM. (The lab has no kubelet: see docs/lab.md; the Deployment's Pods stay Pending.)
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

from tests.integration.helpers import (
    EXAMPLES,
    apply,
    members_of,
    owned_servers,
    wait_gone,
    wait_ready,
)
from tests.integration.kube_fixtures import KubeEnv, kubectl
from tests.integration.kumo_fixtures import (
    LEASE_NAMESPACE,
    KumoOperator,
    free_port,
    lease_holder,
    readyz,
    wait_until,
)

RUN = Path(__file__).resolve().parents[2] / "dev" / "image" / "run.sh"
SEED = ("virtualmachine.yaml", "virtualmachinegroup.yaml", "loadbalancer.yaml")


def run_sh(*args: str) -> str:
    proc = subprocess.run(["bash", str(RUN), *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"dev/image/run.sh {args[0]} failed: {proc.stderr[-2000:]}"
    return proc.stdout.strip()


@pytest.fixture
def default_cloud(crds: KubeEnv, openstack_lab: str) -> None:
    """Fill deploy/'s empty default-credentials Secret with the kumo-demo project only."""
    clouds = yaml.safe_load(Path(openstack_lab).read_text())
    only_demo = {"clouds": {"kumo-demo": clouds["clouds"]["kumo-demo"]}}
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "kumo-default-cloud", "namespace": LEASE_NAMESPACE},
        "stringData": {"clouds.yaml": yaml.safe_dump(only_demo), "cloud": "kumo-demo"},
    }
    kubectl("apply", "-f", "-", input=json.dumps(secret))


@pytest.fixture
def image_operator(
    kumo_operator: KumoOperator, operator_kubeconfig: Path, default_cloud: None
) -> Iterator[tuple[str, int]]:
    """The image running as the operator (the session's operator stopped meanwhile)."""
    name, port = f"kumo-test-{uuid.uuid4().hex[:6]}", free_port()
    kumo_operator.stop()  # hands the lease over
    try:
        run_sh(
            "start", "--name", name, "--kubeconfig", str(operator_kubeconfig),
            "--env", f"POD_NAMESPACE={LEASE_NAMESPACE}", "--",
            # the Deployment's arguments (deploy/base/manager.yaml), loopback metrics
            "--credentials-secret=kumo-system/kumo-default-cloud", "--cloud=kumo",
            f"--metrics-port={port}", "--metrics-address=127.0.0.1", "--drift-seconds=3",
        )  # fmt: skip
        yield name, port
    finally:
        logs = subprocess.run(["bash", str(RUN), "logs", name], capture_output=True, text=True)
        Path(kumo_operator.log_path.parent / f"{name}.log").write_text(logs.stdout + logs.stderr)
        run_sh("stop", name, "30")
        run_sh("rm", name)
        kumo_operator.start()
        kumo_operator.wait_role("leader", 60)


def test_image_reaches_ready_and_runs_the_seed_story(
    image_operator: tuple[str, int], namespace: str, demo_conn: Any
) -> None:
    name, port = image_operator
    health = wait_until(
        "the image-run operator to lead",
        lambda: (h := readyz(port)).get("role") == "leader" and h,
        120,
    )
    assert health["ok"] and health["synced"]
    assert lease_holder() == health["identity"]

    for manifest in SEED:
        apply(namespace, EXAMPLES / manifest)
    vm = wait_ready("vm", "vm-sample", namespace, timeout=240)
    group = wait_ready("vmg", "virtualmachinegroup-sample", namespace, timeout=240)
    lb = wait_ready("lb", "loadbalancer-sample", namespace, timeout=240)
    assert group["status"]["readyReplicas"] == 2
    assert lb["status"]["vip"]
    members = members_of(namespace, "virtualmachinegroup-sample")
    for member in [vm, *members]:
        assert [s.id for s in owned_servers(demo_conn, member["metadata"]["uid"])] == [
            member["status"]["id"]
        ]

    for manifest in reversed(SEED):
        kubectl("delete", "-n", namespace, "-f", str(EXAMPLES / manifest), "--wait=false")
    wait_gone("vmg", "virtualmachinegroup-sample", namespace, timeout=300)
    wait_gone("lb", "loadbalancer-sample", namespace, timeout=300)
    wait_gone("vm", "vm-sample", namespace, timeout=300)
    for member in [vm, *members]:
        assert owned_servers(demo_conn, member["metadata"]["uid"]) == []

    run_sh("stop", name, "30")  # SIGTERM: the lease is released on the way out
    wait_until("the lease released", lambda: lease_holder() == "", 10)

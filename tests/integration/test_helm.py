"""Kumo's Helm chart (deploy/helm/kumo, generated from deploy/ by dev/helm/chart.py)
with the real Helm, built from its Go module helm.sh/helm/v3 (dev/helm/build.sh, cached).

Without the lab: `helm lint`; `helm template` with the default values equals
`kubectl kustomize deploy/` (the Namespace aside: `helm install` needs it to exist
before, so namespace.create is off by default), and each overlay equals its value.

On the lab: `helm install` gives two Ready Pods and a leader; `helm upgrade` to a new
image tag rolls them, one leader at a time and a VM keeping exactly one server. The
release stays out of the lab's way: a namespace of its own (so its own Lease and
namespaced RBAC), ClusterRoles with a suffix, watching one test namespace only; the
CRDs are the lab's (Helm skips CRDs that exist, and never deletes them). The session's
operator, which watches every namespace, is stopped meanwhile (as
test_operator_pods.py does) so that the VM has one operator. `helm uninstall` and the
namespace's deletion leave nothing behind."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.helpers import default_cloud_secret, owned_servers, wait_gone, wait_ready
from tests.integration.kube_fixtures import KubeEnv, delete_namespace, kubectl
from tests.integration.kumo_fixtures import KumoOperator, wait_until

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy/helm/kumo"
#: containerd of the lab's node (dev/kube/node.sh), where the image is imported.
CTR = ["ctr", "--address", "/run/kumo-lab-node/containerd.sock", "-n", "k8s.io"]
NEW_TAG = "helm-upgrade"


@pytest.fixture(scope="module")
def helm() -> str:
    built = subprocess.run(
        ["bash", str(REPO / "dev/helm/build.sh")], capture_output=True, text=True, timeout=1200
    )
    assert built.returncode == 0, built.stderr[-2000:]
    return built.stdout.strip()


def run(*args: str, timeout: float = 300) -> str:
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(args)}: {done.stderr[-3000:]}"
    return done.stdout


def docs(text: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(text) if d}


def template(helm: str, *values: str) -> dict[tuple[str, str], dict[str, Any]]:
    sets = [a for v in values for a in ("--set", v)]
    return docs(
        run(helm, "template", "kumo", str(CHART), "-n", "kumo-system", "--include-crds", *sets)
    )


def kustomize(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return docs(kubectl("kustomize", str(path)).stdout)


def test_helm_lint(helm: str) -> None:
    out = run(helm, "lint", "--strict", str(CHART))
    assert "0 chart(s) failed" in out, out


def test_template_with_the_default_values_is_the_kustomize_build(helm: str) -> None:
    built = kustomize(REPO / "deploy")
    rendered = template(helm)
    assert ("Namespace", "kumo-system") not in rendered
    assert rendered == {k: d for k, d in built.items() if k[0] != "Namespace"}
    assert template(helm, "namespace.create=true") == built


@pytest.mark.parametrize(
    ("overlay", "values"),
    [
        ("no-default-cloud", ["defaultCloud.enabled=false"]),
        ("cloud-notifications", ["notifications.enabled=true"]),
        ("single-namespace", ["watchNamespace=team-a"]),
    ],
)
def test_each_overlay_is_a_value(helm: str, overlay: str, values: list[str]) -> None:
    built = kustomize(REPO / "deploy/overlays" / overlay)
    assert template(helm, "namespace.create=true", *values) == built


# --- the lab -------------------------------------------------------------------------


def pods(namespace: str) -> list[dict[str, Any]]:
    out = kubectl("get", "pods", "-n", namespace, "-l", "app=kumo", "-o", "json").stdout
    return [p for p in json.loads(out)["items"] if not p["metadata"].get("deletionTimestamp")]


def ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def holder(namespace: str, lease: str) -> str:
    out = kubectl("get", "lease", lease, "-n", namespace, "-o", "json", "--ignore-not-found")
    if not out.stdout.strip():
        return ""
    return (json.loads(out.stdout).get("spec") or {}).get("holderIdentity") or ""


def leader(namespace: str, lease: str) -> str:
    """The Pod (of this release) holding the Lease, or ""."""
    held = holder(namespace, lease)
    names = [p["metadata"]["name"] for p in pods(namespace)]
    return next((n for n in names if held.startswith(n + "_")), "")


def two_ready(namespace: str, tag: str) -> list[str] | None:
    """The two Ready Pods, when there are exactly two and both run ``tag``."""
    current = pods(namespace)
    if len(current) == 2 and all(
        ready(p) and p["spec"]["containers"][0]["image"].endswith(":" + tag) for p in current
    ):
        return sorted(p["metadata"]["name"] for p in current)
    return None


def two_ready_or_why(namespace: str, tag: str, timeout: float) -> list[str]:
    """Wait for two_ready; on timeout fail with what the namespace shows."""
    try:
        return wait_until(  # type: ignore[no-any-return]
            f"two Ready Pods in {namespace}", lambda: two_ready(namespace, tag), timeout
        )
    except AssertionError as error:
        pods_shown = kubectl("get", "pods", "-n", namespace, "-o", "wide", check=False).stdout
        columns = "custom-columns=OBJ:.involvedObject.name,REASON:.reason,MSG:.message"
        events = kubectl("get", "events", "-n", namespace, "-o", columns, check=False).stdout
        raise AssertionError(f"{error}\n{pods_shown}\n{events[-3000:]}") from None


@pytest.fixture
def release(
    helm: str,
    kumo_operator: KumoOperator,
    crds: KubeEnv,
    openstack_lab: str,
    namespace: str,
    tmp_path: Path,
) -> Iterator[dict[str, Any]]:
    """A Helm release of Kumo in a namespace of its own, watching ``namespace`` only."""
    imported = subprocess.run(
        ["bash", str(REPO / "dev/kube/node.sh"), "import-image"], capture_output=True, text=True
    )
    assert imported.returncode == 0, f"node.sh import-image: {imported.stderr[-2000:]}"
    run(*CTR, "images", "tag", "--force", "localhost/kumo:dev", f"localhost/kumo:{NEW_TAG}")
    name = f"kumo-helm-{uuid.uuid4().hex[:6]}"
    lease = "kumo"  # the Role kumo-leader-election names it; the namespace makes it distinct
    postrender = tmp_path / "postrender"
    postrender.write_text(
        f"#!/bin/sh\nexec {sys.executable} {REPO / 'tests/integration/helm_lab_postrender.py'}\n"
    )
    postrender.chmod(0o755)
    # As deploy/overlays/lab/namespace.yaml: the host network needs `privileged`.
    ns = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": {
                "pod-security.kubernetes.io/enforce": "privileged",
                "pod-security.kubernetes.io/audit": "restricted",
                "pod-security.kubernetes.io/warn": "restricted",
            },
        },
    }
    kubectl("apply", "-f", "-", input=json.dumps(ns))
    values = [
        "image.tag=dev",
        f"watchNamespace={namespace}",
        f"clusterNameSuffix=-{name}",
        "extraArgs={--drift-seconds=5}",
    ]
    helm_args = ["--kubeconfig", str(crds.kubeconfig), "-n", name]
    helm_args += ["--post-renderer", str(postrender)]
    secret = default_cloud_secret(openstack_lab, name)
    kumo_operator.stop()
    try:
        started = time.monotonic()
        sets = [a for v in values for a in ("--set", v)]
        run(helm, "install", "kumo", str(CHART), *helm_args, *sets, timeout=120)
        # The chart's default-cloud Secret is shipped empty: fill it (Helm's three-way
        # merge keeps keys it did not write) and let the Pods read it.
        kubectl("apply", "-f", "-", input=json.dumps(secret))
        kubectl("rollout", "restart", "deployment/kumo", "-n", name)
        names = two_ready_or_why(name, "dev", 240)
        yield {
            "helm": helm,
            "namespace": name,
            "lease": lease,
            "pods": names,
            "args": [*helm_args, "--reuse-values"],
            "installed_in": time.monotonic() - started,
        }
    finally:
        subprocess.run(
            [helm, "uninstall", "kumo", *helm_args[:4], "--wait", "--timeout", "120s"],
            capture_output=True,
        )
        delete_namespace(name)
        subprocess.run([*CTR, "images", "rm", f"localhost/kumo:{NEW_TAG}"], capture_output=True)
        left = kubectl("get", "clusterroles,clusterrolebindings", "-o", "name").stdout
        assert name not in left, left
        kumo_operator.start()
        kumo_operator.wait_role("leader", 90)


def test_helm_install_two_ready_pods_and_a_leader_upgrade_rolls_them_with_one_server(
    release: dict[str, Any], namespace: str, demo_conn: Any
) -> None:
    helm, name, lease = release["helm"], release["namespace"], release["lease"]
    first = wait_until("a Pod of the release to lead", lambda: leader(name, lease), 60)
    assert first in release["pods"]
    vm = {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "VirtualMachine",
        "metadata": {"name": "helm-vm"},
        "spec": {"image": "centos79", "flavor": "m1.tiny"},
    }
    kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(vm))
    obj = wait_ready("vm", "helm-vm", namespace, timeout=240)
    uid, server = obj["metadata"]["uid"], obj["status"]["id"]

    started = time.monotonic()
    run(helm, "upgrade", "kumo", str(CHART), *release["args"], "--set", f"image.tag={NEW_TAG}")
    leaders: set[str] = {first}
    servers: set[str] = {server}

    def rolled() -> list[str] | None:
        # Never more than one server for the VM, whichever Pod leads meanwhile.
        found = [s.id for s in owned_servers(demo_conn, uid)]
        servers.update(found)
        if now := leader(name, lease):
            leaders.add(now)
        return two_ready(name, NEW_TAG)

    names = wait_until("both Pods rolled to the new tag and Ready", rolled, 300, interval=1)
    new_leader = wait_until(
        "a new Pod to lead", lambda: leader(name, lease) in names and leader(name, lease), 60
    )
    rolled_in = time.monotonic() - started
    assert not set(names) & set(release["pods"])
    assert new_leader in names
    assert servers == {server}, servers  # the same server all along: none made twice
    obj = wait_ready("vm", "helm-vm", namespace, timeout=60)
    assert obj["status"]["id"] == server
    print(f"helm install: {release['installed_in']:.0f} s, upgrade rolled: {rolled_in:.0f} s")

    kubectl("delete", "vm", "helm-vm", "-n", namespace, "--wait=false")
    wait_gone("vm", "helm-vm", namespace, timeout=180)
    assert owned_servers(demo_conn, uid) == []

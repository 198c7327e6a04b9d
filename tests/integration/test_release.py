"""The release bundle (`make release`, dev/release.sh): dist/kumo-<version>.yaml is
`kubectl kustomize deploy/` with the version's image; the image archive is the image,
labelled with its version and source commit; the CycloneDX SBOM lists the image's
Python packages (deploy/image/requirements.lock, and Kumo) and its Debian packages.
Runs podman (the image, cached by `make image`); and on the lab, the bundle applied
(beside the lab's Kumo, as tests/integration/test_helm.py's release) gives two Ready
Pods and a leader."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kumo import __version__
from tests.integration.helm_lab_postrender import render
from tests.integration.kube_fixtures import KubeEnv, delete_namespace, kubectl
from tests.integration.kumo_fixtures import wait_until
from tests.integration.test_helm import leader, two_ready_or_why

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        ["bash", str(REPO / "dev/release.sh")],
        env={**os.environ, "KUMO_DIST": str(out)},
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    yield out


def test_the_bundle_is_the_kustomize_build_with_the_versions_image(dist: Path) -> None:
    bundle = [d for d in yaml.safe_load_all((dist / f"kumo-{__version__}.yaml").read_text()) if d]
    built = [d for d in yaml.safe_load_all(kubectl("kustomize", str(REPO / "deploy")).stdout) if d]
    for doc in built:
        if doc["kind"] == "Deployment":
            doc["spec"]["template"]["spec"]["containers"][0]["image"] = (
                f"localhost/kumo:{__version__}"
            )
    assert bundle == built
    kinds = {d["kind"] for d in bundle}
    assert {"CustomResourceDefinition", "ClusterRole", "ServiceAccount", "Deployment"} <= kinds


def test_the_image_archive_carries_version_and_commit(dist: Path) -> None:
    archive = dist / f"kumo-{__version__}.oci.tar"
    index = json.loads(
        subprocess.run(
            ["tar", "-xOf", str(archive), "index.json"], capture_output=True, check=True
        ).stdout
    )
    assert index["manifests"], index
    labels = json.loads(
        subprocess.run(
            ["podman", "image", "inspect", "--format", "{{json .Config.Labels}}",
             f"localhost/kumo:{__version__}"],
            capture_output=True, text=True, check=True,
        ).stdout
    )  # fmt: skip
    assert labels["org.opencontainers.image.version"] == __version__
    assert re.fullmatch(r"[0-9a-f]{40}", labels["org.opencontainers.image.revision"]), labels
    sums = (dist / "SHA256SUMS").read_text()
    assert archive.name in sums


def locked() -> dict[str, str]:
    text = (REPO / "deploy/image/requirements.lock").read_text()
    return {
        re.sub(r"[-_.]+", "-", m[1]).lower(): m[2]
        for m in re.finditer(r"^([A-Za-z0-9_.-]+)==(\S+)", text, re.M)
    }


def test_the_sbom_lists_the_images_python_and_debian_packages(dist: Path) -> None:
    bom: dict[str, Any] = json.loads((dist / f"kumo-{__version__}.cdx.json").read_text())
    assert bom["bomFormat"] == "CycloneDX"
    assert bom["metadata"]["component"]["version"] == __version__
    purls = [c["purl"] for c in bom["components"]]
    pypi = dict(p.removeprefix("pkg:pypi/").split("@", 1) for p in purls if "pkg:pypi/" in p)
    for name, version in locked().items():
        assert pypi.get(name) == version, (name, version, pypi.get(name))
    assert pypi.get("kumo") == __version__
    debs = {p.split("/")[2].split("@")[0] for p in purls if p.startswith("pkg:deb/debian/")}
    assert {"python3.11", "libc6", "ca-certificates", "base-files"} <= debs, sorted(debs)


# --- the lab: the bundle applied gives two Ready Pods ---------------------------------

CTR = ["ctr", "--address", "/run/kumo-lab-node/containerd.sock", "-n", "k8s.io"]


def isolated(bundle: list[dict[str, Any]], name: str, watched: str) -> list[dict[str, Any]]:
    """The bundle as it would run beside the lab's Kumo: namespace ``name`` instead of
    kumo-system, the ClusterRoles (and bindings) suffixed with it, watching ``watched``
    only, run on the lab's node as deploy/overlays/lab runs deploy/ (the host network;
    helm_lab_postrender.py). The CRDs are the lab's already (the same, checked)."""
    text = yaml.safe_dump_all([d for d in bundle if d["kind"] != "CustomResourceDefinition"])
    docs = [d for d in yaml.safe_load_all(text.replace("kumo-system", name)) if d]
    for doc in docs:
        if doc["kind"] in ("ClusterRole", "ClusterRoleBinding"):
            doc["metadata"]["name"] += f"-{name}"
        if doc.get("roleRef", {}).get("kind") == "ClusterRole":
            doc["roleRef"]["name"] += f"-{name}"
        if doc["kind"] == "Namespace":  # the host network needs `privileged`
            doc["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] = "privileged"
        if doc["kind"] == "Deployment":
            args = doc["spec"]["template"]["spec"]["containers"][0]["args"]
            args += [f"--namespace={watched}"]  # Lease <name>/kumo: distinct by namespace
    return render(docs)


def test_the_bundle_applied_on_the_lab_gives_two_ready_pods(
    dist: Path, crds: KubeEnv, namespace: str
) -> None:
    bundle = [d for d in yaml.safe_load_all((dist / f"kumo-{__version__}.yaml").read_text()) if d]
    for crd in (d for d in bundle if d["kind"] == "CustomResourceDefinition"):
        live = json.loads(kubectl("get", "crd", crd["metadata"]["name"], "-o", "json").stdout)
        assert live["spec"]["versions"] == crd["spec"]["versions"], crd["metadata"]["name"]
    image = f"localhost/kumo:{__version__}"
    archive = dist / f"kumo-{__version__}.oci.tar"
    subprocess.run(
        [*CTR, "images", "import", "--base-name", "localhost/kumo", "--index-name", image,
         str(archive)],
        capture_output=True, check=True, timeout=300,
    )  # fmt: skip
    name = f"kumo-bundle-{uuid.uuid4().hex[:6]}"
    docs = isolated(bundle, name, namespace)
    started = time.monotonic()
    try:
        kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))
        names = two_ready_or_why(name, __version__, 240)
        holder = wait_until("a Pod of the bundle to lead", lambda: leader(name, "kumo"), 60)
        assert holder in names
        print(f"bundle applied to two Ready Pods and a leader: {time.monotonic() - started:.0f} s")
    finally:
        kubectl(
            "delete",
            "-f",
            "-",
            "--ignore-not-found",
            "--wait=false",
            input=yaml.safe_dump_all(docs),
        )
        delete_namespace(name)
        subprocess.run([*CTR, "images", "rm", image], capture_output=True)
        left = kubectl("get", "clusterroles,clusterrolebindings", "-o", "name").stdout
        assert name not in left, left

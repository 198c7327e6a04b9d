"""Fixtures that install Kumo's CRDs and run the operator against the local lab."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.kube_fixtures import KubeEnv, delete_namespace, kubectl
from tests.integration.polling import wait_until

__all__ = ["KumoOperator", "crds", "get_obj", "kumo_operator", "namespace", "wait_until"]

REPO_ROOT = Path(__file__).resolve().parents[2]
CRDS = REPO_ROOT / "deploy" / "crds" / "kumo.dev.yaml"
STATE = Path(os.environ.get("KUMO_STATE", REPO_ROOT / ".kumo-dev"))


def get_obj(kind: str, name: str, namespace: str) -> dict[str, Any] | None:
    out = kubectl("get", kind, name, "-n", namespace, "-o", "json", "--ignore-not-found").stdout
    return json.loads(out) if out.strip() else None


@pytest.fixture(scope="session")
def crds(kube_env: KubeEnv) -> KubeEnv:
    """Kumo's CRDs installed and Established."""
    kubectl("apply", "-f", str(CRDS))
    for plural in ("virtualmachines", "virtualmachinegroups", "loadbalancers", "dnsrecords"):
        kubectl("wait", "--for=condition=Established", f"crd/{plural}.kumo.dev", "--timeout=60s")
    return kube_env


@pytest.fixture
def namespace(crds: KubeEnv) -> Iterator[str]:
    """A fresh namespace; objects left in it are released of finalizers and removed."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    kubectl("create", "namespace", name)
    yield name
    for kind in KUMO_KINDS:
        kubectl("delete", kind, "--all", "-n", name, "--wait=false", check=False)
    if KumoOperator.running:  # Kumo deletes the cloud resources: no leaks between tests
        wait_until(f"Kumo objects in {name} deleted", lambda: not _kumo_objects(name), 240)
    for ref in _kumo_objects(name):  # nobody will finalize these: release them
        kubectl(
            "patch",
            ref,
            "-n",
            name,
            "--type=merge",
            "-p",
            '{"metadata":{"finalizers":null}}',
            check=False,
        )
    delete_namespace(name)


KUMO_KINDS = ("dnsrecords", "loadbalancers", "virtualmachinegroups", "virtualmachines")


def _kumo_objects(namespace: str) -> list[str]:
    out = kubectl("get", ",".join(KUMO_KINDS), "-n", namespace, "-o", "name", check=False).stdout
    return out.split()


class KumoOperator:
    """A `kumo run` process against the local lab, logging to .kumo-dev/logs."""

    running = 0  # how many are running in this test session

    def __init__(self, kube: KubeEnv, clouds_yaml: str, cloud: str, log_name: str) -> None:
        self.kube = kube
        self.clouds_yaml = clouds_yaml
        self.cloud = cloud
        self.log_path = STATE / "logs" / log_name
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, *extra: str, env: dict[str, str] | None = None) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child process
        self.proc = subprocess.Popen(
            [
                str(REPO_ROOT / ".venv" / "bin" / "kumo"),
                "run",
                "--clouds-yaml",
                self.clouds_yaml,
                "--cloud",
                self.cloud,
                "--drift-seconds",
                "3",
                "--resync-seconds",
                "60",
                *extra,
            ],
            env={**self.kube.env, **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        KumoOperator.running += 1

    def kill(self) -> None:
        """SIGKILL: the crash a production operator must survive."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=30)
            self.proc = None
            KumoOperator.running -= 1

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.proc = None
            KumoOperator.running -= 1

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@pytest.fixture(scope="session")
def kumo_operator(crds: KubeEnv, openstack_lab: str) -> Iterator[KumoOperator]:
    """Kumo running for the whole session with the kumo-demo project's credentials."""
    operator = KumoOperator(crds, openstack_lab, "kumo-demo", "operator-test.log")
    operator.start()
    yield operator
    operator.stop()

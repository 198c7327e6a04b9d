"""Pytest fixtures for the local, real Kubernetes API server (dev/kube/up.sh).

Import them into a conftest with ``from tests.integration.kube_fixtures import *``.

``kube_env`` (session scope) starts etcd, kube-apiserver, kube-controller-manager and
kube-scheduler of a current release on 127.0.0.1 (or reuses them when already running;
the first run on a machine builds them from Go modules, ~10 min) and returns a
:class:`KubeEnv`. ``kubectl(...)`` runs the kubectl built with them. The controller
manager finalizes deleted namespaces, collects garbage by ownerReference and fills in
ServiceAccount token Secrets, as in a cluster.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

__all__ = ["KubeEnv", "KubectlError", "api_get", "delete_namespace", "kube_env", "kubectl"]

REPO_ROOT = Path(__file__).resolve().parents[2]
KUBE_DIR = REPO_ROOT / "dev" / "kube"
UP_TIMEOUT_S = 40 * 60  # includes a first-time build of Kubernetes from Go modules


class KubectlError(subprocess.CalledProcessError):
    """A failed kubectl call; its message includes kubectl's stderr."""

    def __str__(self) -> str:
        return f"{super().__str__()}\nstderr: {self.stderr}"


@dataclass(frozen=True)
class KubeEnv:
    kubeconfig: Path
    kubectl_path: Path
    server: str = "https://127.0.0.1:6443"

    @property
    def env(self) -> dict:
        """Environment for subprocesses (e.g. Kumo itself) talking to this cluster."""
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig)}

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess:
        return _run_kubectl(self, args, input=input, check=check, timeout=timeout)


@lru_cache(maxsize=1)
def _paths() -> KubeEnv:
    """Ask dev/kube/env.sh (the single source of truth) where things are."""
    out = subprocess.run(
        [
            "bash",
            "-c",
            f'source "{KUBE_DIR}/env.sh" && printf "%s\\n%s\\n" "$KUBECONFIG" "$KUBECTL"',
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    return KubeEnv(kubeconfig=Path(out[0]), kubectl_path=Path(out[1]))


def _run_kubectl(
    env: KubeEnv, args: Sequence[str], *, input: str | None, check: bool, timeout: float
) -> subprocess.CompletedProcess:
    cmd = [str(env.kubectl_path), "--kubeconfig", str(env.kubeconfig), *args]
    proc = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise KubectlError(proc.returncode, cmd, proc.stdout, proc.stderr)
    return proc


def kubectl(
    *args: str, input: str | None = None, check: bool = True, timeout: float = 120
) -> subprocess.CompletedProcess:
    """Run the lab's kubectl (same release as the server) against the local cluster
    (start it with ``kube_env``)."""
    return _run_kubectl(_paths(), args, input=input, check=check, timeout=timeout)


_API = threading.local()


def _api_connection() -> tuple[http.client.HTTPSConnection, dict[str, str]]:
    """This thread's kept-alive connection to the lab's API server, as the admin
    kubeconfig says (CA data, token): a read costs milliseconds of CPU, where a kubectl
    run costs a tenth of a second of the two cores the lab's services share."""
    if getattr(_API, "conn", None) is None:
        config = yaml.safe_load(_paths().kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        user = config["users"][0]["user"]
        context = ssl.create_default_context(
            cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
        )
        url = urlsplit(cluster["server"])
        _API.conn = http.client.HTTPSConnection(
            url.hostname or "127.0.0.1", url.port or 443, context=context, timeout=30
        )
        _API.headers = {"Authorization": f"Bearer {user['token']}", "Accept": "application/json"}
    return _API.conn, _API.headers


def api_get(path: str) -> dict[str, Any] | None:
    """GET ``path`` from the lab's API server as the admin; None when it is not found.
    A dropped kept-alive connection is opened again once."""
    for attempt in (1, 2):
        conn, headers = _api_connection()
        try:
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException):
            conn.close()
            _API.conn = None
            if attempt == 2:
                raise
            continue
        if response.status == 404:
            return None
        if response.status != 200:
            raise RuntimeError(f"GET {path}: {response.status} {body[:300]!r}")
        return json.loads(body)  # type: ignore[no-any-return]
    return None


def delete_namespace(name: str, timeout: float = 60, kube: KubeEnv | None = None) -> None:
    """Delete a namespace and wait until the namespace controller has removed it.

    Should it still be there after ``timeout`` (a controller manager that is not
    running, as in dev/kube/second.sh's cluster), its ``kubernetes`` finalizer is
    removed through the ``finalize`` subresource, as the namespace controller would.
    ``kube``: another cluster than the lab's.
    """
    run = kube.kubectl if kube is not None else kubectl
    run("delete", "namespace", name, "--wait=false", "--ignore-not-found")
    run("wait", "--for=delete", f"namespace/{name}", f"--timeout={int(timeout)}s", check=False)
    got = run("get", "namespace", name, "-o", "json", "--ignore-not-found")
    if got.stdout.strip():
        ns = json.loads(got.stdout)
        ns["spec"]["finalizers"] = []
        run(
            "replace",
            "--raw",
            f"/api/v1/namespaces/{name}/finalize",
            "-f",
            "-",
            input=json.dumps(ns),
        )
        run("wait", "--for=delete", f"namespace/{name}", f"--timeout={int(timeout)}s", check=False)
        if run("get", "namespace", name, "--ignore-not-found").stdout.strip():
            raise TimeoutError(f"namespace {name} still exists after {timeout}s")


@pytest.fixture(scope="session")
def kube_env() -> KubeEnv:
    """Start (or reuse) the local Kubernetes API server; see dev/kube/up.sh."""
    proc = subprocess.run(
        [str(KUBE_DIR / "up.sh")], capture_output=True, text=True, timeout=UP_TIMEOUT_S
    )
    if proc.returncode != 0:
        pytest.fail(
            f"dev/kube/up.sh failed ({proc.returncode}):\n{proc.stderr[-4000:]}", pytrace=False
        )
    return _paths()

"""Fixtures that install Kumo's CRDs and run the operator against the local lab."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import yaml

from kumo.api.kinds import KINDS
from kumo.kinds.registry import deletion_order
from tests.integration import prometheus
from tests.integration.kube_fixtures import KubeEnv, api_get, delete_namespace, kubectl
from tests.integration.polling import wait_until

__all__ = [
    "KumoOperator",
    "crds",
    "get_obj",
    "kumo_operator",
    "namespace",
    "namespaces_removed",
    "operator_kubeconfig",
    "wait_until",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
STATE = Path(os.environ.get("KUMO_STATE", REPO_ROOT / ".kumo-dev"))


#: Every name kubectl knows a Kumo kind by (plural, singular, short names) → its plural.
KUMO_ALIASES = {
    alias: info.plural
    for info in KINDS
    for alias in (info.plural, info.singular, info.kind, *info.short_names)
}
#: A Kumo kind's plural → its API group and version (kumo.dev's, or the Cluster API
#: provider's).
API_VERSIONS = {info.plural: info.api_version for info in KINDS}


def get_obj(kind: str, name: str, namespace: str) -> dict[str, Any] | None:
    """The object, or None. Kumo's kinds are read straight from the API server (the tests
    poll them); other kinds through kubectl."""
    plural = KUMO_ALIASES.get(kind)
    if plural is not None:
        where = f"/apis/{API_VERSIONS[plural]}/namespaces/{namespace}/{plural}"
        return api_get(f"{where}/{name}")
    out = kubectl("get", kind, name, "-n", namespace, "-o", "json", "--ignore-not-found").stdout
    return json.loads(out) if out.strip() else None


def list_objs(plural: str, namespace: str, selector: str = "") -> list[dict[str, Any]]:
    """A Kumo kind's objects in ``namespace`` (with a label ``selector``), from the API server."""
    query = f"?labelSelector={quote(selector)}" if selector else ""
    where = f"/apis/{API_VERSIONS[plural]}/namespaces/{namespace}/{plural}"
    found = api_get(f"{where}{query}") or {}
    return list(found.get("items") or [])


@pytest.fixture(scope="session")
def crds(kube_env: KubeEnv) -> KubeEnv:
    """Kumo installed as a user installs it (`kubectl apply -k deploy/`): CRDs Established,
    namespace kumo-system, ServiceAccount and RBAC."""
    kubectl("apply", "-k", str(REPO_ROOT / "deploy"))
    for info in KINDS:
        kubectl("wait", "--for=condition=Established", f"crd/{info.crd_name}", "--timeout=60s")
    return kube_env


@pytest.fixture(scope="session")
def operator_kubeconfig(crds: KubeEnv) -> Path:
    """A kubeconfig with the token of ServiceAccount kumo-system/kumo (issued by the
    controller manager): the suite's operators run with exactly deploy/'s RBAC, so a
    missing or excessive rule shows up as a failing test, not in production."""

    # Since Kubernetes 1.24 a ServiceAccount gets no token Secret by itself: ask for
    # one, and the token controller fills it in.
    wait_until(
        "ServiceAccount kumo-system/kumo",
        lambda: kubectl("get", "sa", "kumo", "-n", LEASE_NAMESPACE, check=False).returncode == 0,
        60,
    )
    kubectl(
        "apply",
        "-f",
        "-",
        input=json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": "kubernetes.io/service-account-token",
                "metadata": {
                    "name": TOKEN_SECRET,
                    "namespace": LEASE_NAMESPACE,
                    "annotations": {"kubernetes.io/service-account.name": "kumo"},
                },
            }
        ),
    )

    def issued() -> dict | None:
        body = json.loads(
            kubectl("get", "secret", TOKEN_SECRET, "-n", LEASE_NAMESPACE, "-o", "json").stdout
        )
        return body if (body.get("data") or {}).get("token") else None

    secret = wait_until("kumo's token", issued, 60)
    admin = yaml.safe_load(crds.kubeconfig.read_text())
    cluster = admin["clusters"][0]["cluster"]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "lab", "cluster": cluster}],
        "users": [
            {"name": "kumo", "user": {"token": base64.b64decode(secret["data"]["token"]).decode()}}
        ],
        "contexts": [{"name": "kumo", "context": {"cluster": "lab", "user": "kumo"}}],
        "current-context": "kumo",
    }
    path = STATE / "kumo-operator.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


@pytest.fixture
def namespace(crds: KubeEnv) -> Iterator[str]:
    """A fresh namespace; objects left in it are released of finalizers and removed."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    kubectl("create", "namespace", name)
    yield name
    # One call, kinds in deletion order (kubectl deletes the types in the order given).
    kubectl("delete", ",".join(KUMO_KINDS), "--all", "-n", name, "--wait=false", check=False)
    if KumoOperator.running:  # Kumo deletes the cloud resources: no leaks between tests
        wait_until(f"Kumo objects in {name} deleted", lambda: not kumo_objects(name), 240)
    release_leftovers(name)
    # The namespace controller takes seconds per namespace; the next test need not wait
    # for it. ``namespaces_removed`` checks at the session's end that every one went.
    kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found")
    DELETED_NAMESPACES.append(name)


#: The namespaces ``namespace`` deleted without waiting.
DELETED_NAMESPACES: list[str] = []


@pytest.fixture(scope="session", autouse=True)
def namespaces_removed() -> Iterator[None]:
    """At the session's end, every test namespace is gone (one listing per poll); one the
    namespace controller cannot finish is finalized and named in the failure."""
    yield
    if not DELETED_NAMESPACES:
        return

    def left() -> set[str]:
        found = api_get("/api/v1/namespaces") or {}
        names = {item["metadata"]["name"] for item in found.get("items") or []}
        return names & set(DELETED_NAMESPACES)

    try:
        wait_until("the test namespaces removed", lambda: not left(), 180, interval=2)
    except AssertionError:
        stuck = sorted(left())
        for name in stuck:
            delete_namespace(name)
        raise AssertionError(
            f"namespaces the controller did not remove in 180 s: {stuck}"
        ) from None


def like(operator: KumoOperator, log_name: str) -> KumoOperator:
    """Another operator with the same credentials (a standby, a crashing one)."""
    return KumoOperator(
        operator.kube, operator.clouds_yaml, operator.cloud, log_name, operator.kubeconfig
    )


#: Kumo's plurals in deletion order: referrers and groups before what they point at or
#: made (a target's finalizer waits for its DNSRecords; a group remakes deleted members).
KUMO_KINDS = tuple(info.plural for info in deletion_order())
LEASE_NAMESPACE = "kumo-system"
#: The token Secret the suite asks for ServiceAccount kumo-system/kumo (tests only).
TOKEN_SECRET = "kumo-lab-token"


def kumo_objects(namespace: str, kube: KubeEnv | None = None) -> list[str]:
    """Kumo's objects in ``namespace`` (of the lab's cluster, or of ``kube``), as
    ``plural/name``."""
    if kube is None:
        return [
            f"{plural}/{item['metadata']['name']}"
            for plural in KUMO_KINDS
            for item in list_objs(plural, namespace)
        ]
    run = kube.kubectl
    return run(
        "get", ",".join(KUMO_KINDS), "-n", namespace, "-o", "name", check=False
    ).stdout.split()


def release_leftovers(namespace: str, kube: KubeEnv | None = None) -> None:
    """Remove the finalizers of Kumo's objects left in ``namespace``: nobody will
    finalize them (no operator runs), and the namespace could not go."""
    run = kube.kubectl if kube is not None else kubectl
    for ref in kumo_objects(namespace, kube):
        run(
            "patch",
            ref,
            "-n",
            namespace,
            "--type=merge",
            "-p",
            '{"metadata":{"finalizers":null}}',
            check=False,
        )


def lease_holder() -> str:
    """Who holds Kumo's leader Lease now ("" when released or never taken)."""
    out = kubectl(
        "get", "lease", "kumo", "-n", LEASE_NAMESPACE, "-o", "json", "--ignore-not-found"
    ).stdout
    return (json.loads(out).get("spec") or {}).get("holderIdentity") or "" if out.strip() else ""


def readyz(port: int) -> dict[str, Any]:
    """An operator's /readyz as JSON (its status code aside); {} while nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as r:
            return json.loads(r.read())  # type: ignore[no-any-return]
    except urllib.error.HTTPError as error:
        return json.loads(error.read())  # type: ignore[no-any-return]
    except OSError:
        return {}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class KumoOperator:
    """A `kumo run` process against the local lab, logging to .kumo-dev/logs.

    Every instance runs with leader election, like a real deployment: only the holder
    of the Lease kumo-system/kumo reconciles. ``health()`` reads its /readyz.
    """

    running = 0  # how many are running in this test session

    def __init__(
        self, kube: KubeEnv, clouds_yaml: str, cloud: str, log_name: str, kubeconfig: Path
    ) -> None:
        self.kube = kube
        self.kubeconfig = kubeconfig
        self.clouds_yaml = clouds_yaml
        self.cloud = cloud
        self.log_path = STATE / "logs" / log_name
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = free_port()
        self.started_at = datetime.now(UTC)  # of the latest start()

    def health(self) -> dict[str, Any]:
        return readyz(self.port)

    def metric(self, name: str, **labels: str) -> float:
        """The sum of a Prometheus metric's samples, e.g. kumo_reconciles_total; only
        those with ``labels`` (e.g. ``kind="volume"``) when given."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
            lines = r.read().decode().splitlines()
        wanted = [f'{key}="{value}"' for key, value in labels.items()]
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in lines
            if line.partition("{")[0].partition(" ")[0] == name and all(w in line for w in wanted)
        )

    def wait_role(self, role: str, timeout: float = 60) -> dict[str, Any]:
        return wait_until(  # type: ignore[no-any-return]
            f"operator {self.log_path.name} to be {role}",
            lambda: (h := self.health()).get("role") == role and h.get("ok") and h,
            timeout,
            interval=0.2,
        )

    def start(self, *extra: str, env: dict[str, str] | None = None) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.started_at = datetime.now(UTC)
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
                "--metrics-port",
                str(self.port),
                # Tests judge Kumo's own cleanup: the orphan sweep's safety net would hide
                # a leak. Its own test turns it on (a later flag wins).
                "--orphan-sweep",
                "report",
                *extra,
            ],
            env={**self.kube.env, "KUBECONFIG": str(self.kubeconfig), **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        KumoOperator.running += 1
        # The lab's Prometheus scrapes it while it runs (tests/integration/prometheus.py).
        prometheus.register(self.target, [f"127.0.0.1:{self.port}"], operator=self.log_path.stem)

    @property
    def target(self) -> str:
        return f"test-{self.port}"

    def kill(self) -> None:
        """SIGKILL: the crash a production operator must survive."""
        prometheus.unregister(self.target)
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=30)
            self.proc = None
            KumoOperator.running -= 1

    def terminate(self) -> None:
        """SIGTERM without waiting for the exit (see how fast a standby takes over)."""
        if self.proc is not None:
            self.proc.terminate()

    def stop(self) -> None:
        prometheus.unregister(self.target)
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


def _dev_operator(action: str) -> bool:
    """Start/stop/query the operator `make up` runs (dev/operator.sh)."""
    script = REPO_ROOT / "dev" / "operator.sh"
    return subprocess.run(["bash", str(script), action], capture_output=True).returncode == 0


@pytest.fixture(scope="session")
def kumo_operator(
    crds: KubeEnv, openstack_lab: str, operator_kubeconfig: Path
) -> Iterator[KumoOperator]:
    """Kumo leading for the whole session with the kumo-demo project's credentials.

    The suite kills and restarts its operators, so they must be the ones leading: the
    operator `make up` started is stopped for the session (gracefully: it hands the
    lease over) and started again afterwards.
    """
    paused = _dev_operator("status")
    if paused:
        _dev_operator("stop")
    operator = KumoOperator(
        crds, openstack_lab, "kumo-demo", "operator-test.log", operator_kubeconfig
    )
    operator.start()
    operator.wait_role("leader", 90)
    yield operator
    operator.stop()
    if paused:
        _dev_operator("start")

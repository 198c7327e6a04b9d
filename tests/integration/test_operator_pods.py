"""Kumo as it ships, on the lab's real node: the image (`make image`, imported into
containerd), installed with `kubectl apply -k deploy/overlays/lab` (deploy/ as users
get it, plus what a machine where everything listens on 127.0.0.1 needs), runs as two
Pods of the Deployment with the kumo ServiceAccount (exactly deploy/'s RBAC): both
Ready per their probes, one leading. It runs the seed story; when the leader Pod is
deleted the other leads within the Lease time, the Deployment makes a new Pod, and a
group scaled meanwhile ends with exactly one server per VM.

Pod Security: the shipped Pod (`kubectl kustomize deploy/`) is admitted by a namespace
enforcing `restricted` without a warning, where a Pod that may escalate is refused; the
lab's Pods, which need the host network, fail `restricted` by that alone."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration import prometheus
from tests.integration.helpers import (
    EXAMPLES,
    apply,
    default_cloud_secret,
    members_of,
    owned_servers,
    wait_gone,
    wait_ready,
)
from tests.integration.kube_fixtures import KubeEnv, delete_namespace, kubectl
from tests.integration.kumo_fixtures import (
    LEASE_NAMESPACE,
    STATE,
    KumoOperator,
    get_obj,
    lease_holder,
    wait_until,
)

REPO = Path(__file__).resolve().parents[2]
SEED = ("virtualmachine.yaml", "virtualmachinegroup.yaml", "loadbalancer.yaml")
#: deploy/base/manager.yaml's Lease (kumo run's default): a crashed leader is replaced
#: after this long; a Pod deleted gracefully releases it at once.
LEASE_SECONDS = 10
RESTRICTED = {
    f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "audit", "warn")
}


def pods() -> list[dict[str, Any]]:
    """The operator's Pods that are not being deleted."""
    out = kubectl("get", "pods", "-n", LEASE_NAMESPACE, "-l", "app=kumo", "-o", "json").stdout
    return [p for p in json.loads(out)["items"] if not p["metadata"].get("deletionTimestamp")]


def ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return pod["status"].get("phase") == "Running" and any(
        c["type"] == "Ready" and c["status"] == "True" for c in conditions
    )


def leader_pod() -> str:
    """The Pod holding the Lease (its identity starts with POD_NAME), or ""."""
    holder = lease_holder()
    return next(
        (p["metadata"]["name"] for p in pods() if holder.startswith(p["metadata"]["name"] + "_")),
        "",
    )


def two_ready_pods() -> list[str] | None:
    current = [p for p in pods() if ready(p)]
    return sorted(p["metadata"]["name"] for p in current) if len(current) == 2 else None


def shipped_pod() -> dict[str, Any]:
    """A Pod of the Deployment `kubectl apply -k deploy/` installs, as its ReplicaSet
    would make it."""
    rendered = yaml.safe_load_all(kubectl("kustomize", str(REPO / "deploy")).stdout)
    deployment = next(d for d in rendered if d["kind"] == "Deployment")
    template = deployment["spec"]["template"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "kumo-shipped", "labels": template["metadata"]["labels"]},
        "spec": template["spec"],
    }


@pytest.fixture
def restricted_namespace(crds: KubeEnv) -> Iterator[str]:
    """A scratch namespace enforcing (and warning at) Pod Security `restricted`, with a
    ServiceAccount `kumo` for the shipped Pod to name."""
    name = f"t-psa-{uuid.uuid4().hex[:6]}"
    namespace = {"apiVersion": "v1", "kind": "Namespace"}
    namespace["metadata"] = {"name": name, "labels": RESTRICTED}
    kubectl("apply", "-f", "-", input=json.dumps(namespace))
    kubectl("create", "serviceaccount", "kumo", "-n", name)
    yield name
    delete_namespace(name)


def dry_run_create(namespace: str, manifest: dict[str, Any]) -> subprocess.CompletedProcess:
    return kubectl(
        "create", "--dry-run=server", "-n", namespace, "-f", "-",
        input=json.dumps(manifest), check=False,
    )  # fmt: skip


def test_restricted_admits_the_shipped_pod_and_refuses_one_that_may_escalate(
    restricted_namespace: str,
) -> None:
    pod = shipped_pod()
    admitted = dry_run_create(restricted_namespace, pod)
    assert admitted.returncode == 0, admitted.stderr
    assert "Warning" not in admitted.stderr, admitted.stderr  # nothing to audit or warn of

    escalating = copy.deepcopy(pod)
    escalating["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = True
    refused = dry_run_create(restricted_namespace, escalating)
    assert refused.returncode != 0
    assert 'violates PodSecurity "restricted:latest"' in refused.stderr, refused.stderr
    assert "allowPrivilegeEscalation != false" in refused.stderr, refused.stderr


def restricted_violations() -> tuple[dict[str, set[str]], str]:
    """What Pod Security says of kumo-system's running Pods were `restricted` enforced
    there (a server dry run of the label): pod (or pod group, "kumo-… (and 1 other
    pod)") -> the checks it fails; and the warnings as kubectl printed them."""
    proc = kubectl(
        "label", "--dry-run=server", "--overwrite", "namespace", LEASE_NAMESPACE,
        "pod-security.kubernetes.io/enforce=restricted",
    )  # fmt: skip
    found: dict[str, set[str]] = {}
    for line in proc.stderr.splitlines():
        if m := re.match(r"Warning: (kumo-\S+(?: \(and \d+ other pods?\))?): (.+)$", line):
            found[m[1]] = {reason.strip() for reason in m[2].split(",")}
    return found, proc.stderr


def assert_restricted_but_for_the_host_network(names: list[str]) -> None:
    """The lab's Pods run in a namespace that enforces `privileged` (the host network)
    and audits and warns at `restricted`; judged by `restricted` they fail the host
    namespaces check and nothing else. And the node ran them as the Pod asks: seccomp
    filtering on, /tmp a tmpfs."""
    labels = json.loads(kubectl("get", "namespace", LEASE_NAMESPACE, "-o", "json").stdout)
    labels = labels["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"
    assert labels["pod-security.kubernetes.io/audit"] == "restricted"
    assert labels["pod-security.kubernetes.io/warn"] == "restricted"
    violations, warnings = restricted_violations()
    # Pods failing the same checks are one warning, named by the first ("kumo-… (and 2
    # other pods)"); a previous ReplicaSet's Pod may still be terminating.
    others = [re.search(r"\(and (\d+) other pods?\)", group) for group in violations]
    counted = sum(1 + (int(m[1]) if m else 0) for m in others)
    assert counted >= len(names), warnings
    assert all(reasons == {"host namespaces"} for reasons in violations.values()), warnings
    for name in names:
        # The lab's node is this machine: the Pod's process is one of ours to read
        # (`kubectl exec` cannot reach the lab's kubelet, whose node has no address).
        pid = pod_process(name)
        status = (pid / "status").read_text()
        assert re.search(r"^Seccomp:\s+2$", status, re.M), status  # a seccomp filter is on
        mounted = [line.split()[1:3] for line in (pid / "mounts").read_text().splitlines()]
        assert ["/tmp", "tmpfs"] in mounted, mounted


def pod_process(name: str) -> Path:
    """/proc/<pid> of the `kumo run` process of Pod ``name`` on the lab's node."""
    for proc in Path("/proc").iterdir():
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"POD_NAME={name}".encode() in environ and b"run" in cmdline:
            return proc
    raise AssertionError(f"no process of Pod {name} on this machine")


@pytest.fixture
def pod_operators(
    kumo_operator: KumoOperator, crds: KubeEnv, openstack_lab: str
) -> Iterator[list[str]]:
    """The Deployment's two Pods as the operator (the session's operator stopped
    meanwhile: it hands the Lease over). Yields the Pods' names once both are Ready."""
    imported = subprocess.run(
        ["bash", str(REPO / "dev/kube/node.sh"), "import-image"], capture_output=True, text=True
    )
    assert imported.returncode == 0, f"node.sh import-image: {imported.stderr[-2000:]}"
    secret = default_cloud_secret(openstack_lab, LEASE_NAMESPACE)
    kumo_operator.stop()
    try:
        kubectl("apply", "-k", str(REPO / "deploy/overlays/lab"))
        kubectl("apply", "-f", "-", input=json.dumps(secret))
        kubectl("rollout", "restart", "deployment/kumo", "-n", LEASE_NAMESPACE)
        kubectl(
            "rollout",
            "status",
            "deployment/kumo",
            "-n",
            LEASE_NAMESPACE,
            "--timeout=240s",
            timeout=260,
        )
        names = wait_until("two Ready operator Pods", two_ready_pods, 120)
        # The lab's Prometheus scrapes both Pods (each picked a free port on the host's
        # network and wrote it to its /tmp/metrics-port).
        ports = {
            name: (pod_process(name) / "root/tmp/metrics-port").read_text().strip()
            for name in names
        }
        prometheus.register(
            "operator-pods", [f"127.0.0.1:{port}" for port in ports.values()], operator="pod"
        )
        yield names
    finally:
        prometheus.unregister("operator-pods")
        logs = STATE / "logs"
        for pod_dir in (STATE / "node/pod-logs").glob(f"{LEASE_NAMESPACE}_kumo-*"):
            for log in pod_dir.glob("kumo/*.log"):
                (logs / f"pod-{pod_dir.name.split('_')[1]}.log").write_bytes(log.read_bytes())
        kubectl("delete", "deployment", "kumo", "-n", LEASE_NAMESPACE, "--ignore-not-found")
        wait_until("the operator Pods gone", lambda: not pods(), 120)
        kumo_operator.start()
        kumo_operator.wait_role("leader", 90)


def test_two_pods_ready_restricted_but_for_the_host_network_one_leads_runs_the_seed_story(
    pod_operators: list[str], namespace: str, demo_conn: Any
) -> None:
    assert_restricted_but_for_the_host_network(pod_operators)
    leader = wait_until("a Pod to lead", leader_pod, 60)
    assert leader in pod_operators
    for pod in pods():  # both Ready per their probes: the leader and a healthy standby
        assert ready(pod), pod["metadata"]["name"]
        assert pod["spec"]["serviceAccountName"] == "kumo"
        assert pod["spec"]["nodeName"] == "kumo-lab-node"
    # The lab's Prometheus scrapes both replicas; one says it leads (kumo_leader).
    wait_until(
        "Prometheus scraping both Pods, one leading",
        lambda: (
            len(prometheus.query('up{job="kumo",operator="pod"} == 1')) == 2
            and prometheus.query('sum(kumo_leader{operator="pod"})')[0]["value"][1] == "1"
        ),
        60,
    )

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
    for kind, name in (
        ("vmg", "virtualmachinegroup-sample"),
        ("lb", "loadbalancer-sample"),
        ("vm", "vm-sample"),
    ):
        wait_gone(kind, name, namespace, timeout=300)
    for member in [vm, *members]:
        assert owned_servers(demo_conn, member["metadata"]["uid"]) == []


def test_leader_pod_deleted_the_other_leads_and_a_group_scaled_meanwhile_converges(
    pod_operators: list[str], namespace: str, demo_conn: Any
) -> None:
    group = {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "VirtualMachineGroup",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "haPolicy": "soft",
            "template": {"image": "centos79", "flavor": "m1.tiny"},
        },
    }
    apply(namespace, group)
    wait_ready("vmg", "web", namespace, timeout=240)
    leader = wait_until("a Pod to lead", leader_pod, 60)
    standby = next(name for name in pod_operators if name != leader)

    # Lost at once, like a crashed node or an OOM kill: the Lease is not released and
    # runs out. (A graceful delete hands the Lease over when the leader's in-flight
    # reconciles end, which under load can take longer than the Lease.)
    kubectl("delete", "pod", leader, "-n", LEASE_NAMESPACE, "--grace-period=0", "--force")
    deleted = time.monotonic()
    kubectl("scale", "vmg", "web", "-n", namespace, "--replicas=4")
    # The standby or the Deployment's replacement Pod: both race for the Lease once it
    # runs out, and either may win (both are the same Deployment's replicas).
    successor = wait_until(
        "another Pod to lead",
        lambda: (pod := leader_pod()) not in ("", leader) and pod,
        LEASE_SECONDS + 8,
    )
    took = time.monotonic() - deleted
    # Within the Lease and one standby retry (2 s) of the loss, plus polling slack.
    assert took <= LEASE_SECONDS + 8, f"failover took {took:.1f}s"

    replacement = wait_until(
        "the Deployment's new Pod Ready",
        lambda: (names := two_ready_pods()) and leader not in names and standby in names and names,
        180,
    )
    assert len(replacement) == 2 and successor in replacement
    scaled = wait_until(
        "four Ready members",
        lambda: (
            ((obj := get_obj("vmg", "web", namespace)) or {}).get("status", {}).get("readyReplicas")
            == 4
            and obj
        ),
        300,
    )
    members = members_of(namespace, "web")
    assert len(members) == 4, scaled["status"]
    for member in members:  # exactly one server per VM, the one its status names
        assert [s.id for s in owned_servers(demo_conn, member["metadata"]["uid"])] == [
            member["status"]["id"]
        ], member["metadata"]["name"]
    kubectl("delete", "vmg", "web", "-n", namespace, "--wait=false")
    wait_gone("vmg", "web", namespace, timeout=300)
    for member in members:
        wait_until(
            f"{member['metadata']['name']}'s server deleted",
            lambda m=member: owned_servers(demo_conn, m["metadata"]["uid"]) == [],
            120,
        )

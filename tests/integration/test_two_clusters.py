"""Two clusters, one project (issue 38): the lab's cluster and a second one
(dev/kube/second.sh: its own etcd and kube-apiserver), each with its own Kumo, both
sweeping for real (``--orphan-sweep delete``, a 2 s grace, a sweep a second, volumes
opted in), sharing the kumo-demo project and its user. Each makes a VirtualMachineGroup,
a LoadBalancer following it, a Volume, a KeyPair, a Network with a router and a
SecurityGroup.

After three sweeps on each side each still has every resource of its own, read from the
cloud by ID, and neither sweep reported one of the other's; deleting one cluster's
objects deletes its resources and none of the other's. Kumo tells the clusters apart by
the cluster ID in its markers (the kube-system namespace's UID; docs/install.md,
"Running several clusters on one cloud"): without it each sweep takes the other's
resources for leaks, and one of them deletes the other's after the grace.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openstack.exceptions as os_exc
import pytest
import yaml

from tests.integration.helpers import VM_SPEC, condition, lb_port
from tests.integration.kube_fixtures import KubeEnv, delete_namespace
from tests.integration.kumo_fixtures import (
    KUMO_KINDS,
    REPO_ROOT,
    KumoOperator,
    kumo_objects,
    like,
    release_leftovers,
    wait_until,
)
from tests.integration.test_keypairs import new_key

SECOND_SH = REPO_ROOT / "dev" / "kube" / "second.sh"
#: Both Kumos: the sweep deletes for real and fast, volumes included.
SWEEP = (
    "--orphan-sweep",
    "delete",
    "--orphan-grace",
    "2",
    "--sweep-seconds",
    "1",
    "--orphan-sweep-data",
    "volume",
)
#: Sweeps each side makes while both clusters' resources exist (the grace is two).
SWEEPS = 3
ORPHAN_EVENTS = ("OrphanFound", "OrphanDeleted", "OrphanSweepSuspended")
#: What a resource being deleted or gone shows (Nova, Cinder, Octavia).
GOING = {"DELETED", "DELETING", "SOFT_DELETED", "PENDING_DELETE", "ERROR_DELETING"}


@pytest.fixture(scope="module")
def second_cluster(kube_env: KubeEnv) -> Iterator[KubeEnv]:
    """The second cluster, started for this module when it was not running and then
    stopped again (its data kept: its cluster ID stays)."""
    running = subprocess.run(["bash", str(SECOND_SH), "status"], capture_output=True)
    started = subprocess.run(
        ["bash", str(SECOND_SH), "start"], capture_output=True, text=True, timeout=300
    )
    if started.returncode != 0:
        pytest.fail(f"dev/kube/second.sh start failed:\n{started.stderr[-4000:]}", pytrace=False)
    yield KubeEnv(
        kubeconfig=Path(started.stdout.split()[-1]),
        kubectl_path=kube_env.kubectl_path,
        server="https://127.0.0.1:6444",
    )
    if running.returncode != 0:
        subprocess.run(["bash", str(SECOND_SH), "stop"], capture_output=True)


@pytest.fixture
def second_namespace(second_cluster: KubeEnv) -> Iterator[str]:
    """A fresh namespace of the second cluster (no namespace controller runs there)."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    second_cluster.kubectl("create", "namespace", name)
    yield name
    release_leftovers(name, second_cluster)
    delete_namespace(name, timeout=5, kube=second_cluster)


def stack(cidr: str) -> list[dict[str, Any]]:
    """One cluster's objects: a group of two behind a load balancer, with a keypair and a
    security group, a volume, a network with a router."""
    manifests: list[dict[str, Any]] = [
        {
            "kind": "Network",
            "metadata": {"name": "net"},
            "spec": {"subnets": [{"cidr": cidr}], "router": {}},
        },
        {
            "kind": "SecurityGroup",
            "metadata": {"name": "sg"},
            "spec": {"rules": [{"protocol": "tcp", "port": 80, "cidr": "0.0.0.0/0"}]},
        },
        {"kind": "KeyPair", "metadata": {"name": "key"}, "spec": {"publicKey": new_key()}},
        {"kind": "Volume", "metadata": {"name": "data"}, "spec": {"size": 1}},
        {
            "kind": "VirtualMachineGroup",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 2,
                "template": {**VM_SPEC, "keyName": "key", "securityGroups": ["sg"]},
            },
        },
        {
            "kind": "LoadBalancer",
            "metadata": {"name": "lb"},
            "spec": {"ports": [lb_port("web", protocol="tcp")]},
        },
    ]
    return [{"apiVersion": "kumo.dev/v1alpha1", **m} for m in manifests]


#: Reads one cloud resource by ID (a keypair by name); NotFound when it is gone.
READ: dict[str, Callable[[Any, str], Any]] = {
    "server": lambda conn, id_: conn.compute.get_server(id_),
    "server group": lambda conn, id_: conn.compute.get_server_group(id_),
    "keypair": lambda conn, name: conn.compute.get_keypair(name),
    "load balancer": lambda conn, id_: conn.load_balancer.get_load_balancer(id_),
    "volume": lambda conn, id_: conn.block_storage.get_volume(id_),
    "network": lambda conn, id_: conn.network.get_network(id_),
    "subnet": lambda conn, id_: conn.network.get_subnet(id_),
    "router": lambda conn, id_: conn.network.get_router(id_),
    "security group": lambda conn, id_: conn.network.get_security_group(id_),
}


def alive(conn: Any, kind: str, id_: str) -> bool:
    try:
        found = READ[kind](conn, id_)
    except os_exc.NotFoundException:
        return False
    status = getattr(found, "provisioning_status", None) or getattr(found, "status", None)
    return str(status or "").upper() not in GOING


@dataclass
class Cluster:
    """One side: its API server, namespace and Kumo."""

    name: str
    kube: KubeEnv
    namespace: str
    kumo: KumoOperator

    def get(self, kind: str, name: str) -> dict[str, Any]:
        out = self.kube.kubectl("get", kind, name, "-n", self.namespace, "-o", "json").stdout
        return json.loads(out)  # type: ignore[no-any-return]

    def ready(self) -> bool:
        objects = json.loads(
            self.kube.kubectl(
                "get", ",".join(KUMO_KINDS), "-n", self.namespace, "-o", "json"
            ).stdout
        )["items"]
        return len(objects) == 6 + 2 and all(  # the stack and the group's two members
            condition(o).get("status") == "True" for o in objects
        )

    def resources(self) -> list[tuple[str, str]]:
        """(kind, ID) of every cloud resource its objects hold, from their status."""
        net = self.get("net", "net")["status"]
        members = json.loads(
            self.kube.kubectl(
                "get", "vm", "-n", self.namespace, "-l", "kumo.dev/group=web", "-o", "json"
            ).stdout
        )["items"]
        found = [
            ("network", net["id"]),
            ("subnet", net["subnets"][0]["id"]),
            ("router", net["routerId"]),
            ("security group", self.get("sg", "sg")["status"]["id"]),
            ("keypair", self.get("keypair", "key")["status"]["keyName"]),
            ("volume", self.get("vol", "data")["status"]["id"]),
            ("server group", self.get("vmg", "web")["status"]["serverGroupId"]),
            ("load balancer", self.get("lb", "lb")["status"]["id"]),
            *(("server", m["status"]["id"]) for m in members),
        ]
        assert all(id_ for _, id_ in found) and len(found) == 10, found
        return found

    def sweep_events(self) -> list[str]:
        """The orphan sweep's events in its namespace (where a sweep reports)."""
        out = self.kube.kubectl("get", "events", "-n", self.namespace, "-o", "json").stdout
        return [e["message"] for e in json.loads(out)["items"] if e["reason"] in ORPHAN_EVENTS]

    def sweeps(self) -> float:
        return self.kumo.metric("kumo_orphan_sweeps_total")

    def delete_all(self) -> None:
        for kind in KUMO_KINDS:
            self.kube.kubectl("delete", kind, "--all", "-n", self.namespace, "--wait=false")

    def gone(self) -> bool:
        return not kumo_objects(self.namespace, self.kube)


def wait_sweeps(clusters: list[Cluster], count: int = SWEEPS) -> None:
    """Until each cluster's Kumo has swept ``count`` more times."""
    start = [c.sweeps() for c in clusters]
    wait_until(
        f"{count} more sweeps by {', '.join(c.name for c in clusters)}",
        lambda: all(c.sweeps() >= s + count for c, s in zip(clusters, start, strict=True)),
        30,
    )


def lost(conn: Any, resources: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [r for r in resources if not alive(conn, *r)]


def delete(cluster: Cluster, resources: list[tuple[str, str]], conn: Any) -> None:
    """Delete the cluster's objects; until its Kumo has deleted them and their resources."""
    cluster.delete_all()
    wait_until(f"the {cluster.name} cluster's objects deleted", cluster.gone, 180)
    wait_until(
        f"the {cluster.name} cluster's resources gone",
        lambda: len(lost(conn, resources)) == len(resources),
        60,
    )


def test_two_clusters_on_one_project_keep_to_their_own(
    namespace: str,
    kumo_operator: KumoOperator,
    second_cluster: KubeEnv,
    second_namespace: str,
    demo_conn: Any,
) -> None:
    kumo_operator.stop()  # the first cluster's Kumo is this test's, with its flags
    first = Cluster(
        "first", kumo_operator.kube, namespace, like(kumo_operator, "operator-two-clusters-1.log")
    )
    second = Cluster(
        "second",
        second_cluster,
        second_namespace,
        KumoOperator(
            second_cluster,
            kumo_operator.clouds_yaml,
            kumo_operator.cloud,
            "operator-two-clusters-2.log",
            second_cluster.kubeconfig,
        ),
    )
    both = [first, second]
    try:
        for cluster in both:
            cluster.kumo.start(*SWEEP)
        identities = {c.kumo.wait_role("leader", 90)["cluster"] for c in both}
        assert len(identities) == 2, f"two clusters, two identities: {identities}"

        for cluster, cidr in zip(both, ("10.91.0.0/24", "10.92.0.0/24"), strict=True):
            cluster.kube.kubectl(
                "apply",
                "-n",
                cluster.namespace,
                "-f",
                "-",
                input=yaml.safe_dump_all(stack(cidr)),
            )
        for cluster in both:
            wait_until(f"the {cluster.name} cluster's objects Ready", cluster.ready, 240)
        own = {c.name: c.resources() for c in both}
        assert not set(own["first"]) & set(own["second"])

        wait_sweeps(both)
        for cluster in both:
            assert lost(demo_conn, own[cluster.name]) == [], f"{cluster.name}: resources lost"
            reported = [
                m
                for m in cluster.sweep_events()
                if any(id_ in m for _, id_ in own["first"] + own["second"])
            ]
            assert reported == [], f"the {cluster.name} cluster's sweep saw orphans"

        # Deleting the second cluster's objects deletes its resources, none of the first's.
        delete(second, own["second"], demo_conn)
        wait_sweeps([first])
        assert lost(demo_conn, own["first"]) == [], "the first cluster's resources are kept"

        delete(first, own["first"], demo_conn)
    finally:
        for cluster in both:  # a failed test's objects: deleted by their own Kumo
            with contextlib.suppress(Exception):
                cluster.delete_all()
                wait_until(f"the {cluster.name} cluster's objects deleted", cluster.gone, 180)
        for cluster in both:
            cluster.kumo.stop()
        kumo_operator.start()

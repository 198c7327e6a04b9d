"""A Cluster API world for the provider's unit tests: the CAPI objects a KumoCluster and a
KumoMachine read (a Cluster, Machines, a bootstrap Secret) in the fake store, as CAPI
v1.14 writes them (owner references, the labels it copies onto infrastructure objects),
and stand-ins for the parts' own controllers (a part made Ready with the address its
kind reports)."""

from __future__ import annotations

import base64
from typing import Any

from kumo.api.kinds import KUMO_CLUSTER, KUMO_MACHINE
from kumo.engine.objects import Body
from kumo.kinds import capi
from kumo.kinds.kumocluster.actuator import KumoClusterActuator
from kumo.kinds.kumomachine.actuator import KumoMachineActuator
from kumo.kinds.registry import RECORDS
from tests.unit.fakes import World

CLUSTER = "prod"
INFRA = "prod-x7k2p"  # the topology controller's name for the KumoCluster
NS = "default"
#: A kubeadm bootstrap Secret's data, with what cloud-init is picky about (a jinja
#: header, indentation, a trailing newline).
BOOTSTRAP = "## template: jinja\n#cloud-config\nwrite_files:\n-   path: /etc/x\n    content: |\n      a: 1\nruncmd:\n  - 'kubeadm init --config /run/kubeadm/kubeadm.yaml'\n"
READY = [{"type": "Ready", "status": "True", "reason": "Ready", "message": ""}]
#: The kinds of a KumoCluster's parts (what its registry record says it creates).
PART_KINDS = tuple(i.kind for r in RECORDS if r.info is KUMO_CLUSTER for i in r.creates)


def owner(kind: str, name: str, uid: str, api: str = "cluster.x-k8s.io/v1beta2") -> Body:
    return {"apiVersion": api, "kind": kind, "name": name, "uid": uid}


def add_cluster(world: World, *, paused: bool = False, name: str = CLUSTER) -> Body:
    body = {
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Cluster",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-cluster-{name}"},
        "spec": {
            "paused": paused,
            "infrastructureRef": {
                "apiGroup": "infrastructure.kumo.dev",
                "kind": "KumoCluster",
                "name": INFRA,
            },
        },
    }
    world.store.put("Cluster", body)
    return body


def add_kumo_cluster(world: World, spec: Body | None = None, *, owned: bool = True) -> Body:
    meta: dict[str, Any] = {"labels": {capi.CLUSTER_NAME_LABEL: CLUSTER}}
    if owned:
        meta["ownerReferences"] = [owner("Cluster", CLUSTER, f"uid-cluster-{CLUSTER}")]
    return world.add(KUMO_CLUSTER, INFRA, spec or {}, **meta)


def machine_labels(*, control_plane: bool = False, deployment: str | None = None) -> dict:
    labels = {capi.CLUSTER_NAME_LABEL: CLUSTER}
    if control_plane:
        labels.update(
            {capi.CONTROL_PLANE_LABEL: "", f"{capi.CAPI_GROUP}/control-plane-name": CLUSTER}
        )
    if deployment:
        labels.update({capi.DEPLOYMENT_LABEL: deployment, capi.SET_LABEL: f"{deployment}-5d8f"})
    return labels


def add_machine(
    world: World,
    name: str,
    *,
    secret: str | None = None,
    failure_domain: str | None = None,
    **labels: Any,
) -> Body:
    """A Machine and its KumoMachine (named alike, as CAPI names them)."""
    spec: Body = {"clusterName": CLUSTER, "bootstrap": {}}
    if secret:
        spec["bootstrap"]["dataSecretName"] = secret
    if failure_domain:
        spec["failureDomain"] = failure_domain
    machine = {
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-machine-{name}"},
        "spec": spec,
    }
    world.store.put("Machine", machine)
    world.add(
        KUMO_MACHINE,
        name,
        {"image": "centos79", "flavor": "n3-1vcpu-2gb"},
        labels=machine_labels(**labels),
        ownerReferences=[owner("Machine", name, f"uid-machine-{name}")],
    )
    return machine


def bootstrap(world: World, name: str, text: str = BOOTSTRAP) -> None:
    """The bootstrap provider writes the Machine's data Secret and names it."""
    world.store.put(
        "Secret",
        {
            "metadata": {"name": name, "namespace": NS},
            "data": {
                "value": base64.b64encode(text.encode()).decode(),
                "format": "Y2xvdWQtY29uZmln",
            },
        },
    )
    world.stored("Machine", name)["spec"]["bootstrap"]["dataSecretName"] = name


def settle_parts(world: World, vip: str = "10.6.0.10") -> None:
    """The parts' controllers make them Ready (the LB with its VIP, the FloatingIP with its
    address, the DNSRecord with its name)."""
    for kind in PART_KINDS:
        for body in world.store.list(kind, NS):
            name = body["metadata"]["name"]
            status: Body = {"conditions": READY, "id": f"{kind.lower()}-{name}"}
            status["name"] = f"{NS}-{name}"  # a Network's and a SecurityGroup's Neutron name
            if kind == "LoadBalancer":
                status["vip"] = vip
            elif kind == "FloatingIP":
                status["address"] = "203.0.113.7"
            elif kind == "DNSRecord":
                status["fqdn"] = "api.prod.example.org."
            body["status"] = status


def settle_vm(world: World, name: str, server: str = "srv-1", ip: str = "10.6.0.21") -> None:
    """The VM's controller: its server ACTIVE at ``ip``."""
    world.stored("VirtualMachine", name)["status"] = {
        "id": server,
        "ip": ip,
        "addresses": [{"network": CLUSTER, "ip": ip, "version": 4}],
        "conditions": READY,
    }


def provisioned(world: World, spec: Body | None = None) -> World:
    """A Cluster whose KumoCluster is provisioned (parts Ready, endpoint written)."""
    add_cluster(world)
    add_kumo_cluster(world, spec)
    world.run(KumoClusterActuator(), INFRA)
    settle_parts(world)
    world.run(KumoClusterActuator(), INFRA)
    status = world.obj(KUMO_CLUSTER, INFRA).status
    assert status["initialization"] == {"provisioned": True}, status
    return world


def run_cluster(world: World) -> float | None:
    return world.run(KumoClusterActuator(), INFRA)


def run_machine(world: World, name: str) -> float | None:
    return world.run(KumoMachineActuator(), name)


def ready(body: Body) -> Body:
    return next(
        c for c in (body.get("status") or {}).get("conditions") or [] if c["type"] == "Ready"
    )

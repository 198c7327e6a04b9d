"""Kumo as a Cluster API infrastructure provider (issue 42, deliverable 2), no boot: the
lab's Nova runs no server, so the cluster never comes up; what Kumo owes CAPI does.

On a CAPI management cluster of its own (dev/capi, https://127.0.0.1:6445, started for
this module: tests/integration/capi_fixtures.py), with Kumo installed as deploy/ and
deploy/capi install it and run with its ServiceAccount's rights, examples/capi/cluster.yaml
(the ClusterClass kumo-kubeadm) is applied:

* the KumoCluster is provisioned, its endpoint the API load balancer's VIP (its own
  address, not the one the lab's no-op Octavia gives every load balancer);
* the control plane's KumoMachine is provisioned with ``openstack:///<server ID>``;
* the server's user data, as Nova holds it, is byte for byte the Machine's bootstrap
  Secret;
* the server is in an anti-affinity server group of its set;
* the API load balancer's only member is the server's address;
* deleting the Cluster leaves nothing, in Kubernetes or in OpenStack.

Every wait is a condition with a deadline; nothing is timed.
"""

from __future__ import annotations

import base64
from typing import Any

from kumo.kinds import capi
from tests.integration.capi_fixtures import EXAMPLE, get, items
from tests.integration.helpers import condition, kumo_leftovers, pool_member_addresses
from tests.integration.kube_fixtures import KubeEnv
from tests.integration.kumo_fixtures import KUMO_KINDS, KumoOperator, wait_until

CLUSTER = "demo"  # examples/capi/cluster.yaml's
#: What must be gone after the Cluster's deletion: every Kumo kind's objects, and CAPI's.
LEFT = ",".join((*KUMO_KINDS, "clusters.cluster.x-k8s.io", "machines.cluster.x-k8s.io"))
#: Deadlines (within the suite's 600 s per test): the first server in a fresh network,
#: behind a new load balancer (the lab ran it in 79 s beside the rest of the suite), and
#: the whole cluster's deletion.
PROVISION_SECONDS = 240
DELETE_SECONDS = 180


def provisioned(body: dict[str, Any] | None) -> dict[str, Any] | None:
    status = (body or {}).get("status") or {}
    return body if (status.get("initialization") or {}).get("provisioned") else None


def user_data(admin_conn: Any, server_id: str) -> bytes:
    """The user data Nova holds for a server (admin, microversion 2.3), decoded."""
    answer = admin_conn.compute.get(f"/servers/{server_id}", microversion="2.3")
    answer.raise_for_status()
    return base64.b64decode(answer.json()["server"]["OS-EXT-SRV-ATTR:user_data"])


def test_a_cluster_is_provisioned_on_kumo_and_its_deletion_leaves_nothing(
    capi_management: KubeEnv,
    capi_kumo: KumoOperator,
    capi_namespace: str,
    demo_conn: Any,
    admin_conn: Any,
) -> None:
    env, ns = capi_management, capi_namespace
    env.kubectl("apply", "-n", ns, "-f", str(EXAMPLE))

    def kumo_cluster() -> dict[str, Any] | None:
        found = items(env, "kumoclusters", ns, "-l", f"{capi.CLUSTER_NAME_LABEL}={CLUSTER}")
        return provisioned(found[0]) if found else None

    infra = wait_until("the KumoCluster provisioned", kumo_cluster, PROVISION_SECONDS, 2)
    assert condition(infra)["status"] == "True", infra["status"]
    endpoint = infra["spec"]["controlPlaneEndpoint"]
    assert endpoint == {"host": infra["status"]["vip"], "port": 6443}
    # The API's own VIP (the subnet's last address but one), not the address the lab's
    # no-op Octavia gives every load balancer that asks for none (198.51.100.1).
    assert infra["status"]["vip"] == "10.6.0.254"
    cluster = get(env, "clusters.cluster.x-k8s.io", CLUSTER, ns)
    assert cluster is not None
    assert cluster["spec"]["controlPlaneEndpoint"] == endpoint, "CAPI took Kumo's endpoint"
    # Every part is a Kumo object the KumoCluster owns, carrying the cluster's label.
    parts = items(env, "net,sg,lb", ns)
    assert len(parts) == 4
    for part in parts:
        assert part["metadata"]["labels"][capi.CLUSTER_NAME_LABEL] == CLUSTER
        (owner,) = part["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"]) == ("KumoCluster", infra["metadata"]["uid"])

    def control_plane_machine() -> dict[str, Any] | None:
        found = items(env, "kumomachines", ns, "-l", capi.CONTROL_PLANE_LABEL)
        return provisioned(found[0]) if found else None

    machine = wait_until(
        "the control plane's KumoMachine provisioned", control_plane_machine, PROVISION_SECONDS, 2
    )
    name = machine["metadata"]["name"]
    vm = get(env, "vm", name, ns)
    assert vm is not None
    server_id = vm["status"]["id"]
    assert machine["spec"]["providerID"] == f"openstack:///{server_id}"
    assert vm["spec"]["replacementPolicy"] == "Never"
    assert vm["spec"]["metadata"] == {"kumo.dev:boot-shim": "true"}, "the lab's boot shim"
    capi_machine = wait_until(
        "CAPI's Machine to take the providerID",
        lambda: (
            (m := get(env, "machines.cluster.x-k8s.io", name, ns))
            and (m.get("spec") or {}).get("providerID") == machine["spec"]["providerID"]
            and m
        ),
        60,
    )

    # Nova boots the server with the bootstrap Secret's bytes, unchanged.
    secret_name = capi_machine["spec"]["bootstrap"]["dataSecretName"]
    secret = get(env, "secret", secret_name, ns)
    assert secret is not None
    bootstrap = base64.b64decode(secret["data"]["value"])
    assert user_data(admin_conn, server_id) == bootstrap
    assert bootstrap.startswith(b"## template: jinja"), "CAPI's cloud-init"

    # The server is in its set's anti-affinity server group.
    group_id = vm["status"]["serverGroupId"]
    group = demo_conn.compute.get_server_group(group_id)
    assert group.policy == "anti-affinity" or "anti-affinity" in (group.policies or [])
    assert server_id in group.member_ids
    infra = get(env, "kumoclusters", infra["metadata"]["name"], ns) or {}
    listed = {g["name"]: g["id"] for g in infra["status"]["serverGroups"]}
    assert listed.get("control-plane") == group_id

    # The API load balancer's pool holds the server's address, and nothing else.
    lb = get(env, "lb", f"{CLUSTER}-api", ns)
    assert lb is not None
    wait_until(
        "the API load balancer's pool to hold the server",
        lambda: (
            pool_member_addresses(demo_conn, lb["status"]["id"]) == {6443: {vm["status"]["ip"]}}
        ),
        120,
        2,
    )

    env.kubectl("delete", "clusters.cluster.x-k8s.io", CLUSTER, "-n", ns, "--wait=false")

    def nothing_left() -> bool:
        return not env.kubectl("get", LEFT, "-n", ns, "-o", "name").stdout.split()

    wait_until("the Cluster and every object it made deleted", nothing_left, DELETE_SECONDS, 2)
    try:
        wait_until(
            "no resource of the namespace left in OpenStack",
            lambda: not any(kumo_leftovers(demo_conn, ns).values()),
            60,
            2,
        )
    except AssertionError:
        raise AssertionError(f"left in OpenStack: {kumo_leftovers(demo_conn, ns)}") from None
    assert capi_kumo.proc is not None and capi_kumo.proc.poll() is None, "Kumo ran throughout"

"""KumoMachine decisions, free of I/O: when its VirtualMachine can be made and what it
is, and the status CAPI reads from it.

The VirtualMachine (named like the KumoMachine, owned by it) boots with the Machine's
bootstrap Secret as its user data (``initScript.secretRef``, key ``value``: Nova gets
the Secret's bytes unchanged), on the cluster's Network, with the cluster's ``-node``
SecurityGroup (and ``-api`` on the control plane), in its machine set's server group
(the KumoCluster's status names it), in the Machine's failure domain, with
``replacementPolicy: Never``: a Machine's providerID cannot change, so a lost or broken
server is reported (the VM's ``ServerLost``, ``ServerError``) and MachineHealthCheck
replaces the Machine. The control plane's VMs carry the ``kumo.dev/group`` label the API
load balancer's pool follows; every server, the metadata the lab's boot shim looks for.

It is made once the Cluster's infrastructure is provisioned, the Machine has its
bootstrap data, and the set's server group exists; never changed afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kumo.api import kinds
from kumo.api.capi import KumoMachineSpec
from kumo.engine.errors import TerminalError
from kumo.engine.lifecycle import Wait
from kumo.engine.objects import Body
from kumo.engine.result import Result
from kumo.kinds import capi, children
from kumo.kinds.labels import GROUP_LABEL

#: The providerID of a Kumo server, as OpenStack's cloud provider writes it on the Node.
PROVIDER_ID = "openstack:///{}"
#: The VM's Ready reasons that mean the server is gone for good for this Machine.
NEVER_REBUILT = frozenset({"ServerLost", "ServerError", "ReplacementRefused"})
#: CAPI's v1beta1 failure reason for a machine whose server cannot come back.
UPDATE_ERROR = "UpdateError"
#: The bootstrap data key of CAPI's bootstrap Secrets.
DATA_KEY = "value"
#: Server metadata that hands the server to the lab's boot shim (dev/shim: it runs the
#: server's cloud-init in a network namespace, as the lab's Nova boots nothing); harmless
#: in a cloud whose servers boot.
BOOT_SHIM = {"kumo.dev:boot-shim": "true"}


@dataclass(frozen=True)
class Observed:
    """What one pass knows: the KumoMachine, its Machine, the KumoCluster of its
    Cluster (from the store) and its VirtualMachine (from the store)."""

    spec: KumoMachineSpec
    name: str
    namespace: str
    uid: str
    labels: dict[str, str]
    status: Body
    machine: Body
    cluster: str | None
    kumo_cluster: Body | None
    vm: Body | None


@dataclass(frozen=True)
class Decision:
    #: The VirtualMachine to make (at most once).
    create: children.Child | None = None
    #: ``spec.providerID`` to write.
    provider_id: str | None = None
    #: Why nothing is made yet.
    wait: Wait | None = None
    #: The VirtualMachine went after its server existed: the machine failed.
    lost: str | None = None
    #: The VirtualMachine's name is another object's.
    taken: str | None = None


def control_plane(o: Observed) -> bool:
    return capi.CONTROL_PLANE_LABEL in o.labels


def failure_domain(o: Observed) -> str | None:
    return (o.machine.get("spec") or {}).get("failureDomain") or None


def data_secret(o: Observed) -> str | None:
    return ((o.machine.get("spec") or {}).get("bootstrap") or {}).get("dataSecretName") or None


def server_group(o: Observed) -> tuple[str | None, str | None]:
    """``(ID, None)`` of the machine's set's server group; ``(None, why)`` while the
    KumoCluster has none for it; ``(None, None)`` when the machine needs none (a lone
    Machine, or ``serverGroupPolicy: none``)."""
    machine_set = capi.machine_set(o.labels)
    cluster = o.kumo_cluster or {}
    if machine_set is None or (cluster.get("spec") or {}).get("serverGroupPolicy") == "none":
        return None, None
    for group in (cluster.get("status") or {}).get("serverGroups") or []:
        if group.get("name") == machine_set and group.get("id"):
            return str(group["id"]), None
    return None, f"the server group of machine set {machine_set} is not made yet"


def vm_child(o: Observed, secret: str, group: str | None) -> children.Child:
    """The VirtualMachine of the machine (module docstring)."""
    assert o.cluster is not None
    parts = capi.Parts(o.cluster)
    s = o.spec
    groups = [parts.node_group, *([parts.api_group] if control_plane(o) else [])]
    spec: dict[str, Any] = {
        "image": s.image,
        "flavor": s.flavor,
        "description": f"Cluster API Machine {o.namespace}/{o.machine['metadata']['name']}",
        "networks": [parts.network],
        "securityGroups": [*groups, *(g for g in s.security_groups if g not in groups)],
        "initScript": {"secretRef": {"name": secret, "key": DATA_KEY}},
        "replacementPolicy": "Never",
        "metadata": dict(BOOT_SHIM),
    }
    if s.key_name:
        spec["keyName"] = s.key_name
    if s.root_volume is not None:
        spec["rootVolume"] = s.root_volume.model_dump(by_alias=True, exclude_none=True)
    if zone := failure_domain(o):
        spec["availabilityZone"] = zone
    if group:
        spec["serverGroup"] = group
    labels = {capi.CLUSTER_NAME_LABEL: capi.label_value(o.cluster)}
    if control_plane(o):
        labels[GROUP_LABEL] = parts.control_plane
    return children.Child(kinds.VIRTUAL_MACHINE, o.name, spec, labels)


def _wait(message: str, reason: str, o: Observed, after: float = capi.POLL_SECONDS) -> Wait:
    return Wait(message, reason=reason, after=after, status=capi.kept(o.status))


def decide(o: Observed) -> Decision:
    """Pure: make the VM once, when everything it needs is there; write the providerID
    once its server exists."""
    if o.vm is not None:
        if not children.owned_by(o.vm, o.uid):
            return Decision(taken=f"VirtualMachine {o.name}")
        server = (o.vm.get("status") or {}).get("id")
        unwritten = server and not o.spec.provider_id  # written once, never changed
        return Decision(provider_id=PROVIDER_ID.format(server) if unwritten else None)
    made = o.status.get("id") or o.spec.provider_id  # a server existed: one only, ever
    if made:
        return Decision(
            lost=f"VirtualMachine {o.name} (server {made}) was deleted; a Machine's server is "
            "never made again: delete the Machine to replace it"
        )
    cluster = o.kumo_cluster
    if o.cluster is None or cluster is None:
        why = f"the KumoCluster of Cluster {o.cluster or '(unknown)'} is not there yet"
        return Decision(wait=_wait(why, "WaitingForCluster", o))
    if not ((cluster.get("status") or {}).get("initialization") or {}).get("provisioned"):
        name = cluster["metadata"]["name"]
        why = f"KumoCluster {name} is not provisioned yet"
        return Decision(wait=_wait(why, "WaitingForClusterInfrastructure", o, after=30.0))
    secret = data_secret(o)
    if secret is None:
        why = "waiting for the Machine's bootstrap data (spec.bootstrap.dataSecretName)"
        return Decision(wait=_wait(why, "WaitingForBootstrapData", o))
    group, why_not = server_group(o)
    if why_not is not None:
        return Decision(wait=_wait(why_not, "WaitingForServerGroup", o, after=30.0))
    return Decision(create=vm_child(o, secret, group))


def addresses(o: Observed) -> list[Body]:
    vm_status = (o.vm or {}).get("status") or {}
    found = [{"type": "InternalIP", "address": a["ip"]} for a in vm_status.get("addresses") or []]
    return [*found, {"type": "Hostname", "address": o.name}]


def report(o: Observed, d: Decision) -> Result:
    """The status CAPI reads, from the VM as the pass left it."""
    base: Body = {
        **capi.kept(o.status),
        "clusterName": o.cluster,
        "virtualMachine": o.name if o.vm is not None or d.create is not None else None,
        "failureDomain": failure_domain(o),
    }
    if d.taken is not None:
        message = f"{d.taken} exists and is not this KumoMachine's: Kumo leaves it alone"
        failed = {"failureReason": "InvalidConfiguration", "failureMessage": message}
        raise TerminalError("NameTaken", message, status={**base, **failed})
    if d.lost is not None:
        failed = {"failureReason": UPDATE_ERROR, "failureMessage": f"ServerLost: {d.lost}"}
        raise TerminalError("ServerLost", d.lost, field="spec", status={**base, **failed})
    if d.wait is not None:
        return Result.waiting("Pending", d.wait.reason, d.wait.message, after=d.wait.after, **base)
    if o.vm is None:  # just made
        return Result.waiting(
            "Provisioning", "Creating", f"VirtualMachine {o.name} made", after=5.0, **base
        )
    vm_status = o.vm.get("status") or {}
    server = vm_status.get("id")
    status = {**base, "id": server, "serverGroup": vm_status.get("serverGroupId")}
    ready = capi.condition(o.vm, "Ready")
    if capi.ready(o.vm):
        status.update(initialization={"provisioned": True}, ready=True, addresses=addresses(o))
        return Result(
            phase="Provisioned",
            ready=True,
            reason="Ready",
            message=f"server {server} is ACTIVE ({PROVIDER_ID.format(server)})",
            status=status,
        )
    reason = ready.get("reason") or "Provisioning"
    message = f"VirtualMachine {o.name}: {ready.get('message') or 'not Ready yet'}"
    if reason in NEVER_REBUILT:
        failed = {"failureReason": UPDATE_ERROR, "failureMessage": f"{reason}: {message}"}
        raise TerminalError(reason, message, status={**status, **failed})
    return Result.waiting("Provisioning", reason, message, after=10.0, **status)

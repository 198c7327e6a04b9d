"""What the Cluster API provider's two kinds share: CAPI's labels and annotations, the
CAPI objects they read (by name only), its pause, and the names of a cluster's parts.

A KumoCluster and a KumoMachine never list or watch CAPI's objects: a KumoCluster reads
its owning Cluster by name (the ownerReference CAPI sets), a KumoMachine its Machine
and Cluster. RBAC grants ``get`` on those and nothing more. Both kinds' packages read
the part names here, so the KumoMachine finds the network and security groups the
KumoCluster made without importing it (kinds are independent of each other).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kumo.api.capi import CAPI_GROUP, CONTRACT
from kumo.engine.lifecycle import Wait
from kumo.engine.objects import Body, Context, External, Obj
from kumo.engine.result import Result

CLUSTER = External(CAPI_GROUP, CONTRACT, "Cluster", "clusters")
MACHINE = External(CAPI_GROUP, CONTRACT, "Machine", "machines")

CLUSTER_NAME_LABEL = f"{CAPI_GROUP}/cluster-name"
CONTROL_PLANE_LABEL = f"{CAPI_GROUP}/control-plane"
DEPLOYMENT_LABEL = f"{CAPI_GROUP}/deployment-name"
SET_LABEL = f"{CAPI_GROUP}/set-name"
PAUSED_ANNOTATION = f"{CAPI_GROUP}/paused"
#: The machine set of a control plane's machines (their server group's name part).
CONTROL_PLANE = "control-plane"
#: While paused, or waiting for what no watch reports (a Machine's bootstrap data), the
#: pass looks again this often.
POLL_SECONDS = 5.0
#: Waiting for the owner CAPI sets: setting it changes the object itself, which wakes it;
#: this is only the safety net.
OWNER_SECONDS = 60.0
#: The status fields CAPI reads that a pass which reports nothing new must keep (not
#: the failure fields: a permanent error's status write keeps them; a pass that gets
#: further drops them).
CONTRACT_FIELDS = (
    "initialization",
    "ready",
    "failureDomains",
    "addresses",
    "failureDomain",
    "clusterName",
)
#: A label value's limit (Kubernetes): longer group names are cut and hashed.
LABEL_VALUE_MAX = 63


def owner_name(obj: Obj, kind: str) -> str | None:
    """The name of ``obj``'s owner of CAPI's ``kind`` (any version of its group)."""
    for ref in obj.meta.get("ownerReferences") or []:
        group = str(ref.get("apiVersion", "")).split("/", 1)[0]
        if ref.get("kind") == kind and group == CAPI_GROUP and ref.get("name"):
            return str(ref["name"])
    return None


async def read(ctx: Context, ref: External, obj: Obj, name: str | None) -> Body | None:
    """The CAPI object ``name`` of ``ref`` in ``obj``'s namespace (None: not there)."""
    if not name:
        return None
    return await ctx.kube.get_external(ref, obj.namespace, name)


def paused(obj: Obj, cluster: Body | None) -> str | None:
    """Why CAPI has paused ``obj`` (its Cluster's ``spec.paused``, or the
    ``cluster.x-k8s.io/paused`` annotation), or None."""
    if PAUSED_ANNOTATION in obj.annotations:
        return f"annotation {PAUSED_ANNOTATION}"
    if cluster is not None and (cluster.get("spec") or {}).get("paused"):
        return f"Cluster {cluster['metadata']['name']} has spec.paused"
    return None


def held(why: str) -> Result:
    """The pass of an object CAPI paused: nothing is written but the ``Paused``
    condition (the engine keeps the status fields and ``Ready``); looked at again soon,
    as no watch tells when the Cluster is unpaused."""
    return Result(
        phase="Paused",
        paused=f"paused by Cluster API ({why}): Kumo changes nothing for it",
        requeue_after=POLL_SECONDS,
        done=False,
    )


def owner_wait(obj: Obj, kind: str) -> Wait:
    """The pass of an object whose CAPI owner (``kind``) is not set or not there yet."""
    return Wait(
        f"waiting for Cluster API to set its owning {kind} (ownerReferences)",
        reason=f"WaitingFor{kind}",
        after=OWNER_SECONDS,
        status=kept(obj.status),
    )


def kept(status: Mapping[str, Any]) -> Body:
    """The contract fields of ``status``, for a pass that reports nothing new of them
    (CAPI must never see ``provisioned`` go away)."""
    return {k: status[k] for k in CONTRACT_FIELDS if status.get(k) is not None}


def machine_set(labels: Mapping[str, str]) -> str | None:
    """Which set a machine belongs to, by the labels CAPI copies onto its KumoMachine:
    the control plane, its MachineDeployment, its MachineSet; None for a lone Machine."""
    if CONTROL_PLANE_LABEL in labels:
        return CONTROL_PLANE
    return labels.get(DEPLOYMENT_LABEL) or labels.get(SET_LABEL) or None


def label_value(text: str) -> str:
    """``text`` as a label value: cut, with a hash of the whole, when too long."""
    if len(text) <= LABEL_VALUE_MAX:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{text[: LABEL_VALUE_MAX - 9].rstrip('-.')}-{digest}"


@dataclass(frozen=True)
class Parts:
    """The names of a cluster's Kumo objects (all named after the Cluster)."""

    cluster: str

    @property
    def network(self) -> str:
        return self.cluster

    @property
    def node_group(self) -> str:
        return f"{self.cluster}-node"

    @property
    def api_group(self) -> str:
        return f"{self.cluster}-api"

    @property
    def load_balancer(self) -> str:
        return f"{self.cluster}-api"

    @property
    def floating_ip(self) -> str:
        return f"{self.cluster}-api"

    @property
    def dns_record(self) -> str:
        return f"{self.cluster}-api"

    @property
    def control_plane(self) -> str:
        """The ``kumo.dev/group`` label of the control plane's VMs: the API load
        balancer's pool follows them (``groupObject: false``)."""
        return label_value(f"{self.cluster}-{CONTROL_PLANE}")


def ready(body: Body | None) -> bool:
    if body is None or (body.get("metadata") or {}).get("deletionTimestamp"):
        return False
    conditions = (body.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def condition(body: Body, kind: str) -> Body:
    """A condition of ``body`` ({} when absent)."""
    for found in (body.get("status") or {}).get("conditions") or []:
        if found.get("type") == kind:
            return dict(found)
    return {}

"""This cluster's identity: what Kumo's ownership markers name besides the object, so
that several clusters sharing one OpenStack project (or user) never take each other's
resources for their own (kumo.ports.markers).

Set once, at startup, before anything reads or writes a marker: ``--cluster-id`` (or
``KUMO_CLUSTER_ID``) when given, else the first 12 hex digits of the ``kube-system``
namespace's UID, read through Kumo's Kubernetes client. A cluster rebuilt from scratch
has a new ``kube-system`` UID: give it the old ID with the flag, and its objects find
their resources again (docs/install.md, "Cluster identity"). When neither works, Kumo
does not start: without its identity it could not tell its resources from another
cluster's.
"""

from __future__ import annotations

import logging
from typing import Protocol

from kumo.ports import markers

log = logging.getLogger("kumo.cluster")

#: The namespace every cluster has, whose UID names the cluster.
NAMESPACE = "kube-system"
#: The environment variable ``--cluster-id`` defaults to.
ENV = "KUMO_CLUSTER_ID"


class ClusterIdentityError(RuntimeError):
    """Kumo cannot tell which cluster it runs in: it must not start."""


class NamespaceReader(Protocol):
    async def get_namespace(self, name: str) -> dict[str, object] | None: ...


async def derive(kube: NamespaceReader) -> str:
    """The cluster ID from the ``kube-system`` namespace's UID."""
    hint = f"grant get on namespaces, or give the ID with --cluster-id (or {ENV})"
    try:
        namespace = await kube.get_namespace(NAMESPACE)
    except Exception as error:
        raise ClusterIdentityError(
            f"cannot read namespace {NAMESPACE} to derive the cluster ID ({error}): {hint}"
        ) from error
    meta = namespace.get("metadata") if namespace else None
    uid = meta.get("uid") if isinstance(meta, dict) else None
    if not isinstance(uid, str) or not uid:
        raise ClusterIdentityError(
            f"namespace {NAMESPACE} {'has no UID' if namespace else 'not found'}: "
            f"cannot derive the cluster ID; {hint}"
        )
    return markers.cluster_from_uid(uid)


async def establish(kube: NamespaceReader, given: str | None) -> str:
    """Set this process's cluster ID (``given``, else derived) and return it."""
    if given:
        try:
            cluster_id = markers.check_cluster_id(given)
        except ValueError as error:
            raise ClusterIdentityError(f"--cluster-id: {error}") from None
        how = "given"
    else:
        cluster_id = await derive(kube)
        how = f"from namespace {NAMESPACE}"
    markers.set_cluster(cluster_id)
    log.info("cluster ID %s (%s): Kumo's markers name it", cluster_id, how)
    return cluster_id

"""KumoCluster actuator: a Cluster API Cluster's infrastructure, on the engine's composite
lifecycle (``engine/composite.py``): anchor (the owning Cluster) → observe (its parts in
the object store, its machine sets, its server groups in Nova) → one pure decision
(``plan.decide``) → apply (parts, server groups, the endpoint) → report (what CAPI
reads); the engine writes status once, at the end.

The parts are Kumo objects (plan.py lists them); their own controllers do the cloud
work, with the ownership marker of each. Only the server groups are the KumoCluster's
own cloud resources (named with its marker, so a crash after a create finds them).

CAPI's contract, as the KumoCluster keeps it: it waits until CAPI sets its owning
Cluster (ownerReferences) and reads that Cluster by name only; while CAPI pauses it
(the Cluster's ``spec.paused``, or ``cluster.x-k8s.io/paused``) it writes nothing but
its ``Paused`` condition, also while being deleted. ``spec.controlPlaneEndpoint`` is
written once. Deletion waits for the cluster's KumoMachines, then deletes the parts,
waits until they are gone, and deletes the server groups.
"""

from __future__ import annotations

import dataclasses

from kumo.api import kinds
from kumo.api.capi import KumoClusterSpec
from kumo.engine import composite
from kumo.engine.lifecycle import Wait
from kumo.engine.objects import Body, Context, Key, Obj, Store
from kumo.engine.result import Result
from kumo.kinds import capi, children
from kumo.kinds.kumocluster import plan

#: Seconds between deletion passes while parts or machines go (their changes wake it).
DELETE_SECONDS = 5.0


class KumoClusterActuator:
    info = kinds.KUMO_CLUSTER
    #: A burst of machine or part changes (a control plane's scale-out) costs one pass.
    coalesce_seconds = 0.5

    async def reconcile(self, ctx: Context, obj: Obj, spec: KumoClusterSpec) -> Result:
        cluster = await capi.read(ctx, capi.CLUSTER, obj, capi.owner_name(obj, "Cluster"))
        if why := capi.paused(obj, cluster):
            return capi.held(why)

        async def anchor() -> str | Wait:
            if cluster is None:
                return capi.owner_wait(obj, "Cluster")
            return str(cluster["metadata"]["name"])

        async def observe(name: str) -> plan.Observed:
            return await _observe(ctx, obj, spec, name)

        async def apply(o: plan.Observed, d: plan.Decision) -> plan.Observed:
            return await self._apply(ctx, obj, o, d)

        steps = composite.Composite(anchor, observe, plan.decide, apply, plan.report)
        return await composite.reconcile_composite(steps)

    async def _apply(
        self, ctx: Context, obj: Obj, o: plan.Observed, d: plan.Decision
    ) -> plan.Observed:
        """The parts first, then the server groups, then the endpoint."""
        for made in await children.apply(ctx, obj, d.parts):
            ctx.events.emit(obj, "Normal", "Created", f"created {made}")
        groups = [g for g in o.groups if g.id not in d.stale_groups]
        for new in d.new_groups:
            group = await ctx.cloud.create_server_group(new.name, new.policy)
            ctx.events.emit(
                obj,
                "Normal",
                "ServerGroupCreated",
                f"server group {group.id} ({new.policy}) for machine set {new.set}",
            )
            groups.append(group)
        for group_id in d.stale_groups:
            await ctx.cloud.delete_server_group(group_id)
            ctx.events.emit(obj, "Normal", "ServerGroupDeleted", f"server group {group_id}")
        endpoint = o.endpoint
        if d.endpoint is not None:
            patch = {"spec": {"controlPlaneEndpoint": d.endpoint}}
            obj.body = await ctx.kube.patch(self.info, obj.namespace, obj.name, patch)
            endpoint = d.endpoint
            where = f"{d.endpoint['host']}:{d.endpoint['port']}"
            ctx.events.emit(obj, "Normal", "EndpointSet", f"the API is at {where}")
        return dataclasses.replace(
            o, found=_found(ctx.store, obj, o.cluster), groups=tuple(groups), endpoint=endpoint
        )

    async def finalize(self, ctx: Context, obj: Obj, spec: KumoClusterSpec | None) -> Result:
        cluster = await capi.read(ctx, capi.CLUSTER, obj, capi.owner_name(obj, "Cluster"))
        if why := capi.paused(obj, cluster):
            return capi.held(why)
        name = capi.owner_name(obj, "Cluster") or obj.status.get("clusterName")
        if name:
            machines = _machines(ctx.store, obj.namespace, str(name))
            if machines:
                return Result.waiting(
                    "Deleting",
                    "WaitingForMachines",
                    f"KumoMachine(s) {', '.join(machines)} of the cluster go first",
                    after=DELETE_SECONDS,
                )
            left = []
            for info, part in plan.all_parts(str(name)):
                left += [f"{info.kind} {n}" for n in await children.delete(ctx, obj, info, [part])]
            if left:
                return Result.waiting(
                    "Deleting", "DeletingParts", f"deleting {', '.join(left)}", after=DELETE_SECONDS
                )
        for group in await ctx.cloud.list_owned_server_groups(obj.uid):
            await ctx.cloud.delete_server_group(group.id)
        return Result(phase="Deleted", done=True)

    async def release(self, ctx: Context, obj: Obj, spec: KumoClusterSpec | None) -> Result:
        """A KumoCluster has no deletionPolicy: deleting it deletes its parts."""
        return await self.finalize(ctx, obj, spec)

    def dependents(self, kind: str, body: Body, store: Store) -> list[Key]:
        """A KumoMachine of its cluster came or went (a machine set may need a server
        group), or one of its parts changed (Ready, an address for the endpoint)."""
        meta = body.get("metadata") or {}
        namespace = meta.get("namespace", "default")
        if kind == kinds.KUMO_MACHINE.kind:
            cluster = (meta.get("labels") or {}).get(capi.CLUSTER_NAME_LABEL)
            if not cluster:
                return []
            found = store.labelled(self.info.kind, namespace, capi.CLUSTER_NAME_LABEL, cluster)
            return [Key(self.info.kind, namespace, b["metadata"]["name"]) for b in found]
        return [
            Key(self.info.kind, namespace, ref["name"])
            for ref in meta.get("ownerReferences") or []
            if ref.get("kind") == self.info.kind and ref.get("name")
        ]


async def _observe(ctx: Context, obj: Obj, spec: KumoClusterSpec, cluster: str) -> plan.Observed:
    """Read the parts, the machine sets and the server groups; no write."""
    sets = frozenset(
        s
        for body in ctx.store.labelled(
            kinds.KUMO_MACHINE.kind, obj.namespace, capi.CLUSTER_NAME_LABEL, cluster
        )
        if (s := capi.machine_set(body["metadata"].get("labels") or {})) is not None
    )
    groups = tuple(await ctx.cloud.list_owned_server_groups(obj.uid))
    return plan.Observed(
        spec=spec,
        namespace=obj.namespace,
        uid=obj.uid,
        cluster=cluster,
        status=obj.status,
        endpoint=obj.spec.get("controlPlaneEndpoint"),
        found=_found(ctx.store, obj, cluster),
        sets=sets,
        groups=groups,
    )


def _found(store: Store, obj: Obj, cluster: str) -> dict[tuple[str, str], Body | None]:
    return {
        (info.kind, name): store.get(info.kind, obj.namespace, name)
        for info, name in plan.all_parts(cluster)
    }


def _machines(store: Store, namespace: str, cluster: str) -> list[str]:
    found = store.labelled(kinds.KUMO_MACHINE.kind, namespace, capi.CLUSTER_NAME_LABEL, cluster)
    return sorted(b["metadata"]["name"] for b in found)

"""KumoMachine actuator: one VirtualMachine for a Cluster API Machine, on the engine's
composite lifecycle (``engine/composite.py``): anchor (the owning Machine, read by name)
→ observe (its KumoCluster and its VirtualMachine in the object store) → one pure
decision (``plan.decide``) → apply (make the VM, write ``spec.providerID``) → report
(what CAPI reads: provisioned, providerID, addresses, failure domain, and the v1beta1
failure fields when the server is lost for good); the engine writes status once.

The VM's own controller builds the server and drains it from the API load balancer on
deletion; the KumoMachine never rebuilds it (the VM's ``replacementPolicy: Never``), as
a Machine's providerID cannot change. While CAPI pauses it (the Cluster's
``spec.paused``, or ``cluster.x-k8s.io/paused``) it writes nothing but its ``Paused``
condition. Deletion deletes the VM and waits until it is gone.
"""

from __future__ import annotations

import dataclasses

from kumo.api import kinds
from kumo.api.capi import KumoMachineSpec
from kumo.engine import composite
from kumo.engine.lifecycle import Wait
from kumo.engine.objects import Body, Context, Key, Obj, Store
from kumo.engine.result import Result
from kumo.kinds import capi, children
from kumo.kinds.kumomachine import plan

#: Seconds between deletion passes while the VM goes (its changes wake it sooner).
DELETE_SECONDS = 5.0


class KumoMachineActuator:
    info = kinds.KUMO_MACHINE

    async def reconcile(self, ctx: Context, obj: Obj, spec: KumoMachineSpec) -> Result:
        machine = await capi.read(ctx, capi.MACHINE, obj, capi.owner_name(obj, "Machine"))
        cluster_name = obj.labels.get(capi.CLUSTER_NAME_LABEL) or (
            ((machine or {}).get("spec") or {}).get("clusterName")
        )
        cluster = await capi.read(ctx, capi.CLUSTER, obj, cluster_name)
        if why := capi.paused(obj, cluster):
            return capi.held(why)

        async def anchor() -> Body | Wait:
            return capi.owner_wait(obj, "Machine") if machine is None else machine

        async def observe(found: Body) -> plan.Observed:
            infra = ((cluster or {}).get("spec") or {}).get("infrastructureRef") or {}
            kumo_cluster = (
                ctx.store.get(kinds.KUMO_CLUSTER.kind, obj.namespace, infra["name"])
                if infra.get("kind") == kinds.KUMO_CLUSTER.kind and infra.get("name")
                else None
            )
            return plan.Observed(
                spec=spec,
                name=obj.name,
                namespace=obj.namespace,
                uid=obj.uid,
                labels=obj.labels,
                status=obj.status,
                machine=found,
                cluster=str(cluster["metadata"]["name"]) if cluster is not None else None,
                kumo_cluster=kumo_cluster,
                vm=ctx.store.get(kinds.VIRTUAL_MACHINE.kind, obj.namespace, obj.name),
            )

        async def apply(o: plan.Observed, d: plan.Decision) -> plan.Observed:
            if d.create is not None:
                for made in await children.apply(ctx, obj, children.Plan(create=[d.create])):
                    ctx.events.emit(obj, "Normal", "Created", f"created {made}")
            if d.provider_id is not None:
                patch = {"spec": {"providerID": d.provider_id}}
                obj.body = await ctx.kube.patch(self.info, obj.namespace, obj.name, patch)
            vm = ctx.store.get(kinds.VIRTUAL_MACHINE.kind, obj.namespace, obj.name)
            return dataclasses.replace(o, vm=vm)

        steps = composite.Composite(anchor, observe, plan.decide, apply, plan.report)
        return await composite.reconcile_composite(steps)

    async def finalize(self, ctx: Context, obj: Obj, spec: KumoMachineSpec | None) -> Result:
        cluster_name = obj.labels.get(capi.CLUSTER_NAME_LABEL)
        cluster = await capi.read(ctx, capi.CLUSTER, obj, cluster_name)
        if why := capi.paused(obj, cluster):
            return capi.held(why)
        left = await children.delete(ctx, obj, kinds.VIRTUAL_MACHINE, [obj.name])
        if left:
            return Result.waiting(
                "Deleting",
                "DeletingServer",
                f"VirtualMachine {obj.name} is deleting its server",
                after=DELETE_SECONDS,
            )
        return Result(phase="Deleted", done=True)

    async def release(self, ctx: Context, obj: Obj, spec: KumoMachineSpec | None) -> Result:
        """A KumoMachine has no deletionPolicy: deleting it deletes its server."""
        return await self.finalize(ctx, obj, spec)

    def dependents(self, kind: str, body: Body, store: Store) -> list[Key]:
        """Its VirtualMachine changed; or its KumoCluster did (provisioned, a server
        group made), which the machines still without a server wait for."""
        meta = body.get("metadata") or {}
        namespace = meta.get("namespace", "default")
        if kind == kinds.KUMO_CLUSTER.kind:
            cluster = (meta.get("labels") or {}).get(capi.CLUSTER_NAME_LABEL)
            if not cluster:
                return []
            machines = store.labelled(self.info.kind, namespace, capi.CLUSTER_NAME_LABEL, cluster)
            return [
                Key(self.info.kind, namespace, m["metadata"]["name"])
                for m in machines
                if not (m.get("status") or {}).get("virtualMachine")
            ]
        if kind != kinds.VIRTUAL_MACHINE.kind:
            return []
        return [
            Key(self.info.kind, namespace, ref["name"])
            for ref in meta.get("ownerReferences") or []
            if ref.get("kind") == self.info.kind and ref.get("name")
        ]

"""VirtualMachine actuator: observe the Nova server, diff with the spec, act.

A pass is the engine's owned-resource lifecycle (engine/lifecycle.py): find the server
(status.id only if it carries the marker, else adopt by marker, else import) → replace
it if an immutable field changed (references resolved first: bad input deletes
nothing), if it is being deleted behind Kumo's back, or if it stayed in ERROR past its
grace period (doubling after each replacement) → before a create, wait while the
server it replaces is still in the server group, while a port of ``spec.ports`` is not
free (ports.py), and for a turn to build → create and record its ID at once → wait
while it builds → correct description/metadata/tags and the security groups (Nova's
add/remove security group) in place → once ACTIVE, attach and detach ``spec.volumes``
in place (volumes.py: never a volume another server holds) and set
``allowedAddressPairs`` on the server's own port (ports.py) → report addresses and
volumes. The lifecycle records (or forgets) the ID at once; every other status field
is written by the engine at the end of the pass.
Deletion drains the VM from every LoadBalancer first, then from every Share's access
rules (drain.py: members, then storage, then servers).
"""

from __future__ import annotations

from typing import Any

from kumo.api import kinds
from kumo.api.virtualmachine import VirtualMachineSpec
from kumo.engine import conditions, lifecycle, orphan, ownership
from kumo.engine.dryrun import Change
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Body, Context, Key, Obj, Store
from kumo.engine.result import Result
from kumo.kinds import address_pairs, marking, ordering, references, sources
from kumo.kinds.virtualmachine import drain, plan, replacement, volumes
from kumo.kinds.virtualmachine import ports as vm_ports
from kumo.ports.model import AddressPair, Server, marker_tags

#: How often a replacement looks whether the server it replaces has left its group.
REPLACE_POLL_SECONDS = 2.0
#: How often a VM waiting for its turn to build asks again, besides being woken when
#: its turn comes (``kumo run --max-queued-builds``): the safety net for a lost wake-up.
BUILD_TURN_SECONDS = 60.0
#: Safety net while waiting for a KeyPair to be Ready (its status change wakes the VM).
KEY_PAIR_SECONDS = 30.0
#: Status fields that count ERROR replacements (kept until a server is ACTIVE).
ERROR_COUNTERS = ("errorReplacements", "lastErrorReplacement")


class VirtualMachineActuator:
    info = kinds.VIRTUAL_MACHINE
    #: A building or deleting server's change (ACTIVE, ERROR, gone) is reported by the
    #: cloud watch, which wakes the VM, and the pass reads the server from the watch's
    #: cache: its polls back off up to 60 s (controller), instead of O(N) of them per VM
    #: while Nova works through a fleet. (Not ``Draining``: a LoadBalancer's or Share's
    #: status change wakes it, and its drain timeout is measured by its polls.)
    watched_waits = frozenset({"Building", "Deleting"})

    async def reconcile(self, ctx: Context, obj: Obj, spec: VirtualMachineSpec) -> Result:
        user_data = await _user_data(ctx, obj, spec)
        hash_ = plan.spec_hash(spec, user_data)
        legacy = plan.spec_hash(spec, user_data, legacy=True)
        refs: tuple[str, str, list[str]] | None = None  # resolved before a create
        key_name = spec.key_name  # the KeyPair object's Nova keypair, if one is named
        port_ids: tuple[str, ...] = ()  # spec.ports, free to boot on (before a create)
        pairs: list[AddressPair] | None = None  # on the server's own port, once looked at

        wanted = volumes.wanted_volumes(ctx, obj, spec)

        def status(server: Server) -> dict[str, Any]:
            previous = obj.status.get("volumes") or []
            same = obj.status.get("id") == server.id
            return {
                **_status(obj, server, spec, hash_),
                "volumes": plan.attached_volumes(server, wanted, previous),
                "allowedAddressPairs": address_pairs.as_status(pairs)
                if pairs is not None
                else (obj.status.get("allowedAddressPairs") if same else None),
            }

        groups, unready = plan.security_groups(spec, obj.namespace, ctx.store)
        networks = [
            references.resolve(ctx.store, obj.namespace, "Network", name, "id")
            for name in spec.networks
        ]
        unready_networks = [
            f"spec.networks[{i}]: {n.waiting}" for i, n in enumerate(networks) if n.waiting
        ]
        _, unready_ports = vm_ports.wanted(spec, obj.namespace, ctx.store)

        async def replace(server: Server) -> lifecycle.Replacement | None:
            why = plan.replacement(server, hash_, legacy)
            replacement.refuse(spec, server, why)  # replacementPolicy: Never
            if why == "spec" and (unready or unready_networks or unready_ports):
                return None  # the server stays until its new groups, networks, ports are Ready
            if why == "spec":
                # Resolve every reference first: bad input must fail before anything
                # is deleted.
                await _resolve(ctx, spec, networks)
                return lifecycle.Replacement(
                    "spec changed",
                    wait=_replacing("old server deleted, creating new one"),
                    record={"replacingId": server.id},
                )
            if why == "deleting":  # already on its way: Owned.delete asks nothing more
                return lifecycle.Replacement(
                    "deleted behind Kumo's back",
                    wait=_replacing(f"server {server.id} is being deleted"),
                    event=(
                        "Warning",
                        "ServerDeleted",
                        f"server {server.id} is being deleted; replacing it",
                    ),
                )
            if why == "error":
                return _errored(obj, spec, server)
            return None

        async def before_create() -> lifecycle.Wait | None:
            nonlocal refs, key_name, port_ids
            replacement.lost(spec, obj)  # replacementPolicy: Never
            if unready_networks:
                return lifecycle.Wait(
                    "; ".join(unready_networks),
                    reason="WaitingForNetwork",
                    phase="Pending",
                    after=KEY_PAIR_SECONDS,
                    status={k: obj.status[k] for k in ERROR_COUNTERS if obj.status.get(k)},
                )
            refs = await _resolve(ctx, spec, networks)  # bad input fails before taking a turn
            if unready:
                return lifecycle.Wait(
                    f"SecurityGroup(s) {', '.join(unready)} not Ready yet (spec.securityGroups)",
                    reason="WaitingForSecurityGroup",
                    phase="Pending",
                    after=BUILD_TURN_SECONDS,
                    status={k: obj.status[k] for k in ERROR_COUNTERS if obj.status.get(k)},
                )
            key = references.resolve(ctx.store, obj.namespace, "KeyPair", spec.key_name, "keyName")
            key_name = key.value
            if key.waiting:
                kept = ("replacingId", *ERROR_COUNTERS)
                return lifecycle.Wait(
                    f"spec.keyName: {key.waiting}",
                    reason="WaitingForKeyPair",
                    phase="Pending",
                    after=KEY_PAIR_SECONDS,
                    status={k: obj.status[k] for k in kept if obj.status.get(k)},
                )
            kept = ("replacingId", *ERROR_COUNTERS)
            port_ids, waiting = await vm_ports.before_create(
                ctx, obj, spec, {k: obj.status[k] for k in kept if obj.status.get(k)}
            )
            if waiting is not None:
                return waiting
            if await _still_in_server_group(ctx, obj, spec):
                old = obj.status["replacingId"]
                return _replacing(
                    f"server {old} is being deleted; its replacement boots once it has left "
                    "the server group",
                    after=REPLACE_POLL_SECONDS,
                    status={
                        "replacingId": old,
                        **{k: obj.status[k] for k in ERROR_COUNTERS if obj.status.get(k)},
                    },
                )
            if not await ctx.cloud.admit_build(obj.uid):
                kept = ("replacingId", *ERROR_COUNTERS)
                return lifecycle.Wait(
                    f"waiting for its turn: {ctx.cloud.max_queued_builds} of this cloud's "
                    "servers are queued in Nova, not on a host yet (kumo run "
                    "--max-queued-builds)",
                    reason="WaitingToBuild",
                    phase="Pending",
                    after=BUILD_TURN_SECONDS,
                    status={k: obj.status[k] for k in kept if obj.status.get(k)},
                )
            return None

        async def create() -> Server:
            assert refs is not None  # before_create resolved them
            groups_ref = [g.ref for g in groups]
            root = spec.root_volume
            root_volume = None
            if root is not None:
                volume_type = (
                    await ctx.cloud.volume_type_name(root.volume_type, "spec.rootVolume.volumeType")
                    if root.volume_type
                    else None
                )
                root_volume = (root.size, volume_type)
            return await _create(
                ctx,
                obj,
                spec,
                user_data,
                hash_,
                (*refs, groups_ref, port_ids),
                key_name,
                root_volume,
            )

        async def busy(server: Server) -> lifecycle.Wait | None:
            return _BUILDING if server.status in ("BUILD", "REBUILD") else None

        async def correct(server: Server) -> lifecycle.Step[Server]:
            metadata = plan.desired_metadata(spec, obj.namespace, obj.name, hash_)
            fix = plan.plan_fix(spec, metadata, obj.uid, server)
            if not fix.empty:
                await _apply_fix(ctx, server, fix)
                ctx.events.emit(obj, "Normal", "Corrected", f"put server {server.id} back to spec")
            if not unready:  # a SecurityGroup not Ready yet: the server keeps what it has
                await _apply_security_groups(ctx, obj, server, groups)
            return lifecycle.Step(server)

        async def attach(server: Server) -> lifecycle.Step[Server]:
            if server.status != "ACTIVE":  # attached once it runs
                return lifecycle.Step(server)
            return await volumes.apply_volumes(ctx, obj, server, wanted)

        async def address(server: Server) -> lifecycle.Step[Server]:
            nonlocal pairs
            pairs = await vm_ports.set_address_pairs(ctx, obj, spec, server)
            return lifecycle.Step(server)

        async def report(server: Server) -> Result:
            ready = server.status == "ACTIVE"
            return Result(
                phase=plan.PHASES.get(server.status, server.status.title()),
                ready=ready,
                reason="Ready" if ready else "NotActive",
                message="server is ACTIVE" if ready else f"server is {server.status}",
                status=status(server),
                requeue_after=None if ready else 10.0,
            )

        return await lifecycle.reconcile_owned(
            ctx,
            obj,
            lifecycle.Lifecycle(
                owned=_servers(ctx, obj, spec),
                create=create,
                created=lambda _: _BUILDING,
                report=report,
                failpoint="after-server-create",
                status=status,
                before_create=before_create,
                replace=replace,
                busy=busy,
                updaters=[correct, attach, address],
            ),
        )

    async def finalize(self, ctx: Context, obj: Obj, spec: VirtualMachineSpec | None) -> Result:
        waiting = ordering.wait_for_referrers(ctx.store, obj)
        if waiting:
            return waiting
        draining = drain.waiting(ctx.store, obj)
        if draining:
            return draining
        await ctx.cloud.withdraw_build(obj.uid)  # if it waited for a turn to build
        return await ownership.finalize_owned(ctx, obj, _servers(ctx, obj, going=True))

    async def release(self, ctx: Context, obj: Obj, spec: VirtualMachineSpec | None) -> Result:
        await ctx.cloud.withdraw_build(obj.uid)
        return await orphan.release_owned(ctx, obj, _servers(ctx, obj))

    def dependents(self, kind: str, body: Body, store: Store) -> list[Key]:
        """An LB that changed its members or a Share that revoked a rule may unblock VMs
        waiting to drain; a referrer that goes first (a DNSRecord) going away may unblock
        the VM it pointed at."""
        if unblocked := ordering.unblocked_by(kind, body, self.info.kind):
            return unblocked
        if kind == "Volume":  # Ready now, or free: the VMs naming it may attach it
            return [
                Key(self.info.kind, body["metadata"].get("namespace", "default"), vm_name)
                for vm_name in volumes.naming_volume(body, store, self.info.kind)
            ]
        if kind == "SecurityGroup":  # Ready now: the VMs naming it may be created
            return _naming_group(body, store, self.info.kind)
        if waiting := references.unbuilt_referrers(store, self.info.kind, kind, body):
            return waiting  # VMs without a server naming it: a KeyPair they wait for
        if kind not in ("LoadBalancer", "Share"):  # a drained member, a revoked rule
            return []
        namespace = body["metadata"].get("namespace", "default")
        return [
            Key(self.info.kind, namespace, vm["metadata"]["name"])
            for vm in store.list(self.info.kind, namespace)
            if vm["metadata"].get("deletionTimestamp")
        ]


def _naming_group(group: Body, store: Store, kind: str) -> list[Key]:
    """VMs whose ``spec.securityGroups`` name the SecurityGroup ``group``."""
    meta = group.get("metadata") or {}
    namespace = meta.get("namespace", "default")
    return [
        Key(kind, namespace, vm["metadata"]["name"])
        for vm in store.list(kind, namespace)
        if meta.get("name") in ((vm.get("spec") or {}).get("securityGroups") or [])
    ]


async def _user_data(ctx: Context, obj: Obj, spec: VirtualMachineSpec) -> str | None:
    """The script to send as user_data, from whichever source the spec names; always in
    the object's own namespace. Raises TerminalError if it is missing or too long."""
    script = spec.init_script
    if script is None:
        return None
    if script.config_map_ref is not None:
        field = "spec.initScript.configMapRef"
        cm = script.config_map_ref
        text = await sources.from_config_map(ctx, obj.namespace, cm.name, cm.key, field)
    elif script.secret_ref is not None:
        field = "spec.initScript.secretRef"
        secret = script.secret_ref
        text = await sources.from_secret(ctx, obj.namespace, secret.name, secret.key, field)
    elif script.value is not None:
        text, field = script.value, "spec.initScript.value"
    else:
        return None
    problem = plan.user_data_problem(text)
    if problem:
        raise TerminalError("UserDataTooLong", problem, field=field)
    return text


def _servers(
    ctx: Context, obj: Obj, spec: VirtualMachineSpec | None = None, *, going: bool = False
) -> ownership.Owned[Server]:
    """The VM's server as the ownership routine sees it: marked by tag ``kumo-owner=<uid>``;
    ``spec.import`` checks its image and flavor (see :func:`plan.import_mismatches`).
    ``going`` (the finalizer's view): servers Nova is deleting count too, so the finalizer
    stays until none is left and a delete Nova fails (back in ACTIVE or ERROR) is asked
    again."""
    cloud = ctx.cloud

    async def delete(server: Server) -> None:
        if server.status != "DELETING":  # already on its way: asking again is a write
            await cloud.delete_server(server.id)

    async def verify(server: Server) -> list[Change]:
        assert spec is not None
        image_id = await cloud.image_id(spec.image)
        flavor = await cloud.flavor_ids(spec.flavor)
        return plan.import_mismatches(spec, server, image_id, flavor)

    return ownership.Owned(
        noun="server",
        id_of=lambda server: server.id,
        **marking.by_tags(Server, obj.uid, cloud.set_server_tags),
        get_by_id=cloud.get_server,
        list_owned=lambda: cloud.list_owned_servers(obj.uid, going=going),
        delete=delete,
        find_by_name=lambda name: cloud.find_servers_by_name(name),
        name_of=lambda server: server.name,
        verify=verify,
        fetch=lambda server: cloud.fetch_server(server.id),
    )


async def _resolve(
    ctx: Context, spec: VirtualMachineSpec, networks: list[references.Resolved]
) -> tuple[str, str, list[str]]:
    """Image, flavor and network IDs (``networks``: the spec's, a Network object's
    resolved to its ID); raises TerminalError naming the field if unknown."""
    cloud = ctx.cloud
    image_id = await cloud.image_id(spec.image)
    flavor_id = await cloud.flavor_id(spec.flavor)
    if networks:
        network_ids = [
            await cloud.network_id(n.value or name, field=f"spec.networks[{i}]")
            for i, (name, n) in enumerate(zip(spec.networks, networks, strict=True))
        ]
    elif spec.ports:  # on its Port objects' ports only
        network_ids = []
    else:
        network_ids = [await cloud.default_network_id(external=False, field="spec.networks")]
    return image_id, flavor_id, network_ids


async def _create(
    ctx: Context,
    obj: Obj,
    spec: VirtualMachineSpec,
    user_data: str | None,
    hash_: str,
    refs: tuple[str, str, list[str], list[str], tuple[str, ...]],
    key_name: str | None,
    root_volume: tuple[int, str | None] | None = None,
) -> Server:
    image_id, flavor_id, network_ids, security_groups, port_ids = refs
    server: Server = await ctx.cloud.create_server(
        name=obj.name,
        image_id=image_id,
        flavor_id=flavor_id,
        network_ids=network_ids,
        user_data=user_data,
        description=spec.description,
        metadata=plan.desired_metadata(spec, obj.namespace, obj.name, hash_),
        tags=marker_tags(obj.uid),
        availability_zone=spec.availability_zone,
        key_name=key_name,
        security_groups=security_groups,
        server_group_id=spec.server_group,
        root_volume=root_volume,
        port_ids=port_ids,
    )
    return server


async def _still_in_server_group(ctx: Context, obj: Obj, spec: VirtualMachineSpec) -> bool:
    """Is the server this VM deleted for a replacement still there while the new one
    would boot into a server group? (Read from the cloud watch: no call once it lists
    the server gone.)"""
    old = obj.status.get("replacingId")
    if not old:
        return False
    # Once it is gone the field goes with this pass's status (it is not carried on).
    return bool(spec.server_group) and await ctx.cloud.get_server(old) is not None


def _errored(obj: Obj, spec: VirtualMachineSpec, server: Server) -> lifecycle.Replacement:
    """An ERROR server is reported (a TerminalError, before anything is deleted) until
    it has waited long enough, then replaced (self-healing), waiting twice as long after
    every replacement that ended in ERROR again; the counters are recorded with the
    forgotten ID and kept until a server is ACTIVE."""
    reason = plan.fault_reason(server.fault)
    replaced = int(obj.status.get("errorReplacements") or 0)
    now = conditions.now_rfc3339()
    if replaced:
        since = obj.status.get("lastErrorReplacement") or now
    else:
        ready = conditions.get_condition(obj.status.get("conditions") or [], "Ready") or {}
        # Reported on this pass when the condition does not say so yet: its
        # lastTransitionTime will be ``now``, so the next pass gives the same message.
        since = (ready.get("lastTransitionTime") or now) if ready.get("reason") == reason else now
    wait = plan.replacement_delay(replaced)
    where = "spec.serverGroup" if reason == "NoValidHost" and spec.server_group else "spec"
    detail = f"Nova put the server in ERROR: {server.fault or 'no fault given'}"
    if ordering.seconds_since(since) < wait:
        note = plan.replacement_note(replaced, since, wait)
        raise TerminalError(reason, f"{detail} ({note})", field=where)

    counters: dict[str, Any] = {
        "errorReplacements": replaced + 1,
        "lastErrorReplacement": now,
        "replacingId": server.id,
    }
    note = plan.replacement_note(replaced + 1, now, plan.replacement_delay(replaced + 1))
    return lifecycle.Replacement(
        "in ERROR",
        wait=lifecycle.Wait(f"{where}: {detail} ({note})", reason=reason, phase="Replacing"),
        record=counters,
        event=("Warning", "Replacing", f"replacing server {server.id} in ERROR ({note})"),
    )


async def _apply_security_groups(
    ctx: Context, obj: Obj, server: Server, groups: list[plan.GroupRef]
) -> None:
    """Nova's add/remove security group, in place: the server is not replaced."""
    add, remove = plan.security_group_changes(groups, server.security_groups)
    for ref in add:
        await ctx.cloud.add_server_security_group(server.id, ref)
    for name in remove:
        await ctx.cloud.remove_server_security_group(server.id, name)
    if add or remove:
        ctx.events.emit(
            obj,
            "Normal",
            "SecurityGroupsChanged",
            f"server {server.id}: "
            + "; ".join(
                part
                for part in (
                    f"added {', '.join(add)}" if add else "",
                    f"removed {', '.join(remove)}" if remove else "",
                )
                if part
            )
            + " (in place)",
        )


async def _apply_fix(ctx: Context, server: Server, fix: plan.ServerFix) -> None:
    if fix.description is not None:
        await ctx.cloud.update_server(server.id, description=fix.description)
    if fix.set_metadata or fix.remove_metadata:
        await ctx.cloud.set_server_metadata(server.id, fix.set_metadata, fix.remove_metadata)
    if fix.tags is not None:
        await ctx.cloud.set_server_tags(server.id, fix.tags)


def _replacing(message: str, after: float = 2.0, status: Body | None = None) -> lifecycle.Wait:
    return lifecycle.Wait(
        message, reason="Replacing", phase="Replacing", after=after, status=status or {}
    )


#: While Nova builds (or rebuilds) the server.
_BUILDING = lifecycle.Wait("server is building", reason="Building", phase="Building")


def _status(obj: Obj, server: Server, spec: VirtualMachineSpec, hash_: str) -> dict[str, Any]:
    status = {
        "id": server.id,
        "ip": plan.primary_ip(server),
        "addresses": plan.addresses(server),
        "hostId": server.host_id or None,
        # Nova puts a server in a group only when it boots it: an imported one is in none.
        "serverGroupId": None if spec.import_ is not None else spec.server_group,
        "specHash": hash_,
    }
    if server.status != "ACTIVE":  # the replacement count lasts until a server works
        for key in ERROR_COUNTERS:
            status[key] = obj.status.get(key)
    return status

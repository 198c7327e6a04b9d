"""A VirtualMachine's Neutron ports: the Port objects of ``spec.ports`` its server boots
on — again after every replacement, so the addresses stay — and ``allowedAddressPairs``,
set in place on the server's own port (the one Nova made on ``spec.networks``).

A server boots on a port only once the Port is Ready and no server holds the port: a
replaced server's port is free again once Nova has deleted that server, and a port
another server holds is waited for (``WaitingForPort``, naming the server), never taken.
"""

from __future__ import annotations

from kumo.api.virtualmachine import VirtualMachineSpec
from kumo.engine import lifecycle
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Body, Context, Obj, Store
from kumo.kinds import address_pairs, references
from kumo.kinds.virtualmachine import plan
from kumo.ports.model import AddressPair, Port, Server, described_marker

#: While a port is still held by a server (the one replaced, as Nova deletes it).
HELD_SECONDS = 2.0
#: Safety net while a Port object is missing or not Ready (its status change wakes the VM).
PORT_REF_SECONDS = 30.0


def wanted(spec: VirtualMachineSpec, namespace: str, store: Store) -> tuple[list[str], list[str]]:
    """The port IDs of ``spec.ports`` (Ready Port objects'), and why the others cannot be
    used yet (naming the field)."""
    ids: list[str] = []
    waiting: list[str] = []
    for i, ref in enumerate(spec.ports):
        field = f"spec.ports[{i}]"
        if store.get("Port", namespace, ref.name) is None:
            waiting.append(f"{field}: Port {ref.name!r} not found in namespace {namespace}")
            continue
        resolved = references.resolve(store, namespace, "Port", ref.name, "id")
        if resolved.value is None:
            waiting.append(f"{field}: {resolved.waiting}")
        else:
            ids.append(resolved.value)
    return ids, waiting


async def before_create(
    ctx: Context, obj: Obj, spec: VirtualMachineSpec, kept: Body
) -> tuple[tuple[str, ...], lifecycle.Wait | None]:
    """The ports a new server boots on, or a ``WaitingForPort`` wait: a Port not Ready, or
    its port still held by a server (``kept``: the status fields the wait reports)."""
    ids, waiting = wanted(spec, obj.namespace, ctx.store)
    after = PORT_REF_SECONDS
    if not waiting:
        for i, port_id in enumerate(ids):
            port = await ctx.cloud.get_port(port_id)
            name = spec.ports[i].name
            if port is None:
                waiting.append(f"spec.ports[{i}]: port {port_id} of Port {name!r} is gone")
            elif port.device_id:
                after = HELD_SECONDS
                waiting.append(
                    f"spec.ports[{i}]: port {port_id} of Port {name!r} is still held by "
                    f"server {port.device_id}; the server boots on it once Nova lets it go"
                )
    if waiting:
        wait = lifecycle.Wait(
            "; ".join(waiting), reason="WaitingForPort", phase="Pending", after=after, status=kept
        )
        return (), wait
    return tuple(ids), None


def own_port(ports: list[Port], server: Server) -> Port | None:
    """The server's own port: of those Nova made (a Port object's carries Kumo's marker),
    the one holding the VM's first address, else the first by ID."""
    own = sorted((p for p in ports if described_marker(p) is None), key=lambda p: p.id)
    primary = plan.primary_ip(server)
    return next((p for p in own if primary in p.fixed_addresses), own[0] if own else None)


async def set_address_pairs(
    ctx: Context, obj: Obj, spec: VirtualMachineSpec, server: Server
) -> list[AddressPair] | None:
    """Put ``spec.allowedAddressPairs`` on the server's own port, in place; what Neutron
    shows there after. None when there is nothing to look at: no pairs asked for nor set
    before, or a server not ACTIVE yet (its ports are Nova's to make)."""
    pairs = address_pairs.from_spec(spec.allowed_address_pairs)
    if server.status != "ACTIVE" or not (pairs or obj.status.get("allowedAddressPairs")):
        return None
    port = own_port(await ctx.cloud.list_ports_of_device(server.id), server)
    if port is None:
        if pairs:
            raise TerminalError(
                "InvalidSpec",
                f"server {server.id} has no port of its own (it is on spec.ports only): set "
                "the pairs on its Port instead",
                field="spec.allowedAddressPairs",
            )
        return []
    if address_pairs.same(port, pairs):
        return list(port.allowed_address_pairs)
    changed = await ctx.cloud.update_port(port.id, allowed_address_pairs=pairs)
    shown = ", ".join(p.ip_address for p in pairs) or "(none)"
    ctx.events.emit(
        obj,
        "Normal",
        "AddressPairsSet",
        f"server {server.id}, port {port.id}: allowed address pairs {shown}",
    )
    return list(changed.allowed_address_pairs)

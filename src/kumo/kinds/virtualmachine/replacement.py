"""``replacementPolicy: Never``: a VirtualMachine whose server must not be rebuilt.

With ``Always`` (the default) a server that is gone, deleted behind Kumo's back, left in
ERROR past its grace or whose replaced-on-change field changed is replaced by a new one.
Some servers have an identity others hold: a Cluster API Machine's ``providerID`` names
its server and cannot change, so a second server under the same Machine would be a node
CAPI does not know. For those the VM reports, and makes nothing:

* ``ServerLost``: the server recorded in ``status.id`` is gone, or Nova is deleting it;
* ``ServerError``: Nova put it in ERROR (the fault is in the message);
* ``ReplacementRefused``: a field Nova cannot change in place changed.

Each is a permanent error naming ``spec.replacementPolicy``: whoever owns the VM
replaces it by deleting it (MachineHealthCheck deletes the Machine). The actuator asks
here before it replaces (:func:`refuse`) and before it creates (:func:`lost`).
"""

from __future__ import annotations

from kumo.api.virtualmachine import VirtualMachineSpec
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Obj
from kumo.kinds.virtualmachine import plan
from kumo.ports.model import Server

FIELD = "spec.replacementPolicy"
#: Why a server is not replaced (``plan.replacement``'s answer → the reason reported).
REASONS = {"spec": "ReplacementRefused", "deleting": "ServerLost", "error": "ServerError"}
#: The fields whose change replaces a server (``plan.spec_hash``), for the message.
REPLACED_ON_CHANGE = (
    "image, flavor, initScript, networks, ports, availabilityZone, keyName, serverGroup, rootVolume"
)
_AFTER = "replacementPolicy is Never: no new server is made (delete the object to replace it)"


def never(spec: VirtualMachineSpec) -> bool:
    return spec.replacement_policy == "Never"


def refusal(server: Server, why: str) -> TerminalError:
    """The error reported instead of replacing ``server`` for ``why`` (``spec``,
    ``deleting`` or ``error``, as :func:`plan.replacement` says)."""
    if why == "spec":
        detail = (
            f"the spec changed a field Nova cannot change in place ({REPLACED_ON_CHANGE}); "
            f"server {server.id} is kept as it is"
        )
    elif why == "deleting":
        detail = f"server {server.id} is being deleted outside Kumo"
    else:
        fault = server.fault or "no fault given"
        detail = (
            f"Nova put server {server.id} in ERROR ({plan.fault_reason(server.fault)}: {fault})"
        )
    return TerminalError(REASONS[why], f"{detail}; {_AFTER}", field=FIELD)


def refuse(spec: VirtualMachineSpec, server: Server, why: str | None) -> None:
    """Under ``Never``, raise instead of replacing ``server`` (nothing is deleted)."""
    if why is not None and never(spec):
        raise refusal(server, why)


def lost(spec: VirtualMachineSpec, obj: Obj) -> None:
    """Under ``Never``, raise ``ServerLost`` before a create when status names a server
    (it was made once, and is gone now): the object never gets a second one."""
    known = obj.status.get("id")
    if known and never(spec):
        raise TerminalError(
            "ServerLost", f"server {known} is gone; {_AFTER}", field=FIELD, status={"id": known}
        )

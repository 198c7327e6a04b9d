"""Orphans for people: what each orphaned resource is, what the sweep does with it, and
how to keep it (``spec.import``) or delete it by hand (the ``openstack`` command).

The sweep's ``OrphanFound`` events carry :func:`remedy`'s text; ``kumo orphans`` lists
a cloud's orphans with it (:func:`find_orphans`, :func:`render`). An orphan still
carries the marker of its vanished object, and an import refuses a resource another
object's marker is on (``AlreadyOwned``), so keeping one takes two steps: remove the
marker, then import it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from kumo.api.kinds import KINDS
from kumo.engine.sweep import OrphanSweep
from kumo.ports import model
from kumo.ports.model import Marked


@dataclass(frozen=True)
class Remedy:
    """How a person keeps or deletes one kind of orphan. The commands are formats over
    ``id``, ``zone`` (a recordset's), ``tag`` and ``ctag`` (the owner's and the
    cluster's marker tags) and ``key`` and ``ckey`` (their metadata keys): see
    :mod:`kumo.ports.markers`. A marker word (a description, a name) goes with the
    text that holds it."""

    delete: str
    #: The Kumo kind whose ``spec.import`` takes it over, if any.
    importer: str | None = None
    #: What removes Kumo's marker (nothing can for a keypair: it is in the key).
    unmark: tuple[str, ...] = ()


REMEDIES: dict[str, Remedy] = {
    "server": Remedy(
        "openstack server delete {id}",
        "VirtualMachine",
        ("openstack --os-compute-api-version 2.26 server unset --tag {tag} --tag {ctag} {id}",),
    ),
    "server_group": Remedy("openstack server group delete {id}"),
    "loadbalancer": Remedy(
        "openstack loadbalancer delete --cascade {id}",
        "LoadBalancer",
        ("openstack loadbalancer unset --tag {tag} --tag {ctag} {id}",),
    ),
    "recordset": Remedy(
        "openstack recordset delete {zone} {id}",
        "DNSRecord",
        ("openstack recordset set --no-description {zone} {id}",),
    ),
    "share": Remedy(
        "openstack share delete {id}",
        None,
        ("openstack share unset --property {key} --property {ckey} {id}",),
    ),
    "security_group": Remedy(
        "openstack security group delete {id}",
        "SecurityGroup",
        ("openstack security group unset --tag {tag} --tag {ctag} {id}",),
    ),
    "keypair": Remedy("openstack keypair delete {id}"),
    "floatingip": Remedy(
        "openstack floating ip delete {id}",
        "FloatingIP",
        (
            "openstack floating ip unset --tag {tag} --tag {ctag} {id}",
            "openstack floating ip set --description '' {id}",
        ),
    ),
    "volume": Remedy(
        "openstack volume delete {id}",
        "Volume",
        ("openstack volume unset --property {key} --property {ckey} {id}",),
    ),
    "snapshot": Remedy(
        "openstack volume snapshot delete {id}",
        None,
        ("openstack volume snapshot unset --property {key} --property {ckey} {id}",),
    ),
    "router": Remedy(
        "openstack router remove subnet {id} <subnet> (each), then openstack router delete {id}",
        None,
        ("openstack router unset --tag {tag} --tag {ctag} {id}",),
    ),
    "network": Remedy(
        "openstack network delete {id}",
        "Network",
        ("openstack network unset --tag {tag} --tag {ctag} {id}",),
    ),
    "port": Remedy(
        "openstack port delete {id}",
        "Port",
        (
            "openstack port unset --tag {tag} --tag {ctag} {id}",
            "openstack port set --description '' {id}",
        ),
    ),
}


def _commands(m: Marked, formats: tuple[str, ...]) -> list[str]:
    fields = {
        "id": m.id,
        "zone": m.zone_id or "<zone>",
        "tag": model.owner_tag(m.owner),
        "ctag": model.cluster_tag(),
        "key": model.SHARE_OWNER_KEY,
        "ckey": model.CLUSTER_KEY,
    }
    return [f.format(**fields) for f in formats]


def import_yaml(m: Marked) -> str:
    """The object that takes ``m`` over once its marker is gone (empty: no kind can)."""
    remedy = REMEDIES.get(m.kind)
    if remedy is None or remedy.importer is None:
        return ""
    api_version = next(i.api_version for i in KINDS if i.kind == remedy.importer)
    return (
        f"apiVersion: {api_version}\nkind: {remedy.importer}\nmetadata:\n  name: <name>\n"
        f"spec:\n  import:\n    id: {m.id}\n  # and the spec fields it must match"
    )


def keep_hint(m: Marked) -> str:
    """How to keep ``m``: remove its marker, then import it (where a kind can)."""
    remedy = REMEDIES.get(m.kind)
    if remedy is None or not remedy.unmark:
        return f"a {m.kind} cannot be taken over: its marker cannot be removed"
    unmark = "; ".join(_commands(m, remedy.unmark))
    if remedy.importer is None:
        return f"remove its marker: {unmark}"
    return f"remove its marker: {unmark}; then apply\n{import_yaml(m)}"


def delete_hint(m: Marked) -> str:
    remedy = REMEDIES.get(m.kind)
    return _commands(m, (remedy.delete,))[0] if remedy is not None else ""


def remedy(m: Marked) -> str:
    """Both hints, for an event's message."""
    return f"To keep it, {keep_hint(m)}\nTo delete it: {delete_hint(m)}"


# -- `kumo orphans` --------------------------------------------------------------------------


@dataclass(frozen=True)
class Orphan:
    """One row of ``kumo orphans``."""

    kind: str
    id: str
    name: str
    owner: str
    sweep: str  # "delete" or "keep"
    why: str
    keep: str
    delete: str


def orphans(marked: list[Marked], live_uids: set[str], sweep: OrphanSweep) -> list[Orphan]:
    """What the sweep finds orphaned in one project's ``marked`` resources, and what it
    would do with each (the grace aside: that is a matter of time)."""
    verdict = OrphanSweep(
        grace=0,
        max_share=sweep.max_share,
        max_orphans=sweep.max_orphans,
        delete_data=sweep.delete_data,
    ).judge(marked, live_uids, now=0)
    rows = []
    for m in verdict.orphaned:
        if m in verdict.kept:
            fate, why = "keep", f"may hold data (--orphan-sweep-data {m.kind} deletes it)"
        elif m.in_use:
            fate, why = "keep", "servers are still in it"
        elif verdict.suspended:
            fate, why = "keep", f"the sweep is suspended: {verdict.suspended}"
        elif m.busy:
            fate, why = "delete", "once the cloud is done with it, after the grace"
        else:
            fate, why = "delete", "after the grace (--orphan-grace)"
        rows.append(Orphan(m.kind, m.id, m.name, m.owner, fate, why, keep_hint(m), delete_hint(m)))
    return rows


async def find_orphans(cloud: Any, kube: Any, sweep: OrphanSweep) -> list[Orphan]:
    """List ``cloud`` once in full and the cluster's objects of every kind (a
    KumoCluster's too: its machine sets' server groups carry its marker), and say which
    marked resources have no object."""
    await cloud.watch.sync()
    live = {body["metadata"]["uid"] for info in KINDS for body in await kube.list(info, None)}
    return orphans(cloud.watch.marked(), live, sweep)


def render(rows: list[Orphan], output: str) -> str:
    if output == "json":
        return json.dumps([asdict(r) for r in rows], indent=2) + "\n"
    if not rows:
        return "no orphaned resources\n"
    lines = []
    for r in rows:
        lines.append(f"{r.kind} {r.id} ({r.name}) owner uid {r.owner}: {r.sweep}, {r.why}")
        lines.append("  keep: " + r.keep.replace("\n", "\n    "))
        lines.append(f"  delete: {r.delete}")
    return "\n".join(lines) + "\n"

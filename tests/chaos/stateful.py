"""The stateful group the kill -9 run churns, its converged state, and its volume audit.

A VirtualMachineGroup with ``identity: Ordinal`` and one volume template: member
``st-<i>`` has the Volume object ``st-data-<i>`` (Cinder name ``<namespace>-st-data-<i>``,
marker = the Volume object's UID). :func:`converged` reads the cluster and the real Nova
and Cinder (directly) into the state a phase must reach; :func:`audit` judges the
volumes with ``tests/chaos/audit.py``'s pure checks, and the servers with the same
mismatch and duplicate checks as the stateless stack.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.chaos import stack
from tests.chaos.audit import (
    find_duplicates,
    server_mismatches,
    volume_problems,
)
from tests.integration.helpers import apply
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import get_obj
from tests.integration.test_stateful_groups import group as stateful_group

GROUP = "st"
TEMPLATE = "data"  # the volume template of test_stateful_groups.group
FLAVORS = ("m1.tiny", "m1.small")


def member(ordinal: int) -> str:
    return f"{GROUP}-{ordinal}"


def volume(ordinal: int) -> str:
    return f"{GROUP}-{TEMPLATE}-{ordinal}"


def group_manifest(replicas: int, flavor: str = FLAVORS[0]) -> dict[str, Any]:
    """The integration suite's stateful group (one volume template ``data``), on the chaos
    stack's template; Retain on scale-down (ordinal i's volume waits, detached, for i to
    come back), Delete with the group (so deleting it must leave nothing)."""
    return stateful_group(
        GROUP,
        replicas,
        template={**stack.TEMPLATE, "flavor": flavor},
        volumeRetention={"whenScaledDown": "Retain", "whenDeleted": "Delete"},
    )


def create(namespace: str, replicas: int) -> None:
    apply(namespace, group_manifest(replicas))


def patch(namespace: str, spec: dict[str, Any]) -> None:
    kubectl(
        "patch", "vmg", GROUP, "-n", namespace, "--type=merge", "-p", json.dumps({"spec": spec})
    )


def _by_name(kind: str, namespace: str) -> dict[str, dict[str, Any]]:
    out = kubectl(
        "get", kind, "-n", namespace, "-l", f"kumo.dev/group={GROUP}", "-o", "json"
    ).stdout
    return {o["metadata"]["name"]: o for o in json.loads(out)["items"]}


@dataclass
class Converged:
    """A phase's end: member ordinal → its server, Volume object name → its Cinder ID."""

    servers: dict[int, str]
    volumes: dict[str, str]


def converged(
    conn: Any, namespace: str, replicas: int, flavor: str, *, avoid: frozenset[str] = frozenset()
) -> Converged | None:
    """The group Ready at ``replicas`` on its latest spec; members ``st-0..`` exactly, each
    Ready on ``flavor`` with an ACTIVE server not in ``avoid`` (servers the phase replaced)
    that has exactly its own volume, attached on both sides; ordinals >= replicas have
    their Volume objects, detached and listed in ``status.retainedVolumes``. None until
    then."""
    group = get_obj("vmg", GROUP, namespace)
    st = stack.status_of(group)
    if not stack.current(group) or (st.get("readyReplicas"), st.get("replicas")) != (
        replicas,
        replicas,
    ):
        return None
    vms = _by_name("vm", namespace)
    vols = _by_name("vol", namespace)
    if set(vms) != {member(i) for i in range(replicas)}:
        return None
    servers: dict[int, str] = {}
    for i in range(replicas):
        vm = vms[member(i)]
        sid = stack.status_of(vm).get("id")
        if vm["metadata"].get("deletionTimestamp") or not stack.current(vm) or not sid:
            return None
        if vm["spec"].get("flavor") != flavor or sid in avoid:
            return None
        servers[i] = sid
    ids: dict[str, str] = {}
    for name, vol in vols.items():
        vid = stack.status_of(vol).get("id")
        if vol["metadata"].get("deletionTimestamp") or not stack.current(vol) or not vid:
            return None
        ids[name] = vid
    retained = sorted(n for n in ids if n not in {volume(i) for i in range(replicas)})
    if any(volume(i) not in ids for i in range(replicas)):
        return None
    if sorted(st.get("retainedVolumes") or []) != retained:
        return None
    attached = {v.id: sorted(v.servers) for v in stack.cinder_volumes(conn)}
    for i, sid in servers.items():
        vid = ids[volume(i)]
        reported = [v.get("id") for v in stack.status_of(vms[member(i)]).get("volumes") or []]
        if reported != [vid] or attached.get(vid) != [sid] or not stack.server_active(conn, sid):
            return None
    if any(attached.get(ids[name]) != [] for name in retained):
        return None
    return Converged(servers, ids)


def audit(conn: Any, namespace: str, first: dict[str, str], state: Converged) -> list[str]:
    """Lost, duplicate and shared volumes (against the IDs ``first`` seen), and members
    whose servers are not exactly their recorded one."""
    cinder_names = {name: f"{namespace}-{name}" for name in {*first, *state.volumes}}
    problems = volume_problems(stack.cinder_volumes(conn), first, state.volumes, cinder_names)
    markers = stack.cloud_markers(conn)
    vms = _by_name("vm", namespace)
    recorded = {v["metadata"]["uid"]: stack.status_of(v).get("id") for v in vms.values()}
    problems += [
        f"VM {uid}: servers {ids}, status.id {recorded[uid]}"
        for uid, ids in server_mismatches(recorded, markers).items()
    ]
    problems += [
        f"{len(ids)} {kind}s for owner {owner}: {ids}"
        for (kind, owner), ids in find_duplicates(markers, set(recorded)).items()
    ]
    return problems

"""`kubectl kumo tree`: an object, what it owns, what it names and what names it, with
the cloud resources their statuses record, as a tree.

Pure: it reads a snapshot of the namespace's objects (:data:`Objects`) and returns
:class:`Node` s; the plugin (:mod:`kumo.runtime.kubectl`) reads the snapshot and prints.
Who refers to whom comes from the declared references
(:data:`kumo.kinds.references.REFERENCES`) and ownership from ``ownerReferences`` of
the kinds the registry says a kind creates (a group's members and volumes), so a new kind or reference shows without a change here.
The cloud resources are every ID a status records (``id``, ``serverGroupId``,
``ports[80].poolId``…), found by walking the status, not by a list per kind.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kumo.api.common import PAUSED_ANNOTATION
from kumo.api.kinds import KINDS, KindInfo
from kumo.engine.objects import Body
from kumo.kinds.references import REFERENCES, readers_of, referenced_names
from kumo.kinds.registry import RECORDS

#: (kind, namespace, name) → the object's body, as the API server returns it.
ObjectKey = tuple[str, str, str]
Objects = Mapping[ObjectKey, Body]

#: Status IDs that name no cloud resource of their own.
NOT_RESOURCES = frozenset({"hostId"})
#: Fields that label an item of a status list (``ports[80]``, ``members[web-0]``).
ITEM_LABELS = ("name", "port", "cidr", "accessTo", "id")

KUMO_KINDS = {info.kind: info for info in KINDS}


def kind_info(text: str) -> KindInfo | None:
    """A kind as kubectl names it: kind, singular, plural or short name, any case,
    with or without the group (``vmg``, ``virtualmachinegroups.kumo.dev``)."""
    word = text.lower().split(".", 1)[0]
    for info in KINDS:
        if word in {info.kind.lower(), info.singular, info.plural, *info.short_names}:
            return info
    return None


def index(bodies: Iterable[Body]) -> dict[ObjectKey, Body]:
    """Bodies (each with ``kind``) by (kind, namespace, name)."""
    return {
        (
            b["kind"],
            (b.get("metadata") or {}).get("namespace", "default"),
            b["metadata"]["name"],
        ): b
        for b in bodies
    }


@dataclass(frozen=True)
class CloudResource:
    """One ID a status records: ``path`` in the status (``serverGroupId``,
    ``ports[80].poolId``), the ID, and the state the status gives beside it."""

    path: str
    id: str
    state: str = ""
    #: With ``--cloud``: "present", "missing" (the cloud has no marked resource with that
    #: ID) or "" (not looked up).
    cloud: str = ""


@dataclass
class Node:
    kind: str
    name: str
    namespace: str
    uid: str = ""
    #: How its parent reaches it: "" (the root), "owns", "spec.<field>" (the parent
    #: names it) or "used by: spec.<field>" (it names the parent).
    via: str = ""
    exists: bool = True
    ready: str = "-"  # the Ready condition's status: True, False, Unknown or "-"
    reason: str = ""
    message: str = ""
    #: The main cloud resource's ID (``status.id``) and state.
    id: str = ""
    state: str = ""
    cloud: list[CloudResource] = field(default_factory=list)
    #: With ``--cloud``: what the cloud's listing says of ``id`` (see :func:`look_up`).
    cloud_state: str = ""
    children: list[Node] = field(default_factory=list)
    #: Shown in full elsewhere in the tree (a cycle or a second path to it).
    repeated: bool = False

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "namespace": self.namespace,
            "uid": self.uid,
            "via": self.via,
            "exists": self.exists,
            "ready": self.ready,
            "reason": self.reason,
            "message": self.message,
            "id": self.id,
            "state": self.state,
            "cloudState": self.cloud_state,
            "cloud": [vars(c) for c in self.cloud],
            "repeated": self.repeated,
            "children": [c.as_json() for c in self.children],
        }


def condition(body: Body, type_: str) -> Body | None:
    for c in (body.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return c  # type: ignore[no-any-return]
    return None


def is_ready(body: Body) -> bool:
    ready = condition(body, "Ready")
    return bool(ready and ready.get("status") == "True") and not deleting(body)


def deleting(body: Body) -> bool:
    return bool((body.get("metadata") or {}).get("deletionTimestamp"))


def paused(body: Body) -> bool:
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    return annotations.get(PAUSED_ANNOTATION) == "true"


def summary(body: Body) -> tuple[str, str, str]:
    """(Ready status, reason, message): the Ready condition's, with Stalled, Paused and
    a deletion said first when they hold."""
    ready = condition(body, "Ready") or {}
    status = ready.get("status", "-")
    reason, message = ready.get("reason", ""), ready.get("message", "")
    stalled = condition(body, "Stalled") or {}
    if stalled.get("status") == "True" and status != "True":
        reason = stalled.get("reason") or reason
        message = stalled.get("message") or message
    if paused(body):
        reason = "Paused"
    if deleting(body) and reason in ("", "Ready"):
        reason = "Deleting"
    if not ready and not (body.get("status") or {}).get("conditions"):
        reason, message = "NotReconciled", "no conditions yet: Kumo has not reconciled it"
    return status, reason, message


def state_of(status: Mapping[str, Any]) -> str:
    """What a status says of its cloud resource: its ``*Status`` strings (Octavia's
    provisioning/operating, Cinder's, Manila's), else its phase."""
    states = [
        str(v)
        for k, v in status.items()
        if k.endswith("Status") and isinstance(v, str) and v and k != "status"
    ]
    return "/".join(states) or str(status.get("phase") or "")


def cloud_resources(status: Mapping[str, Any], prefix: str = "") -> list[CloudResource]:
    """Every cloud ID in ``status`` but the top ``id`` (the node's own): keys ``id`` in a
    list's items and keys ending in ``Id``, depth first, with the state beside them."""
    found: list[CloudResource] = []
    for key, value in status.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, str) and value and key not in NOT_RESOURCES:
            if (key.endswith("Id") and key != "observedGeneration") or (prefix and key == "id"):
                state = state_of(status) if prefix and key == "id" else ""
                found.append(CloudResource(path, value, state))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    label = next((str(item[k]) for k in ITEM_LABELS if item.get(k)), str(i))
                    found.extend(cloud_resources(item, f"{path}[{label}]"))
    return found


def _node(objects: Objects, key: ObjectKey, via: str) -> Node:
    kind, namespace, name = key
    body = objects.get(key)
    if body is None:
        return Node(
            kind,
            name,
            namespace,
            via=via,
            exists=False,
            reason="NotFound",
            message=f"no {kind} {name!r} in namespace {namespace}",
        )
    ready, reason, message = summary(body)
    status = body.get("status") or {}
    return Node(
        kind,
        name,
        namespace,
        str(body["metadata"].get("uid") or ""),
        via,
        ready=ready,
        reason=reason,
        message=message,
        id=str(status.get("id") or ""),
        state=state_of(status),
        cloud=cloud_resources(status),
    )


def owned(objects: Objects, body: Body) -> list[ObjectKey]:
    """The objects of the kinds ``body``'s kind creates (the registry's ``creates``: a
    group's members and Volumes) whose ``ownerReferences`` name it, by kind then name."""
    uid = (body.get("metadata") or {}).get("uid")
    namespace = body["metadata"].get("namespace", "default")
    made = {i.kind for r in RECORDS if r.info.kind == body["kind"] for i in r.creates}
    keys = [
        key
        for key, other in objects.items()
        if key[1] == namespace
        and key[0] in made
        and uid
        and any(r.get("uid") == uid for r in other["metadata"].get("ownerReferences") or [])
    ]
    return sorted(keys, key=_order)


def referenced(body: Body) -> list[tuple[str, ObjectKey]]:
    """(``spec.<field>``, target) of every declared reference ``body`` makes to a kind
    of Kumo's (a ConfigMap or Secret is not shown), in the order of the declarations."""
    kind, meta = body["kind"], body["metadata"]
    spec = body.get("spec") or {}
    found: list[tuple[str, ObjectKey]] = []
    for ref in REFERENCES:
        if ref.referrer != kind or ref.target not in KUMO_KINDS:
            continue
        for name in dict.fromkeys(referenced_names(spec, ref.field)):
            found.append(
                (f"spec.{ref.field}", (ref.target, meta.get("namespace", "default"), name))
            )
    return found


def users(objects: Objects, body: Body) -> list[tuple[str, ObjectKey]]:
    """(``spec.<field>``, referrer) of every object naming ``body`` in a declared
    reference, by kind then name."""
    kind, meta = body["kind"], body["metadata"]
    namespace, name = meta.get("namespace", "default"), meta["name"]
    found: list[tuple[str, ObjectKey]] = []
    for ref in readers_of(kind):
        for key, other in sorted(objects.items(), key=lambda item: _order(item[0])):
            if (
                key[0] == ref.referrer
                and key[1] == namespace
                and name in referenced_names(other.get("spec") or {}, ref.field)
            ):
                found.append((f"spec.{ref.field}", key))
    return found


def _order(key: ObjectKey) -> tuple[int, str, str]:
    kinds = list(KUMO_KINDS)
    return (kinds.index(key[0]) if key[0] in kinds else len(kinds), key[1], key[2])


def build(objects: Objects, root: ObjectKey) -> Node:
    """The tree under ``root``: what it owns, what it names (``spec.<field>``) and what
    names it (``used by``), each object once in full (later: ``repeated``).

    What names an object is followed from the root, from what it owns and from what
    names it, not from what it names: a Network's users are every VM on it, which
    says nothing about the root."""
    shown: set[ObjectKey] = set()

    def grow(key: ObjectKey, via: str, upward: bool, parent: ObjectKey | None = None) -> Node:
        node = _node(objects, key, via)
        body = objects.get(key)
        if body is None:
            return node
        if key in shown:
            node.repeated = True
            return node
        shown.add(key)
        for child in owned(objects, body):
            node.children.append(grow(child, "owns", upward))
        for field_, target in referenced(body):
            if not (via.startswith("used by") and target == parent):  # the way it came
                node.children.append(grow(target, field_, False))
        if upward:
            for field_, user in users(objects, body):
                if user not in shown:
                    node.children.append(grow(user, f"used by: {field_}", True, key))
        return node

    return grow(root, "", True)


class Listed(Protocol):
    """A cloud resource carrying this cluster's marker (:class:`kumo.ports.model.Marked`)."""

    @property
    def kind(self) -> str: ...
    @property
    def id(self) -> str: ...
    @property
    def owner(self) -> str: ...


def look_up(root: Node, listed: Iterable[Listed]) -> None:
    """With the cloud's listing of marked resources: each object's own resource
    (``status.id``) and every other ID found ``present`` (with its cloud kind) or, for
    the object's own, ``missing``; a marked resource of an object that its status does
    not record is added as ``unrecorded``. IDs of resources that carry no marker
    (listeners, pools, members, subnets) are not looked up."""
    by_id = {m.id: m for m in listed}
    by_owner: dict[str, list[Listed]] = {}
    for m in by_id.values():
        by_owner.setdefault(m.owner, []).append(m)
    for node in walk(root):
        if not node.exists or node.repeated:
            continue
        recorded = {node.id, *(c.id for c in node.cloud)}
        node.cloud = [
            CloudResource(c.path, c.id, c.state, f"present: {by_id[c.id].kind}")
            if c.id in by_id
            else c
            for c in node.cloud
        ]
        if node.id:
            mine = by_id.get(node.id)
            node.cloud_state = f"present: {mine.kind}" if mine else "missing"
        for m in by_owner.get(node.uid, []):
            if m.id not in recorded:
                node.cloud.append(CloudResource(f"({m.kind})", m.id, "", "unrecorded"))


def walk(node: Node) -> Iterable[Node]:
    yield node
    for child in node.children:
        yield from walk(child)


# -- text ----------------------------------------------------------------------------------


def _ready_text(node: Node) -> str:
    return node.ready if node.exists else "missing"


def rows(node: Node) -> list[tuple[str, str, str, str, str]]:
    """(NAME with the tree's lines, READY, REASON, ID, STATE) per line: an object, then
    its status's other cloud IDs, then its children."""
    out: list[tuple[str, str, str, str, str]] = []

    def add(n: Node, lead: str, branch: str) -> None:
        via = f" ({n.via})" if n.via and n.via != "owns" else ""
        name = f"{lead}{branch}{n.kind}/{n.name}{via}"
        state = n.state + (f" ({n.cloud_state})" if n.cloud_state else "")
        if n.repeated:
            out.append((name + " (shown above)", _ready_text(n), n.reason, n.id, state))
            return
        out.append((name, _ready_text(n), n.reason, n.id, state))
        inner = lead + ("│  " if branch == "├─ " else "   " if branch else "")
        items: list[CloudResource | Node] = [*n.cloud, *n.children]
        for i, item in enumerate(items):
            last = i == len(items) - 1
            mark = "└─ " if last else "├─ "
            if isinstance(item, CloudResource):
                state = " ".join(filter(None, (item.state, item.cloud and f"({item.cloud})")))
                out.append((f"{inner}{mark}{item.path}", "", "", item.id, state))
            else:
                add(item, inner, mark)

    add(node, "", "")
    return out


def render(node: Node) -> str:
    """The tree as a table, as `kubectl tree` prints one."""
    header = ("NAME", "READY", "REASON", "ID", "STATE")
    table = [header, *rows(node)]
    widths = [max(len(row[i]) for row in table) for i in range(len(header) - 1)]
    lines = [
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])) + "  " + row[-1]
        for row in table
    ]
    return "\n".join(line.rstrip() for line in lines) + "\n"

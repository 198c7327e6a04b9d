"""The bodies of `kubectl kumo tree`, `why` and `orphans` (the kubectl plugin; its
arguments are parsed in :mod:`kumo.cli`).

They read the cluster with the user's kubeconfig, as kubectl does, through
:class:`ClusterReads`, the one seam between the plugin and the Kubernetes client: it
uses only the client's public reads (``list``, ``close``) and one events listing. The
cloud is read only with ``--cloud`` (chosen as `kumo orphans` chooses it). What the
tree holds and what blocks an object are decided by :mod:`kumo.kinds.tree` and
:mod:`kumo.kinds.why`, over one snapshot of the namespace.

Exit codes as the `kumo` command's (:mod:`kumo.runtime.commands`): 0 answered, 1 an
error (one line on standard error: no kubeconfig, the API server away, no such object),
64 a usage error (an unknown kind).
"""

from __future__ import annotations

import json
import sys
from typing import Any
from urllib.parse import quote

from kumo.api.kinds import KINDS, KindInfo
from kumo.engine.objects import Body
from kumo.kinds import tree, why
from kumo.runtime import cluster, commands, kube
from kumo.runtime.commands import EXIT_OK, CommandError

#: The reason of the orphan sweep's events (kumo.runtime.sweep).
ORPHAN_EVENT = "OrphanFound"


class ClusterReads:
    """Everything the plugin reads from Kubernetes."""

    def __init__(self) -> None:
        self.kube = commands.kube_client()

    async def objects(self, namespace: str) -> dict[tree.ObjectKey, Body]:
        """Every Kumo object in ``namespace``, by (kind, namespace, name)."""
        bodies = [body for info in KINDS for body in await self.kube.list(info, namespace)]
        return tree.index(bodies)

    async def events(self, reason: str, namespace: str | None) -> list[Body]:
        """The events of ``reason`` (in ``namespace``, or all), oldest first."""
        where = f"namespaces/{namespace}/" if namespace else ""
        path = f"/api/v1/{where}events?fieldSelector={quote('reason=' + reason)}"
        page = await self.kube._request("GET", path)
        items: list[Body] = (page or {}).get("items") or []
        return sorted(items, key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")

    async def close(self) -> None:
        await self.kube.close()


def target(text: str) -> tuple[KindInfo, str]:
    """``vmg/web`` (any name kubectl knows the kind by) → its kind and name."""
    kind, slash, name = text.partition("/")
    info = tree.kind_info(kind)
    if not slash or not name:
        raise UsageError(f"{text!r}: give KIND/NAME, e.g. vmg/web")
    if info is None:
        known = ", ".join(i.short_names[0] if i.short_names else i.plural for i in KINDS)
        raise UsageError(f"{kind!r} is not a kind of Kumo's (one of {known})")
    return info, name


class UsageError(Exception):
    """Bad arguments: exit 64."""


async def _snapshot(args: Any) -> tuple[ClusterReads, dict[tree.ObjectKey, Body], tree.ObjectKey]:
    info, name = target(args.target)
    namespace = args.namespace or kube.current_namespace()
    reads = ClusterReads()
    try:
        objects = await reads.objects(namespace)
    except BaseException:
        await reads.close()
        raise
    key = (info.kind, namespace, name)
    if key not in objects:
        await reads.close()
        raise CommandError(f"{info.plural} {name!r} not found in namespace {namespace}")
    return reads, objects, key


async def tree_command(args: Any) -> int:
    reads, objects, key = await _snapshot(args)
    try:
        node = tree.build(objects, key)
        if args.cloud is not None:
            await _look_in_cloud(args, reads, node)
    finally:
        await reads.close()
    if args.output == "json":
        sys.stdout.write(json.dumps(node.as_json(), indent=2) + "\n")
    else:
        sys.stdout.write(tree.render(node))
    return EXIT_OK


async def _look_in_cloud(args: Any, reads: ClusterReads, node: tree.Node) -> None:
    """Mark each ID of the tree present or missing in the cloud's listing of the
    resources that carry this cluster's markers (`kumo orphans`' listing)."""
    from kumo.cloud.credentials import CloudRegistry

    source = None if args.credentials_secret else commands.file_cloud(args)
    if source is None and not args.credentials_secret:
        raise CommandError(commands.NO_CLOUD)
    await cluster.establish(reads.kube, args.cluster_id)
    if source is None:
        source = await commands.secret_cloud(args, reads.kube)
    clouds = CloudRegistry(source, reads.kube.get_secret_data)
    try:
        cloud = await clouds.for_source(source)
        await cloud.watch.sync()
        tree.look_up(node, cloud.watch.marked())
    finally:
        await clouds.close_all()


async def why_command(args: Any) -> int:
    reads, objects, key = await _snapshot(args)
    await reads.close()
    answer = why.why(objects, key)
    if args.output == "json":
        sys.stdout.write(json.dumps(answer.as_json(), indent=2) + "\n")
    else:
        sys.stdout.write(why.render(answer))
    return EXIT_OK


async def orphans_command(args: Any) -> int:
    """Without ``--cloud``: the orphan sweep's ``OrphanFound`` events; with it, the
    cloud's own listing (`kumo orphans`)."""
    if args.cloud is not None:
        return await commands.orphans(args)
    namespace = None if args.all_namespaces else args.namespace
    reads = ClusterReads()
    try:
        events = await reads.events(ORPHAN_EVENT, namespace)
    finally:
        await reads.close()
    sys.stdout.write(render_orphan_events(events, args.output))
    return EXIT_OK


def render_orphan_events(events: list[Body], output: str) -> str:
    """The sweep's ``OrphanFound`` events: when, where, how often, and their message
    (what the orphan is, what the sweep does, how to keep or delete it)."""
    rows = [
        {
            "namespace": (e.get("metadata") or {}).get("namespace", ""),
            "last": e.get("lastTimestamp") or e.get("eventTime") or "",
            "count": e.get("count") or 1,
            "message": e.get("message", ""),
        }
        for e in events
    ]
    if output == "json":
        return json.dumps(rows, indent=2) + "\n"
    if not rows:
        return (
            "no OrphanFound events (they expire after the API server's event TTL, 1 h by "
            "default; --cloud lists the cloud itself)\n"
        )
    return "".join(
        f"{r['last']} {r['namespace']} (x{r['count']}):\n  "
        + r["message"].replace("\n", "\n  ")
        + "\n"
        for r in rows
    )


def run(name: str, command: Any, args: Any) -> int:
    """`kumo.runtime.commands.run`, with a usage error's exit 64."""
    try:
        target(args.target) if getattr(args, "target", None) else None
    except UsageError as error:
        sys.stderr.write(f"kubectl kumo {name}: {error}\n")
        return commands.EXIT_USAGE
    return commands.run(name, command, args, prog="kubectl kumo")

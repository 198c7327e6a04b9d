"""The marker builders (kinds/marking.py) against the per-kind code they replaced.

Each kind's own ``Owned`` factory, wired to a cloud that records every call, is run next
to the old per-kind code kept below as the reference, over many tags, descriptions and
metadata: what is written and in which order, what ``mark`` returns (or raises), and
what ``owner_of`` and ``legacy`` answer must be the same.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Callable
from typing import Any, cast

import pytest

from kumo.api import kinds
from kumo.engine import ownership
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Context, Obj
from kumo.kinds import described
from kumo.kinds.floatingip import actuator as floatingip
from kumo.kinds.network import actuator as network
from kumo.kinds.port import actuator as port
from kumo.kinds.securitygroup import actuator as securitygroup
from kumo.kinds.share import actuator as share
from kumo.kinds.virtualmachine import actuator as virtualmachine
from kumo.kinds.volume import actuator as volume
from kumo.ports import markers
from kumo.ports.model import (
    FloatingIP,
    Network,
    Port,
    Router,
    SecurityGroup,
    Server,
    Share,
    Volume,
    legacy_metadata,
    marked_metadata,
    metadata_owner,
    owner_of,
    released_metadata,
    released_tags,
)
from tests.unit.conftest import CLUSTER

UID = "8d6b1f3e-5a4c-4e2b-9f17-0c3d2a1b4e5f"
OTHER = "1f0c9a2b-3d4e-4f50-8a6b-7c8d9e0f1a2b"
CASES = 150


class Recorder:
    """A cloud that records every call (name, positional and keyword arguments) in
    order; ``update_floating_ip`` answers as Neutron does, with one field of its own so
    a test sees whether the answer is what ``mark`` returned."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.answer: Any = None

    def __getattr__(self, name: str) -> Callable[..., Any]:
        async def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, args, kwargs))
            if name in ("update_floating_ip", "update_port"):
                return dataclasses.replace(
                    self.answer, description=kwargs["description"], status="ANSWERED"
                )
            return None

        return call


# -- the per-kind code before kinds/marking.py (the reference) --------------------------------


def fields(owner_of: Any, legacy: Any, mark: Any, release: Any) -> dict[str, Any]:
    """The four fields as the old code gave them to its ``Owned``."""
    return {"owner_of": owner_of, "legacy": legacy, "mark": mark, "release": release}


def old_servers(cloud: Any, uid: str) -> dict[str, Any]:
    async def mark(server: Server) -> Server:
        tags = markers.marked_tags(server.tags, uid)
        await cloud.set_server_tags(server.id, tags)
        return dataclasses.replace(server, tags=tags)

    async def release(server: Server) -> None:
        await cloud.set_server_tags(server.id, released_tags(server.tags, uid))

    return fields(
        lambda server: owner_of(server.tags),
        lambda server: markers.legacy_tags(server.tags),
        mark,
        release,
    )


def old_neutron(cloud: Any, uid: str, set_tags: Any, update: Any) -> dict[str, Any]:
    """The old code of Network's network and router and of SecurityGroup, word for word
    but for their two calls (``set_tags``, ``update``: the description's write)."""

    async def mark(resource: Any) -> Any:
        tags = described.marked_tags(resource.tags, uid)
        await set_tags(resource.id, tags)
        text = described.wanted(None, resource.description, uid)
        await update(resource.id, text)
        return dataclasses.replace(resource, tags=tags, description=text)

    async def release(resource: Any) -> None:
        tags, text = described.released(resource.tags, resource.description, uid)
        await update(resource.id, text)
        await set_tags(resource.id, tags)

    return fields(described.owner, described.legacy, mark, release)


def old_networks(cloud: Any, uid: str) -> dict[str, Any]:
    def update(network_id: str, text: str) -> Any:
        return cloud.update_network(network_id, {"description": text})

    return old_neutron(cloud, uid, cloud.set_network_tags, update)


def old_routers(cloud: Any, uid: str) -> dict[str, Any]:
    def update(router_id: str, text: str) -> Any:
        return cloud.update_router(router_id, description=text)

    return old_neutron(cloud, uid, cloud.set_router_tags, update)


def old_groups(cloud: Any, uid: str) -> dict[str, Any]:
    def update(group_id: str, text: str) -> Any:
        return cloud.update_security_group(group_id, description=text)

    return old_neutron(cloud, uid, cloud.set_security_group_tags, update)


def old_answered(uid: str, description: str, set_tags: Any, update: Any) -> dict[str, Any]:
    """The old code of FloatingIP and of Port, word for word but for their two calls
    (``set_tags``, ``update``: the description's write, which answers the resource)."""

    async def mark(resource: Any) -> Any:
        tags = described.marked_tags(resource.tags, uid)
        await set_tags(resource.id, tags)
        marked = await update(resource.id, description=description)
        return dataclasses.replace(marked, tags=tags)

    async def release(resource: Any) -> None:
        tags, text = described.released(resource.tags, resource.description, uid)
        await update(resource.id, description=text)
        await set_tags(resource.id, tags)

    return fields(described.owner, described.legacy, mark, release)


def old_floating_ips(cloud: Any, uid: str, description: str) -> dict[str, Any]:
    return old_answered(uid, description, cloud.set_floating_ip_tags, cloud.update_floating_ip)


def old_ports(cloud: Any, uid: str, description: str) -> dict[str, Any]:
    return old_answered(uid, description, cloud.set_port_tags, cloud.update_port)


def old_volumes(cloud: Any, uid: str) -> dict[str, Any]:
    async def mark(volume: Volume) -> Volume:
        metadata = marked_metadata(volume.metadata, uid)
        await cloud.set_volume_metadata(volume.id, metadata)
        return Volume(**{**volume.__dict__, "metadata": metadata})

    async def release(volume: Volume) -> None:
        await cloud.set_volume_metadata(volume.id, released_metadata(volume.metadata, uid))

    return fields(
        lambda v: metadata_owner(v.metadata), lambda v: legacy_metadata(v.metadata), mark, release
    )


def old_shares(cloud: Any, uid: str) -> dict[str, Any]:
    async def mark(share: Share) -> Share:
        metadata = marked_metadata(share.metadata, uid)
        await cloud.set_share_metadata(share.id, metadata)
        return dataclasses.replace(share, metadata=metadata)

    async def release(share: Share) -> None:
        await cloud.set_share_metadata(share.id, released_metadata(share.metadata, uid))

    return fields(
        lambda s: metadata_owner(s.metadata), lambda s: legacy_metadata(s.metadata), mark, release
    )


# -- the values -----------------------------------------------------------------------------


def _tags(rng: random.Random) -> list[str]:
    pool = [
        "web",
        "env=prod",
        markers.MANAGED_TAG,
        markers.owner_tag(UID),
        markers.owner_tag(OTHER),
        f"{markers.CLUSTER_PREFIX}{CLUSTER}",
        f"{markers.CLUSTER_PREFIX}elsewhere",
        f"{markers.OWNER_PREFIX}{UID}@elsewhere",
        f"{markers.ORPHAN_PREFIX}{UID}",
        f"{markers.ORPHAN_PREFIX}{OTHER}",
        "kumo-ownerless",
    ]
    return [rng.choice(pool) for _ in range(rng.randrange(6))]


def _description(rng: random.Random) -> str | None:
    words = [
        "app",
        "web tier",
        markers.owner_word(UID),
        markers.owner_word(OTHER),
        markers.owner_tag(UID),  # a legacy marker word
        f"{markers.OWNER_PREFIX}{UID}@elsewhere",
        f"{markers.ORPHAN_PREFIX}{UID}",
        "x" * 200,  # with the marker word: too long for Neutron
    ]
    choice = rng.randrange(8)
    if choice == 0:
        return None
    if choice == 1:
        return ""
    return " ".join(rng.choice(words) for _ in range(rng.randrange(1, 4)))


def _metadata(rng: random.Random) -> dict[str, str]:
    pool = [
        ("size", "large"),
        (markers.SHARE_MANAGED_KEY, markers.SHARE_MANAGED_VALUE),
        (markers.SHARE_MANAGED_KEY, "other"),
        (markers.SHARE_OWNER_KEY, UID),
        (markers.SHARE_OWNER_KEY, OTHER),
        (markers.CLUSTER_KEY, CLUSTER),
        (markers.CLUSTER_KEY, "elsewhere"),
        (markers.SHARE_ORPHAN_KEY, UID),
        (markers.SHARE_ORPHAN_KEY, OTHER),
    ]
    return dict(rng.choice(pool) for _ in range(rng.randrange(6)))


def _resources(make: Callable[[random.Random], Any]) -> list[Any]:
    rng = random.Random(39)
    return [make(rng) for _ in range(CASES)]


def _server(rng: random.Random) -> Server:
    return Server("srv-1", "app", "ACTIVE", tags=_tags(rng), description=_description(rng))


def _network(rng: random.Random) -> Network:
    return Network("net-1", "app", tags=_tags(rng), description=_description(rng))


def _router(rng: random.Random) -> Router:
    return Router("r-1", "app", tags=_tags(rng), description=_description(rng))


def _group(rng: random.Random) -> SecurityGroup:
    return SecurityGroup("sg-1", "app", 3, tags=_tags(rng), description=_description(rng))


def _fip(rng: random.Random) -> FloatingIP:
    return FloatingIP(
        "fip-1", "203.0.113.7", "ext", "DOWN", tags=_tags(rng), description=_description(rng)
    )


def _port(rng: random.Random) -> Port:
    return Port("p-1", "net-1", "", name="app", tags=_tags(rng), description=_description(rng))


def _volume(rng: random.Random) -> Volume:
    return Volume("vol-1", "data", "available", 1, metadata=_metadata(rng), updated_at="t")


def _share(rng: random.Random) -> Share:
    return Share("sh-1", "data", "available", 1, "NFS", metadata=_metadata(rng))


# -- the comparison -------------------------------------------------------------------------


def _obj(info: Any, uid: str) -> Obj:
    return Obj(info, {"metadata": {"name": "app", "namespace": "ns", "uid": uid}})


def _ctx(cloud: Recorder) -> Context:
    nothing: Any = None
    return Context(cloud=cast(Any, cloud), kube=nothing, store=nothing, events=nothing)


async def _run(call: Any, resource: Any) -> tuple[Any, Any]:
    """What ``call(resource)`` returned, or the error it raised (reason and message)."""
    try:
        return "returned", await call(resource)
    except TerminalError as error:
        return "raised", (error.reason, error.field, str(error))


def _compare(
    resources: list[Any],
    new: Callable[[Context, str], ownership.Owned[Any]],
    old: Callable[[Any, str], dict[str, Any]],
) -> None:
    for resource in resources:
        for uid in (UID, OTHER):
            new_cloud, old_cloud = Recorder(), Recorder()
            new_cloud.answer = old_cloud.answer = resource
            owned, reference = new(_ctx(new_cloud), uid), old(old_cloud, uid)
            assert owned.owner_of(resource) == reference["owner_of"](resource), resource
            assert owned.legacy is not None and owned.mark and owned.release
            assert owned.legacy(resource) == reference["legacy"](resource), resource
            for step in ("mark", "release"):
                got = asyncio.run(_run(getattr(owned, step), resource))
                wanted = asyncio.run(_run(reference[step], resource))
                assert got == wanted, (step, uid, resource)
                assert new_cloud.calls == old_cloud.calls, (step, uid, resource)
                new_cloud.calls.clear()
                old_cloud.calls.clear()


def test_the_values_cover_every_case() -> None:
    """The generated values reach what the builders tell apart: this cluster's marker,
    another's, a legacy one, none, and a description too long to mark."""
    servers = _resources(_server)
    owners = {owner_of(s.tags) for s in servers}
    assert {UID, OTHER, f"{UID}@elsewhere", None} <= owners
    assert any(markers.legacy_tags(s.tags) for s in servers)
    fips = _resources(_fip)
    assert any(described.owner(f) == UID and not f.tags for f in fips), "by description only"
    too_long = 0
    for f in fips:
        try:
            described.wanted(None, f.description, UID)
        except TerminalError:
            too_long += 1
    assert too_long
    volumes = _resources(_volume)
    assert {UID, OTHER, None} <= {metadata_owner(v.metadata) for v in volumes}
    assert any(legacy_metadata(v.metadata) for v in volumes)


def _of(info: Any, owned: Callable[[Context, Obj], ownership.Owned[Any]]) -> Any:
    """A kind's ``Owned`` factory, for an object of ``info`` with the UID given."""
    return lambda ctx, uid: owned(ctx, _obj(info, uid))


#: Per resource: the values, the kind's ``Owned`` as it is now, its old code.
KINDS = {
    "server": (_server, _of(kinds.VIRTUAL_MACHINE, virtualmachine._servers), old_servers),
    "network": (_network, _of(kinds.NETWORK, network._networks), old_networks),
    "router": (_router, _of(kinds.NETWORK, network._routers), old_routers),
    "security-group": (_group, _of(kinds.SECURITY_GROUP, securitygroup._groups), old_groups),
    "volume": (_volume, lambda ctx, uid: volume.owned_volumes(ctx, uid, "data"), old_volumes),
    "share": (_share, _of(kinds.SHARE, share._shares), old_shares),
}


@pytest.mark.parametrize("resource", list(KINDS))
def test_each_kind_marks_and_releases_as_its_own_code_did(resource: str) -> None:
    make, new, old = KINDS[resource]
    _compare(_resources(make), new, old)


#: Those that write the spec's description: the values, the kind's ``Owned`` for that
#: description, its old code.
ANSWERED: dict[str, tuple[Any, Any, Any]] = {
    "floating-ip": (
        _fip,
        lambda ctx, uid, text: floatingip._floating_ips(
            ctx, _obj(kinds.FLOATING_IP, uid), "ext", None, text
        ),
        old_floating_ips,
    ),
    "port": (
        _port,
        lambda ctx, uid, text: port._ports(ctx, _obj(kinds.PORT, uid), text),
        old_ports,
    ),
}


@pytest.mark.parametrize("spec_description", [None, "", "web tier", "y" * 194])
@pytest.mark.parametrize("resource", list(ANSWERED))
def test_a_floating_ip_or_port_is_marked_with_its_spec_s_description(
    resource: str, spec_description: str | None
) -> None:
    """FloatingIP and Port write the spec's description (not the one the resource has),
    and ``mark`` returns Neutron's answer to that write, with the tags written."""
    text = described.text(spec_description, UID)
    make, new, old = ANSWERED[resource]
    _compare(
        _resources(make),
        lambda ctx, uid: new(ctx, uid, text),
        lambda cloud, uid: old(cloud, uid, text),
    )

"""The ownership marker's four fields of :class:`kumo.engine.ownership.Owned` —
``owner_of``, ``legacy``, ``mark`` and ``release`` — built once for each place a resource
carries the marker, instead of written out by every kind:

* :func:`by_tags`: the tags alone (VirtualMachine's servers);
* :func:`by_description`: the tags, and the description's marker word that Neutron's
  create call carries before the tags can follow (Network's network and router,
  SecurityGroup, FloatingIP, Port; kinds/described.py);
* :func:`by_metadata`: the metadata (Volume, Share).

A kind spreads the answer into its ``Owned``:
``ownership.Owned(noun=..., **marking.by_tags(Server, obj.uid, cloud.set_server_tags), ...)``.
The first argument is the resource's class, for the type checker only (mypy then checks
the four fields against the ``Owned``'s resource).

LoadBalancer, DNSRecord and KeyPair keep their own: an Octavia tag write leaves the load
balancer ``PENDING_UPDATE``, a recordset's and a keypair's marker is a word of a text.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Protocol, TypedDict, TypeVar, cast

from kumo.kinds import described
from kumo.ports.model import (
    Described,
    legacy_metadata,
    legacy_tags,
    marked_metadata,
    metadata_owner,
    owner_of,
    released_metadata,
    released_tags,
)
from kumo.ports.model import marked_tags as _marked_tags

R = TypeVar("R")


class Marking(TypedDict, Generic[R]):
    """The marker's fields of an ``Owned[R]`` (the engine's meaning of each)."""

    owner_of: Callable[[R], str | None]
    legacy: Callable[[R], bool]
    mark: Callable[[R], Awaitable[R]]
    release: Callable[[R], Awaitable[None]]


class Tagged(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def tags(self) -> list[str]: ...


class WithMetadata(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def metadata(self) -> dict[str, str]: ...


T = TypeVar("T", bound=Tagged)
D = TypeVar("D", bound=Described)
M = TypeVar("M", bound=WithMetadata)

#: ``set_tags(id, tags)``: make ``tags`` the resource's whole tag list.
SetTags = Callable[[str, list[str]], Awaitable[None]]


def _replaced(resource: R, **changes: Any) -> R:
    """``resource`` (a model dataclass, which the Protocols cannot say) with ``changes``."""
    changed: Any = resource
    return cast(R, dataclasses.replace(changed, **changes))


def by_tags(kind: type[T], uid: str, set_tags: SetTags) -> Marking[T]:
    """``uid``'s marker in the tags: marked and released by one ``set_tags`` call."""

    async def mark(resource: T) -> T:
        tags = _marked_tags(resource.tags, uid)
        await set_tags(resource.id, tags)
        return _replaced(resource, tags=tags)

    async def release(resource: T) -> None:
        await set_tags(resource.id, released_tags(resource.tags, uid))

    return Marking(
        owner_of=lambda resource: owner_of(resource.tags),
        legacy=lambda resource: legacy_tags(resource.tags),
        mark=mark,
        release=release,
    )


def by_description(
    kind: type[D],
    uid: str,
    set_tags: SetTags,
    set_description: Callable[[str, str], Awaitable[D | None]],
    text: str | None = None,
) -> Marking[D]:
    """``uid``'s marker in the tags and the description's last word. Marking writes the
    tags, then the description: ``text`` (None: the user's words it has now, and the
    marker word); releasing writes the description, then the tags. ``set_description``
    may answer the resource as the cloud now has it: ``mark`` returns that answer
    (with the tags written), else the resource with the two fields changed."""

    async def mark(resource: D) -> D:
        tags = _marked_tags(resource.tags, uid)
        await set_tags(resource.id, tags)
        wanted = described.wanted(None, resource.description, uid) if text is None else text
        answer = await set_description(resource.id, wanted)
        if answer is not None:
            return _replaced(answer, tags=tags)
        return _replaced(resource, tags=tags, description=wanted)

    async def release(resource: D) -> None:
        tags, released = described.released(resource.tags, resource.description, uid)
        await set_description(resource.id, released)
        await set_tags(resource.id, tags)

    return Marking(owner_of=described.owner, legacy=described.legacy, mark=mark, release=release)


def by_metadata(
    kind: type[M], uid: str, set_metadata: Callable[[str, dict[str, str]], Awaitable[None]]
) -> Marking[M]:
    """``uid``'s marker in the metadata: marked and released by one ``set_metadata`` call
    (it replaces the whole metadata)."""

    async def mark(resource: M) -> M:
        metadata = marked_metadata(resource.metadata, uid)
        await set_metadata(resource.id, metadata)
        return _replaced(resource, metadata=metadata)

    async def release(resource: M) -> None:
        await set_metadata(resource.id, released_metadata(resource.metadata, uid))

    return Marking(
        owner_of=lambda resource: metadata_owner(resource.metadata),
        legacy=lambda resource: legacy_metadata(resource.metadata),
        mark=mark,
        release=release,
    )

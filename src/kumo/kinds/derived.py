"""What an aggregate derives from each of its members' bodies, kept between its passes.

A group, a LoadBalancer or a DNSRecord reads every member on every pass: parsing each
body again (conditions, labels, addresses) made each pass cost O(S) Python work per
member, and members change one at a time, so a fleet cost O(S²). The object cache
replaces a body by a new dict on every change (a watch event, an own write), never in
place, so a body that is the very object seen last pass is unchanged and what was
derived from it holds.

Only a cache: a value is a pure function of its body, recomputed on a miss. Nothing is
decided from memory that a body does not say — after a restart the first pass derives
everything from the bodies, as it always did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from kumo.engine.objects import Body

T = TypeVar("T")


class Derived(Generic[T]):
    """``derive(body)`` per member body, recomputed only for a body not seen last pass.

    Per ``scope`` (the aggregate's UID): each call keeps exactly the bodies it was given,
    so members that left are forgotten and the cache holds one entry per current member.
    The entry holds the body itself, so its ``id`` cannot be reused by another while it
    is cached, and its metadata, spec and status (``_parts``)."""

    def __init__(self, derive: Callable[[Body], T]) -> None:
        self._derive = derive
        self._seen: dict[str, dict[int, tuple[Body, tuple[object, ...], T]]] = {}
        #: Bodies derived afresh (misses), for tests and curiosity.
        self.derived = 0

    def of(self, scope: str, bodies: Iterable[Body]) -> list[T]:
        last = self._seen.get(scope, {})
        kept: dict[int, tuple[Body, tuple[object, ...], T]] = {}
        values = []
        for body in bodies:
            parts = _parts(body)
            hit = last.get(id(body))
            if hit is None or hit[0] is not body or not _same(hit[1], parts):
                hit = (body, parts, self._derive(body))
                self.derived += 1
            kept[id(body)] = hit
            values.append(hit[2])
        self._seen[scope] = kept
        return values

    def forget(self, scope: str) -> None:
        self._seen.pop(scope, None)


def _parts(body: Body) -> tuple[object, ...]:
    """A body's top-level values: code (a test) that replaces a cached body's status or
    spec in place is seen as a change. They are held, not their ``id`` (a replaced one's
    could be reused). Nothing in the runtime edits a cached body; nested in-place edits
    are not looked for."""
    return (body.get("metadata"), body.get("spec"), body.get("status"))


def _same(held: tuple[object, ...], now: tuple[object, ...]) -> bool:
    return all(a is b for a, b in zip(held, now, strict=True))

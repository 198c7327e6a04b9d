"""ResourceCache: what Kumo last saw of one resource type in one cloud project.

The cloud-side half of an informer (see watch.py for how it is kept fresh). Reads are
answered from here instead of a GET per object; a cache may answer three ways:

- the resource, as last listed or as Kumo's own write returned it;
- :data:`GONE`: there is positive evidence it no longer exists (a listing that started
  after Kumo's last write to it did not contain it, or showed it deleted);
- ``None``: unknown (never listed, or outside what the lists cover, e.g. a resource
  without Kumo's marker) — the caller falls back to one GET.

Absence alone never counts as gone: a server Kumo created a moment ago is not in a
listing that started before the create. Nor does absence prove a create did not happen:
when a create's answer is lost (a reset, a 5xx after the cloud carried it out) its scope
(the owner, the parent) is *in doubt* and readers of that scope ask the API until they
have listed it themselves (``doubt`` → ``in_doubt`` → ``relisted``), so adopt-before-create
finds what the lost answer created instead of creating it twice. Every write bumps a sequence number; a listing
remembers the number it started at and never overrides or deletes what was written
after it began (``begin`` → ``replace``/``apply``).

Pure data structure: no I/O, no asyncio, no openstacksdk.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

R = TypeVar("R")
T = TypeVar("T")

#: How many deleted IDs are remembered (enough for any scale-in; old ones fall back to a GET).
MAX_TOMBSTONES = 20_000


class _Gone:
    def __repr__(self) -> str:
        return "GONE"


GONE = _Gone()


@dataclass(frozen=True)
class Change(Generic[R]):
    """One resource that changed between two observations: ``old`` None means it
    appeared, ``new`` None that it went."""

    old: R | None
    new: R | None


class ResourceCache(Generic[R]):
    def __init__(
        self,
        name: str,
        id_of: Callable[[R], str],
        owner_of: Callable[[R], str | None],
        live: Callable[[R], bool] = lambda _: True,
    ) -> None:
        self.name = name
        self._id_of = id_of
        self._owner_of = owner_of
        self._live = live  # False for a resource on its way out (counted as no duplicate)
        self._items: dict[str, R] = {}
        # Owner UID → the IDs it owns (an ordered set): ``owned_by`` is asked at every
        # pass of every object, so a scan of all items made a fleet's passes O(N²).
        self._by_owner: dict[str | None, dict[str, None]] = {}
        self._gone: OrderedDict[str, int] = OrderedDict()
        self._written: dict[str, int] = {}
        self._seq = 0
        self._doubts: dict[str, int] = {}
        self.synced = False
        #: Counts every change to the cached items (see :meth:`derived`).
        self.changes = 0
        self._derived: dict[str, tuple[int, Any]] = {}

    # -- reads ---------------------------------------------------------------------------

    def lookup(self, resource_id: str) -> R | _Gone | None:
        """The resource, GONE, or None when the cache cannot tell."""
        if resource_id in self._items:
            return self._items[resource_id]
        if resource_id in self._gone:
            return GONE
        return None

    def items(self) -> list[R]:
        return list(self._items.values())

    def live(self) -> list[R]:
        """Resources not on their way out."""
        return [r for r in self._items.values() if self._live(r)]

    def derived(self, name: str, derive: Callable[[], T]) -> T:
        """``derive()``, kept under ``name`` until the cached items next change: what
        every pass asks of all of them (the live addresses, the queued builds) costs one
        scan per change, not one per pass."""
        hit = self._derived.get(name)
        if hit is None or hit[0] != self.changes:
            hit = self._derived[name] = (self.changes, derive())
        return cast(T, hit[1])

    def owned_by(self, uid: str) -> list[R]:
        return [self._items[rid] for rid in self._by_owner.get(uid, ())]

    def owner(self, resource: R) -> str | None:
        return self._owner_of(resource)

    def live_count(self, uid: str) -> int:
        return sum(1 for r in self.owned_by(uid) if self._live(r))

    def __len__(self) -> int:
        return len(self._items)

    # -- Kumo's own writes -----------------------------------------------------------------

    def put(self, resource: R) -> None:
        """Kumo created or changed it: this is the freshest view until a later listing."""
        self._seq += 1
        rid = self._id_of(resource)
        self._set(rid, resource)
        self._gone.pop(rid, None)
        self._written[rid] = self._seq

    def update(self, resource_id: str, change: Callable[[R], R]) -> None:
        """Apply a write Kumo made to a cached resource (no-op when not cached)."""
        current = self._items.get(resource_id)
        if current is not None:
            self.put(change(current))

    def forget(self, resource_id: str) -> None:
        """Kumo deleted it and the cloud confirmed it is gone at once."""
        self._seq += 1
        self._drop(resource_id)
        self._written[resource_id] = self._seq
        self._tombstone(resource_id)

    # -- writes whose answer was lost ------------------------------------------------------

    def doubt(self, scope: str) -> None:
        """A create under ``scope`` may or may not have happened: the cache cannot tell
        what the scope holds until a listing of it that began after now."""
        self._seq += 1
        self._doubts[scope] = self._seq

    def answers_for(self, scope: str) -> bool:
        """The cache may answer a reader of ``scope``: listed once, and no lost create
        has put the scope in doubt since (else the reader lists the API: ``relisted``)."""
        return self.synced and not self.in_doubt(scope)

    def in_doubt(self, scope: str) -> bool:
        return scope in self._doubts

    def relisted(self, token: int, scope: str, listed: Iterable[R]) -> list[Change[R]]:
        """The caller listed ``scope`` from the API (``token`` from ``begin``): what it
        found is current, and the doubt is settled when that listing began after it.
        Absence is left to the watch's own listings."""
        changes = self._merge(token, listed)
        if self._doubts.get(scope, token + 1) <= token:
            del self._doubts[scope]
        return changes

    # -- listings ------------------------------------------------------------------------

    def begin(self) -> int:
        """Call before issuing a listing; pass the token to replace/apply."""
        return self._seq

    def replace(
        self, token: int, listed: Iterable[R], scope: Callable[[R], bool] | None = None
    ) -> list[Change[R]]:
        """A complete listing of ``scope`` (default: everything): what it holds is
        current; cached resources within scope that it lacks are gone — unless written
        after it began. Resources outside scope are left as they are."""
        fresh = {self._id_of(r): r for r in listed}
        changes = self._merge(token, fresh.values())
        for rid, old in list(self._items.items()):
            if rid in fresh or self._written.get(rid, 0) > token:
                continue
            if scope is None or scope(old):
                self._drop(rid)
                self._tombstone(rid)
                changes.append(Change(old, None))
        self.synced = True
        self._settle(token)
        return changes

    def apply(
        self, token: int, listed: Iterable[R], deleted: Iterable[str] = ()
    ) -> list[Change[R]]:
        """An incremental listing: ``listed`` changed, ``deleted`` IDs went."""
        changes = self._merge(token, listed)
        for rid in deleted:
            if self._written.get(rid, 0) > token:
                continue
            old = self._drop(rid)
            self._tombstone(rid)
            if old is not None:
                changes.append(Change(old, None))
        self._settle(token)
        return changes

    def _merge(self, token: int, listed: Iterable[R]) -> list[Change[R]]:
        changes: list[Change[R]] = []
        for resource in listed:
            rid = self._id_of(resource)
            if self._written.get(rid, 0) > token:
                continue  # Kumo wrote it after this listing began: ours is newer
            old = self._items.get(rid)
            self._gone.pop(rid, None)
            if old != resource:
                self._set(rid, resource)
                changes.append(Change(old, resource))
        return changes

    def _set(self, rid: str, resource: R) -> None:
        old = self._items.get(rid)
        self._items[rid] = resource
        self.changes += 1
        owner = self._owner_of(resource)
        if old is not None:
            was = self._owner_of(old)
            if was == owner:
                return
            self._unindex(was, rid)
        self._by_owner.setdefault(owner, {})[rid] = None

    def _drop(self, rid: str) -> R | None:
        old = self._items.pop(rid, None)
        if old is not None:
            self.changes += 1
            self._unindex(self._owner_of(old), rid)
        return old

    def _unindex(self, owner: str | None, rid: str) -> None:
        ids = self._by_owner.get(owner)
        if ids is not None:
            ids.pop(rid, None)
            if not ids:
                del self._by_owner[owner]

    def _settle(self, token: int) -> None:
        """Writes older than a listing that has been applied need no protection any more."""
        if self._written:
            self._written = {k: v for k, v in self._written.items() if v > token}

    def _tombstone(self, resource_id: str) -> None:
        self._gone[resource_id] = self._seq
        self._gone.move_to_end(resource_id)
        while len(self._gone) > MAX_TOMBSTONES:
            self._gone.popitem(last=False)

"""Duplicates of what holds data: when Kumo may delete a second resource carrying one
object's marker.

A volume or a share is data. A second live one carrying an object's marker is most
often a copy someone made on purpose — Cinder copies a volume's metadata, the marker
included, to a volume restored from a backup, and a clone or a copy made by hand may
carry it too — so the ownership routine (``engine/ownership.py``) reports it (a
``DuplicateFound`` warning naming both) and never deletes it, unless the kind's
``Owned.disposable`` says it is provably Kumo's own and empty:

* **made by Kumo**: one of Kumo's creates of that name for that object failed without
  the cloud refusing it (a lost answer: the create may have happened), this process
  remembers when (:class:`Creates`), and the duplicate was made within that window —
  give or take :data:`CLOCK_MARGIN` between the cloud's clock and Kumo's — under the
  name Kumo gave;
* **holds nothing**: made from nothing (no source volume, no snapshot: Kumo's own are
  made empty or from the spec's image or snapshot), never attached (no attachment and no
  access rule now, and a volume unchanged since its build), in a state of a new one.

What this process remembers is all the proof there is: after a restart, or for any
other copy, every duplicate is reported and kept. Servers, load balancers, recordsets,
networks and the rest hold no data: their duplicates are deleted as before.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from kumo.engine.errors import refused
from kumo.ports import SharedFSPort
from kumo.ports.model import Share, Volume
from kumo.ports.times import parse_updated

R = TypeVar("R")

#: How far the cloud's clock and Kumo's may differ, and how late a create whose call
#: was cancelled may still reach the cloud, either side of the window.
CLOCK_MARGIN = timedelta(seconds=30)
#: A volume Kumo made is built within this long of its window (empty, or from an image):
#: changed later than that (an attach, a detach), it may hold data.
BUILD_SECONDS = timedelta(seconds=300)
#: Windows are forgotten after this long (a duplicate shows in the next listing).
REMEMBER = timedelta(hours=1)
#: The states of a volume or share nobody has used yet.
NEW_VOLUME = frozenset({"creating", "downloading", "available", "error"})
NEW_SHARE = frozenset({"creating", "available", "error"})


@dataclass(frozen=True)
class Window:
    """One create whose answer Kumo never got: the name it asked for and when."""

    name: str
    started: datetime
    ended: datetime


class Creates:
    """This process's memory of the creates that failed without a refusal, per owner."""

    def __init__(self, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.now = now
        self._windows: dict[str, list[Window]] = {}

    async def run(self, uid: str, name: str, create: Callable[[], Awaitable[R]]) -> R:
        """``create()``; remembered when it fails and the cloud did not refuse it."""
        started = self.now()
        try:
            return await create()
        except BaseException as error:
            if not refused(error):
                self.remember(uid, Window(name, started, self.now()))
            raise

    def remember(self, uid: str, window: Window) -> None:
        since = self.now() - REMEMBER
        kept = [w for w in self._windows.get(uid, []) if w.ended >= since]
        self._windows[uid] = [*kept, window]

    def made(self, uid: str, name: str, created_at: str) -> Window | None:
        """The window of ``uid``'s create in doubt that a resource called ``name``,
        made at ``created_at`` (the cloud's clock), fits; None when none does."""
        made = parse_updated(created_at)
        if made is None:
            return None
        for window in self._windows.get(uid, []):
            start, end = window.started - CLOCK_MARGIN, window.ended + CLOCK_MARGIN
            if window.name == name and start <= made <= end:
                return window
        return None


#: The process's memory (object UIDs are unique across namespaces and clouds).
CREATES = Creates()


async def created(uid: str, name: str, create: Callable[[], Awaitable[R]]) -> R:
    """``create()`` of ``uid``'s resource called ``name``, remembered in :data:`CREATES`
    when its outcome is in doubt."""
    return await CREATES.run(uid, name, create)


def volume_disposable(uid: str, name: str) -> Callable[[Volume], Awaitable[bool]]:
    """``Owned.disposable`` of ``uid``'s volume called ``name``: a duplicate Kumo made in
    a create in doubt, never attached, from nothing but what Kumo builds from."""

    async def disposable(volume: Volume) -> bool:
        window = CREATES.made(uid, name, volume.created_at)
        changed = parse_updated(volume.updated_at)
        untouched = changed is None or (
            window is not None and changed <= window.ended + CLOCK_MARGIN + BUILD_SECONDS
        )
        return (
            window is not None
            and volume.name == name
            and volume.source_volid is None
            and not volume.attachments
            and volume.status in NEW_VOLUME
            and untouched
        )

    return disposable


def share_disposable(
    uid: str, name: str, cloud: SharedFSPort
) -> Callable[[Share], Awaitable[bool]]:
    """``Owned.disposable`` of ``uid``'s share called ``name``: a duplicate Kumo made in
    a create in doubt, from no snapshot, that nobody was ever given access to (read
    only when the rest holds)."""

    async def disposable(share: Share) -> bool:
        made = (
            CREATES.made(uid, name, share.created_at) is not None
            and share.name == name
            and share.snapshot_id is None
            and share.status in NEW_SHARE
        )
        return made and not await cloud.list_access_rules(share.id)

    return disposable

"""``deletionPolicy: Orphan``, all or nothing: the one step every kind's ``release`` runs.

Under Orphan the engine removes an object's finalizer only when its kind's ``release``
returns a done :class:`Result`, and a kind's ``release`` is :func:`release_owned` over
the parts of what the object owns, in order:

* an :class:`ownership.Owned` (its cloud resources): every resource that carries the
  object's marker — the recorded one and every one listed — is read from the cloud's API
  (``Owned.fetch``, not the watch's cache); one still carrying the marker gets the orphan
  mark (``Owned.release``), then is **read back** from the API. It counts as released
  only when the cloud no longer shows the marker on it (or no longer has it);
* a :data:`Check` (a kind's own precondition, no cloud resource): what must hold before
  the object may go, e.g. a group's members and Volume objects switched to Orphan
  before the garbage collector deletes them. It returns what is not so yet.

A write the cloud refuses because it is busy with the resource (``CloudBusy``: Octavia's
409 while ``PENDING_*``) is waited for, never swallowed; any other error ends the pass
(the engine reports it and retries). Whatever is not released yet is named in the
Result — phase ``Releasing``, the Ready condition's reason ``Releasing`` and a message
listing it — the object's other status fields are kept as they are, and the pass comes
back after ``after`` seconds. Repeating it is safe: what already reads back released is
not written again.

Why in the engine: before it, each kind called its releases and the finalizer went
whatever they did (a LoadBalancer swallowed the 409 and its marker stayed on, to be
swept later). One step makes "the finalizer goes only once all of it reads back
released" the same rule for every kind.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from kumo.engine import ownership
from kumo.engine.errors import TransientError
from kumo.engine.objects import Context, Obj
from kumo.engine.result import Result

R = TypeVar("R")

#: Seconds between passes while something is not released yet (Octavia finishes a
#: change in about a second; a busy load balancer is asked again after this).
RELEASE_SECONDS = 2.0
#: The reason (and phase) an object waiting for its release shows.
RELEASING = "Releasing"
#: Status keys the engine writes itself: everything else is the kind's, kept as it is.
ENGINE_KEYS = frozenset({"phase", "conditions", "observedGeneration"})

#: A kind's own precondition of the release: what is not so yet (empty: done).
Check = Callable[[], Awaitable[list[str]]]
Part = ownership.Owned[Any] | Check


async def release_owned(
    ctx: Context, obj: Obj, *parts: Part, after: float = RELEASE_SECONDS
) -> Result:
    """Release every part (module docstring); done only when nothing is left."""
    left: list[str] = []
    for part in parts:
        if isinstance(part, ownership.Owned):
            left += await _release(ctx, obj, part)
        else:
            left += await part()
    if not left:
        return Result(phase="Released", done=True)
    kept = {k: v for k, v in obj.status.items() if k not in ENGINE_KEYS}
    message = (
        "deletionPolicy: Orphan: the finalizer stays until all is released; not yet: "
        + "; ".join(left)
    )
    return Result.waiting(RELEASING, RELEASING, message, after=after, **kept)


async def _release(ctx: Context, obj: Obj, owned: ownership.Owned[R]) -> list[str]:
    """Release what carries ``obj``'s marker; return what does not read back released."""
    if owned.release is None:
        raise TypeError(f"{owned.noun}: no release given")  # a kind's bug, not the cloud's
    left = []
    for resource in await ownership.carrying_marker(obj, owned):
        rid = owned.id_of(resource)
        current = await read(owned, resource)
        if current is None or not _carries(obj, owned, current):
            continue  # released already (a pass before this one), or gone
        try:
            await owned.release(current)
        except TransientError as error:
            if error.reason != "CloudBusy":
                raise
            left.append(f"{owned.noun} {rid} is busy in the cloud (409): waiting to release it")
            continue
        back = await read(owned, current)
        if _carries(obj, owned, back):
            left.append(f"{owned.noun} {rid} still carries Kumo's marker when read back")
            continue
        ctx.events.emit(
            obj,
            "Normal",
            "Released",
            f"{owned.noun} {rid} left in the cloud with the orphan mark instead of Kumo's "
            "marker (deletionPolicy: Orphan; spec.import can take it over)",
        )
    return left


async def read(owned: ownership.Owned[R], resource: R) -> R | None:
    """``resource`` as the cloud's API has it now (None: gone)."""
    if owned.fetch is not None:
        return await owned.fetch(resource)
    return await owned.get_by_id(owned.id_of(resource))


def _carries(obj: Obj, owned: ownership.Owned[R], resource: R | None) -> bool:
    return resource is not None and owned.owner_of(resource) == obj.uid

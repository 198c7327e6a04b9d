"""The owned-resource lifecycle: one fixed order for a kind whose main cloud resource
is one owned resource (a Nova server, a Designate recordset, a Manila share).

A pass runs, always in this order:

1. ownership / import (:func:`ownership.find_owned`: by status.id only if marked,
   adopted by marker, imported — never an unmarked resource);
2. replace, when the kind gives a reason (:class:`Replacement`): the old one is
   deleted and its ID forgotten (:func:`record`), then either created again at once
   or waited for;
3. create, when there is none — unless the kind's checks before it say to wait (its
   turn to build, the old one still in the way): the new ID is recorded at once
   (:func:`record` via :func:`ownership.create_owned`), before anything after the
   create can fail;
4. wait while the cloud is busy with it;
5. the kind's in-place updaters, in their order: each may act and/or wait;
6. observe / report: the kind reads its status fields and readiness.

Waits are merged into one :class:`Result` (one message, the shortest requeue), and
the engine (:meth:`Engine.run`) writes status at the end of the pass, in one patch.
The only writes before it are the named ID records (:func:`record`, the one
``ownership.py`` uses for creates, adoptions and imports too), which make a crash
after a create or a delete safe; a kind never patches status itself.

Why in the engine: the order (and where status is written) cannot drift between kinds,
and a kind's part shrinks to small steps whose decisions stay in its pure ``plan.py``.

What a kind may say at each step is kept generic, each for a case a kind has: a
:class:`Replacement` carries the status fields that must outlive the forgotten ID and
its own event (a VirtualMachine replaces a server whose spec changed, one deleted
behind its back and one left in ERROR, each reported its own way, and records the
ID it replaces and how often it did); ``replace`` may read before it decides (a
VirtualMachine resolves image, flavor and networks there: bad input fails before
the delete); ``before_create`` may wait instead of creating (a VirtualMachine waits
for its turn to build, or for the server it replaces to leave its server group), and
a :class:`Wait` may carry status fields for such a wait, which has no resource to
report from.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from kumo.engine import ownership
from kumo.engine.objects import Body, Context, Obj
from kumo.engine.ownership import record as record  # the ID record, named here too
from kumo.engine.result import Result

R = TypeVar("R")


@dataclass(frozen=True)
class Wait:
    """The cloud is working on it: say what on, look again in ``after`` seconds."""

    message: str
    reason: str = "Provisioning"
    phase: str = "Pending"
    after: float = 2.0
    #: Status fields to report with it when there is no resource to report them from
    #: (a wait before the create: the ID of a server still being replaced).
    status: Body = field(default_factory=dict)


@dataclass(frozen=True)
class Replacement:
    """Why the resource must go, and what the pass says and keeps about it.

    The lifecycle deletes it (through ``Owned.delete``, which may find it already
    going), emits ``event`` — by default Normal ``Replacing`` "replacing <noun> <id>:
    <why>" — and forgets its ID together with ``record`` (:func:`record`: a crash
    after the delete leaves a status the next pass reads right). Without ``wait`` the
    new one is created in the same pass; with it the pass ends there, reporting the
    wait and the recorded fields (a kind that waits for the old one to go, or that
    counts replacements, keeps what it recorded in status)."""

    why: str
    wait: Wait | None = None
    record: Body = field(default_factory=dict)
    event: tuple[str, str, str] | None = None  # (type, reason, message)


@dataclass
class Step(Generic[R]):
    """What one updater did: the resource as it is now, and a wait if it started work
    the cloud must finish. ``stop`` ends the updaters after this one (what follows
    depends on the cloud finishing it); a dry pass stops there too, so ``kumo plan``,
    Observe and Report show what this pass would do, as before the lifecycle."""

    resource: R
    wait: Wait | None = None
    stop: bool = False


Updater = Callable[[R], Awaitable[Step[R]]]


@dataclass
class Lifecycle(Generic[R]):
    """A kind's small steps; the engine runs them in the one order (module docstring).

    * ``owned``: how the ownership routine finds, adopts, imports and deletes it;
    * ``create``: make one carrying the marker; ``created`` says what to wait for then
      (the pass ends after a create: the cloud has just started building it);
    * ``before_create``: checks before creating (a foreign resource in the way: raise),
      or a :class:`Wait` when the create must wait for a later pass (its turn to build,
      the old one still in the way) — nothing is created in this pass then;
    * ``replace``: a :class:`Replacement` when the resource must go (the spec asks for
      one it cannot change into, the cloud gave up on it, it is being deleted behind
      the kind's back), else None. It may read the cloud first — what the new one
      needs, so that bad input fails before anything is deleted — and may raise
      (a TerminalError while the kind waits before replacing);
    * ``busy``: what the cloud is doing to it that must end before updates, or None
      (raise a TerminalError for a resource the cloud gave up on);
    * ``updaters``: in-place updates, in order;
    * ``report``: the final Result (status fields, readiness), from the resource.
    """

    owned: ownership.Owned[R]
    create: Callable[[], Awaitable[R]]
    created: Callable[[R], Wait]
    report: Callable[[R], Awaitable[Result]]
    #: The crash point right after the create call (``KUMO_FAILPOINTS``); None where the
    #: cloud adapter names its own between a create and the call completing the marker.
    failpoint: str | None = None
    status: Callable[[R], Body] = field(default=lambda _: {})
    before_create: Callable[[], Awaitable[Wait | None]] | None = None
    replace: Callable[[R], Awaitable[Replacement | None]] | None = None
    busy: Callable[[R], Awaitable[Wait | None]] | None = None
    updaters: Sequence[Updater[R]] = ()


def merge(waits: Sequence[Wait], status: Body) -> Result:
    """Several waits as one Result: the first's phase and reason, every message, the
    shortest requeue; ``status`` (the resource's fields) with each wait's own over it."""
    first = waits[0]
    fields = dict(status)
    for wait in waits:
        fields.update(wait.status)
    return Result.waiting(
        first.phase,
        first.reason,
        "; ".join(w.message for w in waits),
        after=min(w.after for w in waits),
        **fields,
    )


async def reconcile_owned(ctx: Context, obj: Obj, kind: Lifecycle[R]) -> Result:
    """One pass of the owned-resource lifecycle (module docstring for the order)."""
    owned = kind.owned
    resource = await ownership.find_owned(ctx, obj, owned)
    if resource is not None and kind.replace is not None:
        replacement = await kind.replace(resource)
        if replacement is not None:
            rid = owned.id_of(resource)
            await owned.delete(resource)
            event = replacement.event or (
                "Normal",
                "Replacing",
                f"replacing {owned.noun} {rid}: {replacement.why}",
            )
            ctx.events.emit(obj, *event)
            forgotten = {k: None for k in owned.status_of(resource)}
            await record(ctx, obj, {**forgotten, **replacement.record})
            if replacement.wait is not None:
                return merge([replacement.wait], replacement.record)
            resource = None
    if resource is None:
        if kind.before_create is not None:
            wait = await kind.before_create()
            if wait is not None:
                return merge([wait], {})
        resource = await ownership.create_owned(ctx, obj, owned, kind.create, kind.failpoint)
        return merge([kind.created(resource)], kind.status(resource))
    busy = await kind.busy(resource) if kind.busy is not None else None
    if busy is not None:
        return merge([busy], kind.status(resource))
    waits: list[Wait] = []
    for updater in kind.updaters:
        step = await updater(resource)
        resource = step.resource
        if step.wait is not None:
            waits.append(step.wait)
        if step.stop:
            break
    if waits:
        return merge(waits, kind.status(resource))
    return await kind.report(resource)

"""The composite lifecycle: one fixed order for a kind made of several parts — objects it
creates in Kubernetes (a VirtualMachineGroup's members and Volume objects), cloud
resources beside them (its server group, snapshots) — rather than one owned resource
(that is ``lifecycle.py``).

A pass runs, always in this order:

1. anchor: the one resource the parts hang off, found or made by the ownership rules
   (a group's server group: a member's template hash names it; a LoadBalancer's Octavia
   load balancer). It may end the pass with a :class:`Wait` (a LoadBalancer's VIP
   Network not Ready yet), or be None (no server group);
2. observe: read everything the decision needs — the watch's caches, the object store,
   the expectations of what the kind just wrote — and write nothing;
3. decide: ONE pure function of the observation (the kind's ``plan.py``), tested in
   milliseconds; every write of the pass is in what it returns;
4. apply: carry the decision out, in the kind's typed steps, in one fixed order; it
   returns the observation as the writes left it (what was created, what went). A
   write the cloud refuses because it is busy with the resource (``CloudBusy``:
   Octavia's 409 while ``PENDING_*``) becomes the kind's ``busy`` :class:`Wait`, when
   it gives one: waiting on the cloud is progress, not an error;
5. report: the Result (status fields, readiness) from that, pure; it may raise a
   TerminalError carrying that status (``TerminalError.status``) for a step the
   cloud refused.

:meth:`Engine.run` then writes status once, at the end of the pass, as for every kind:
no step writes status itself. Only the anchor may write before the decision, and only
by the ownership rule (what it makes carries the object's marker, so a crash after it
is found again by the next pass; no ID record is needed for that).

Why in the engine: the order and the one status write cannot drift between composite
kinds, and a kind's part is small typed steps around one pure decision. A kind with one
main resource uses ``lifecycle.py``; a kind made of parts uses this.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from kumo.engine.errors import TransientError
from kumo.engine.lifecycle import Wait, merge
from kumo.engine.result import Result

A = TypeVar("A")  # the anchor (or None)
S = TypeVar("S")  # what a pass observed
P = TypeVar("P")  # what it decided

#: The reason of a write the cloud refused because it is busy with the resource.
BUSY = "CloudBusy"


@dataclass
class Composite(Generic[A, S, P]):
    """A composite kind's steps; the engine runs them in the one order (module docstring).

    * ``anchor``: find or make the resource the parts hang off, or a :class:`Wait`;
    * ``observe``: reads only, given the anchor;
    * ``decide``: pure, the whole decision of the pass;
    * ``apply``: the writes the decision holds, in the kind's order; returns the
      observation as the writes left it;
    * ``report``: the Result, from what ``apply`` returned and the decision;
    * ``busy``: the Wait the pass reports when the cloud refused a write of ``apply``
      as busy (None: the refusal is a transient error, retried with backoff).
    """

    anchor: Callable[[], Awaitable[A | Wait]]
    observe: Callable[[A], Awaitable[S]]
    decide: Callable[[S], P]
    apply: Callable[[S, P], Awaitable[S]]
    report: Callable[[S, P], Result]
    busy: Callable[[S, P], Wait] | None = None


async def reconcile_composite(kind: Composite[A, S, P]) -> Result:
    """One pass of the composite lifecycle (module docstring for the order)."""
    anchor = await kind.anchor()
    if isinstance(anchor, Wait):
        return merge([anchor], {})
    observed = await kind.observe(anchor)
    decision = kind.decide(observed)
    try:
        after = await kind.apply(observed, decision)
    except TransientError as error:
        if kind.busy is None or error.reason != BUSY:
            raise
        return merge([kind.busy(observed, decision)], {})
    return kind.report(after, decision)

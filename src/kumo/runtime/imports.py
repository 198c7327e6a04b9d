"""Who may import or observe a resource Kumo did not make, on the shared default cloud.

Every namespace without a ``kumo-cloud-credentials`` Secret of its own uses the
operator's default cloud: one project shared by all of them. There, ``spec.import`` and
``managementPolicy: Observe`` of a resource that carries no Kumo marker (made by hand, by
Heat, released by ``deletionPolicy: Orphan``) would let any team take over or read any
other team's resources of that project. So on the default cloud it is allowed only in a
namespace labelled ``kumo.dev/import-unmarked=true`` or named by the operator's
``--import-unmarked-namespaces``; elsewhere the object reports ``ImportNotAllowed``
(engine/ownership.py) and nothing is read further or changed. A namespace with its own
Secret is its own project and is not restricted.

The decision (:func:`refusal`) is pure. :class:`ImportGate` feeds it the namespace's
labels — read by name when a pass asks (at most once per :data:`RECHECK_SECONDS` per
namespace, so the label is never watched) — and, on the leader, re-reads every namespace
that refused an object every :data:`RECHECK_SECONDS`: once it is allowed, those objects
are re-queued (labelling a namespace takes effect within seconds, not at the terminal
error's retry).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any

from kumo.engine.errors import TransientError
from kumo.engine.objects import Body, Key
from kumo.runtime import periodic

log = logging.getLogger("kumo.imports")

LABEL = "kumo.dev/import-unmarked"
FLAG = "--import-unmarked-namespaces"
#: How long a namespace's labels are trusted, and how often the leader re-reads the
#: namespaces that refused an object.
RECHECK_SECONDS = 10.0

NamespaceReader = Callable[[str], Awaitable[Body | None]]


def allowed(namespace: str, labels: Mapping[str, str], flagged: Collection[str]) -> bool:
    """May objects of ``namespace`` (on the default cloud) import or observe a resource
    without Kumo's marker?"""
    return namespace in flagged or labels.get(LABEL) == "true"


def refusal(namespace: str, labels: Mapping[str, str], flagged: Collection[str]) -> str | None:
    """Why an object of ``namespace`` on the default cloud may not import or observe a
    resource without Kumo's marker (None: it may), with the command that allows it."""
    if allowed(namespace, labels, flagged):
        return None
    # Short, the command first: a condition keeps 300 characters (engine/text.py).
    return (
        f"the shared default cloud needs: kubectl label namespace {namespace} {LABEL}=true "
        f"(or {FLAG})"
    )


def parse_namespaces(text: str) -> frozenset[str]:
    """``team-a, team-b`` → the namespaces ``--import-unmarked-namespaces`` names."""
    return frozenset(part.strip() for part in text.split(",") if part.strip())


class ImportGate:
    """The namespaces' permission to import or observe unmarked resources, and who
    waits for it."""

    def __init__(
        self,
        read_namespace: NamespaceReader,
        flagged: Collection[str] = (),
        *,
        ttl: float = RECHECK_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read_namespace = read_namespace
        self.flagged = frozenset(flagged)
        self._ttl = ttl
        self.every = ttl  # how often the leader re-reads the namespaces that refused
        self._clock = clock
        self._labels: dict[str, tuple[float, dict[str, str]]] = {}  # namespace → (read at, labels)
        self._refused: dict[str, set[Key]] = {}  # namespace → objects it refused

    def gate(self, key: Key) -> Callable[[], Awaitable[str | None]]:
        """``Context.import_gate`` for the object ``key`` (on the default cloud)."""

        async def check() -> str | None:
            return await self.refusal_for(key)

        return check

    async def refusal_for(self, key: Key) -> str | None:
        """Why ``key`` may not import or observe an unmarked resource (None: it may).
        A refused object is remembered, to be re-queued when its namespace is allowed."""
        namespace = key.namespace
        if namespace in self.flagged:
            return None
        why = refusal(namespace, await self._labels_of(namespace), self.flagged)
        if why is None:
            self._refused.get(namespace, set()).discard(key)
        else:
            self._refused.setdefault(namespace, set()).add(key)
        return why

    async def _labels_of(self, namespace: str) -> dict[str, str]:
        cached = self._labels.get(namespace)
        if cached is not None and self._clock() - cached[0] <= self._ttl:
            return cached[1]
        try:
            return await self._read(namespace)
        except Exception as error:
            if cached is not None:  # an API hiccup: the last labels read
                log.warning("namespace %s could not be read (%s)", namespace, error)
                return cached[1]
            raise TransientError(
                "NamespaceUnavailable",
                f"namespace {namespace} could not be read ({type(error).__name__})",
            ) from None

    async def _read(self, namespace: str) -> dict[str, str]:
        body = await self._read_namespace(namespace)
        if body is None:  # gone (its objects with it): nothing waits for it any more
            self._refused.pop(namespace, None)
        labels = dict(((body or {}).get("metadata") or {}).get("labels") or {})
        self._labels[namespace] = (self._clock(), labels)
        return labels

    async def recheck(self) -> list[Key]:
        """Re-read every namespace that refused an object; the objects of those now
        allowed (they are forgotten: their next pass asks again)."""
        allowed_now: list[Key] = []
        for namespace in sorted(self._refused):
            try:
                labels = await self._read(namespace)
            except Exception as error:  # the next round reads it again
                log.debug("namespace %s could not be read (%s)", namespace, error)
                continue
            if namespace in self._refused and allowed(namespace, labels, self.flagged):
                keys = self._refused.pop(namespace)
                log.info("namespace %s now allows imports: %d object(s)", namespace, len(keys))
                allowed_now.extend(sorted(keys))
        return allowed_now

    async def run(self, enqueue: Callable[[Key], Any]) -> None:
        """The leader's loop: re-queue the objects of namespaces allowed since."""
        await periodic.follow(self.recheck, enqueue, self.every, at_once=False)

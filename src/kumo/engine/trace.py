"""Which pass a log line, a cloud request and an event belong to.

:meth:`kumo.engine.reconciler.Engine.run` opens a :class:`Pass` for each reconcile
(:func:`running`) and keeps it in the context variable :data:`CURRENT` while the pass
runs. Three readers, none of them known here:

* the cloud adapter's one request path (``kumo.cloud.telemetry``) sends the pass's
  :attr:`Pass.request_id` as ``X-OpenStack-Request-ID`` on every call, so each
  service's API log names the pass, and records each response's own
  ``x-openstack-request-id`` (:meth:`Pass.saw`);
* the JSON log format (``kumo.runtime.logs``) adds the object, the pass and those IDs
  to every line logged during the pass;
* the event recorder (``kumo.runtime.controller``) ends every event of the pass with
  :func:`event_tail`.

A context variable, because a pass is one asyncio task (its events are tasks that copy
the context), and the cloud adapter runs each blocking call in a thread with a copy of
the caller's context.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

#: The IDs of the latest responses a pass keeps (a group's pass may make hundreds of
#: calls; :attr:`Pass.requests` still counts them all).
MAX_REQUEST_IDS = 32

#: What oslo.middleware's request_id filter accepts as a global request ID (any other
#: value is dropped, and the service logs ``None`` in its place).
GLOBAL_REQUEST_ID = re.compile(
    r"^req-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}$"
)


def new_request_id() -> str:
    """A fresh global request ID in the one format every OpenStack service accepts."""
    return f"req-{uuid.uuid4()}"


@dataclass
class Pass:
    """One reconcile of one object, and the cloud requests it made."""

    kind: str
    namespace: str
    name: str
    uid: str
    #: Sent as ``X-OpenStack-Request-ID`` on every cloud call of the pass.
    request_id: str = field(default_factory=new_request_id)
    #: The services' own request IDs (``x-openstack-request-id`` of each response),
    #: the latest :data:`MAX_REQUEST_IDS`, in order.
    request_ids: list[str] = field(default_factory=list)
    #: Cloud requests made by the pass (a token's and a retry's included).
    requests: int = 0

    def saw(self, request_id: str | None) -> None:
        """Count one response; keep its service's request ID (called from the cloud
        adapter's threads: ``list.append`` and ``del`` of a slice are atomic enough
        for a bounded list of strings)."""
        self.requests += 1
        if request_id:
            self.request_ids.append(request_id)
            if len(self.request_ids) > MAX_REQUEST_IDS:
                del self.request_ids[: len(self.request_ids) - MAX_REQUEST_IDS]

    def fields(self) -> dict[str, object]:
        """What a structured log line says of the pass."""
        return {
            "object": {
                "kind": self.kind,
                "namespace": self.namespace,
                "name": self.name,
                "uid": self.uid,
            },
            "pass": self.request_id,
            "request_ids": list(self.request_ids),
        }


CURRENT: ContextVar[Pass | None] = ContextVar("kumo_pass", default=None)


def current() -> Pass | None:
    return CURRENT.get()


@contextmanager
def running(kind: str, namespace: str, name: str, uid: str) -> Iterator[Pass]:
    """The pass of one object, current inside the ``with`` (nested: the inner one)."""
    opened = Pass(kind, namespace, name, uid)
    token = CURRENT.set(opened)
    try:
        yield opened
    finally:
        CURRENT.reset(token)


def event_tail() -> str:
    """What an event posted now ends with: `` (request req-…)`` inside a pass, else ``""``
    (what ``kubectl describe`` and ``kubectl get events`` show, and what to grep a
    service's log for)."""
    opened = CURRENT.get()
    return f" (request {opened.request_id})" if opened is not None else ""

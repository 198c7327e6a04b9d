"""The two ways a reconcile can fail, and the one way it can wait.

* :class:`TransientError` — the cloud or the API hiccuped (5xx, 409 while busy,
  timeouts, rate limits). Retried with backoff; the condition says "will retry".
* :class:`TerminalError` — the spec cannot work as written (unknown image, quota,
  dangling reference, no valid host). Reported with the field at fault; retried
  slowly, and at once when the object changes.

Waiting for the cloud (BUILD, PENDING_*) is not an error: a kind returns a
:class:`kumo.engine.result.Result` with ``requeue_after`` instead.

Either may be a *refusal* (:func:`refused`): the cloud answered that it did not do
what it was asked (a 4xx), as opposed to a failure that leaves open whether it did (a
5xx, a reset, a timeout). The adapter's classifier sets it; a kind reads it here, never
from the SDK's exceptions.
"""

from __future__ import annotations

from typing import Any


class ReconcileError(Exception):
    """Base: carries a CamelCase ``reason`` and a message naming the field at fault;
    ``refused``: the cloud answered that it did not carry the call out (a 4xx)."""

    def __init__(
        self, reason: str, message: str, *, field: str | None = None, refused: bool = False
    ) -> None:
        self.reason = reason
        self.field = field
        self.detail = message
        self.refused = refused
        super().__init__(f"{field}: {message}" if field else message)

    @property
    def message(self) -> str:
        return str(self)


class TransientError(ReconcileError):
    """Worth retrying soon; ``retry_after`` honours a server's Retry-After."""

    def __init__(
        self,
        reason: str,
        message: str,
        *,
        field: str | None = None,
        retry_after: float | None = None,
        refused: bool = False,
    ) -> None:
        super().__init__(reason, message, field=field, refused=refused)
        self.retry_after = retry_after


class TerminalError(ReconcileError):
    """The user must change something; retrying unchanged input will not help soon.

    ``recheck``: the condition can also clear without the user — a quota frees as the
    cloud finishes deleting servers, seconds after Kumo already replaces one it sees
    ``DELETING``. The hold then starts at ``recheck`` seconds and doubles per
    consecutive failure up to the usual terminal hold, so a project at its quota that
    replaces a server waits seconds, not a minute, and a project that stays over quota
    is asked as rarely as before once the doubling reaches the cap.

    ``status``: the kind's status fields as observed before it failed, written with the
    error in the engine's status write at the end of the pass (a Share keeps listing
    its rules for VMs).
    """

    def __init__(
        self,
        reason: str,
        message: str,
        *,
        field: str | None = None,
        recheck: float | None = None,
        status: dict[str, Any] | None = None,
        refused: bool = False,
    ) -> None:
        super().__init__(reason, message, field=field, refused=refused)
        self.recheck = recheck
        self.status = status or {}


class ObjectGone(TransientError):
    """A write of Kumo's answered 404: the Kubernetes object is no longer there.

    Never success. A pass whose own object is gone ends at once and creates nothing
    (a server made after its VirtualMachine was deleted would carry the marker of a UID
    nobody deletes again); a gone object the pass only wrote to is retried like any
    transient failure.
    """

    def __init__(self, kind: str, namespace: str, name: str) -> None:
        super().__init__("ObjectGone", f"{kind} {namespace}/{name} is gone (404)")
        self.kind = kind
        self.namespace = namespace
        self.name = name

    def names(self, kind: str, namespace: str, name: str) -> bool:
        return (self.kind, self.namespace, self.name) == (kind, namespace, name)


def refused(error: BaseException) -> bool:
    """The cloud answered a call with a refusal (a 4xx): it did not carry it out.
    Anything else — a 5xx, a reset, a timeout, a cancelled call, an error that is not
    the cloud's answer — leaves open whether it did."""
    return isinstance(error, ReconcileError) and error.refused

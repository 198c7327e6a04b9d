"""Turn openstacksdk/keystoneauth failures into Kumo's transient/terminal errors.

Quota and scheduling failures are the user's to fix (terminal); 409 while a load
balancer is PENDING_*, rate limits (429, and Nova's older 413 without "quota"), 5xx and
connection trouble are the cloud's (transient, honouring Retry-After).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from openstack import exceptions as os_exc

from kumo.engine.errors import ReconcileError, TerminalError, TransientError

# A quota may free itself: Nova counts a server against it until the server is deleted,
# while Kumo replaces a server as soon as Nova says it is DELETING. So in a project at its
# quota the replacement's create can be refused for the seconds the deletion takes; it
# asks again this soon, then ever less often (engine.reconciler.Backoff.terminal).
QUOTA_RECHECK_SECONDS = 5.0


def retry_after(error: Any) -> float | None:
    response = getattr(error, "response", None)
    value = response.headers.get("Retry-After") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def classify(error: Exception, action: str, field: str | None = None) -> ReconcileError:
    """Map an exception raised while doing ``action`` to a ReconcileError, marked
    ``refused`` when the cloud answered with a 4xx (it did not carry the call out)."""
    if isinstance(error, ReconcileError):
        return error
    classified = _classify(error, action, field)
    status = getattr(error, "status_code", None)
    classified.refused = (
        isinstance(error, os_exc.HttpException) and status is not None and 400 <= status < 500
    )
    return classified


def _classify(error: Exception, action: str, field: str | None) -> ReconcileError:
    if isinstance(error, os_exc.DuplicateResource):
        return TerminalError("AmbiguousName", f"{action}: {_detail(error)}", field=field)
    status = getattr(error, "status_code", None)
    detail = _detail(error)
    text = f"{action}: {detail}"
    if isinstance(error, os_exc.HttpException) and status is not None:
        if status in (413, 403) and _over_quota(detail):
            return TerminalError("QuotaExceeded", text, field=field, recheck=QUOTA_RECHECK_SECONDS)
        if status == 409:
            return TransientError("CloudBusy", text, field=field, retry_after=2.0)
        if status in (413, 429) or status >= 500:
            return TransientError(
                "CloudUnavailable", text, field=field, retry_after=retry_after(error)
            )
        if status in (401, 403):
            return TerminalError("CloudForbidden", text, field=field)
        if status == 400:
            return TerminalError("CloudRejected", text, field=field)
        if status == 404:
            return TerminalError("NotFound", text, field=field)
    return TransientError("CloudUnreachable", text, field=field)


def _over_quota(detail: str) -> bool:
    """Nova and Cinder name the quota; Cinder's snapshot count limit does not
    ("Maximum number of snapshots allowed (0) exceeded")."""
    text = detail.lower()
    return "quota" in text or ("maximum number of" in text and "exceeded" in text)


def missing_ids(error: BaseException | None, ids: Iterable[str]) -> list[str]:
    """Which of ``ids`` (passed to a create) the cloud says do not exist.

    Nova answers 400 "Image <id> could not be found.", Octavia 400/404 naming the
    network or flavor, Designate 404 for a zone. IDs named in the message are
    returned; a 404 naming none of them blames them all (a 400 must name the ID: it
    may be about something else, a key pair or a security group).
    """
    status = getattr(error, "status_code", None)
    if error is None or status not in (400, 404):
        return []
    detail = _detail(error)
    text = detail.lower()
    if not any(s in text for s in ("not found", "could not be found", "could not find")):
        return []
    candidates = [i for i in ids if i]
    named = [i for i in candidates if i in detail]
    return named or (candidates if status == 404 else [])


def _detail(error: BaseException) -> str:
    details = getattr(error, "details", None)
    message = str(details or error) or type(error).__name__
    return " ".join(message.split())[:400]

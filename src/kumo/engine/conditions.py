"""Kubernetes-style conditions, computed in one place.

Every Kumo object carries three conditions, all written by the engine:

* ``Ready`` — True when the cloud resources match the spec.
* ``Reconciling`` — True while the object is not Ready and Kumo gets further on its
  own (building, waiting on the cloud, retrying a transient error).
* ``Stalled`` — True when the object waits on something only its user can fix (a
  permanent error: ``InvalidSpec``, an unknown image, ``NotOwned``, …); False while
  Kumo makes progress or retries on its own.

``Reconciling`` and ``Stalled`` are kstatus' abnormal-true conditions
(``sigs.k8s.io/cli-utils``), which Flux, kpt and Argo CD's health checks read: with
``observedGeneration`` they tell InProgress, Current and Failed apart
(tests/integration/test_kstatus.py checks it with the real library).

``lastTransitionTime`` only moves when a condition's status changes, so a status
write of an unchanged object changes nothing and triggers nothing.
"""

from __future__ import annotations

import datetime
from typing import Any

from kumo.engine import text

Condition = dict[str, Any]

READY = "Ready"
STALLED = "Stalled"
RECONCILING = "Reconciling"


#: Kubernetes' timestamp form, as conditions and Kumo's own status times are written.
RFC3339 = "%Y-%m-%dT%H:%M:%SZ"


def now_rfc3339() -> str:
    return datetime.datetime.now(datetime.UTC).strftime(RFC3339)


def parse_rfc3339(timestamp: str) -> datetime.datetime:
    return datetime.datetime.strptime(timestamp, RFC3339).replace(tzinfo=datetime.UTC)


def set_condition(
    conditions: list[Condition],
    type_: str,
    status: bool | None,
    reason: str,
    message: str,
    *,
    generation: int | None,
    now: str | None = None,
) -> list[Condition]:
    """Return ``conditions`` with ``type_`` set in its place (appended when new); other
    conditions are kept as they are. ``lastTransitionTime`` is kept unless the status
    changes. ``message`` passes :func:`kumo.engine.text.public_text`: every condition
    Kumo writes is one bounded line without credentials or a foreign host's page."""
    status_text = "Unknown" if status is None else ("True" if status else "False")
    previous = next((c for c in conditions if c.get("type") == type_), None)
    changed = previous is None or previous.get("status") != status_text
    new: Condition = {
        "type": type_,
        "status": status_text,
        "reason": reason,
        "message": text.public_text(message, text.MESSAGE_LIMIT),
        "lastTransitionTime": (
            (now or now_rfc3339()) if changed else previous.get("lastTransitionTime")  # type: ignore[union-attr]
        ),
        "observedGeneration": generation,
    }
    at = next((i for i, c in enumerate(conditions) if c.get("type") == type_), len(conditions))
    others = [c for c in conditions if c.get("type") != type_]
    return [*others[:at], new, *others[at:]]


def get_condition(conditions: list[Condition], type_: str) -> Condition | None:
    return next((c for c in conditions if c.get("type") == type_), None)


def is_true(conditions: list[Condition], type_: str = READY) -> bool:
    condition = get_condition(conditions, type_)
    return condition is not None and condition.get("status") == "True"

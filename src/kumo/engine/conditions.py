"""Kubernetes-style conditions, computed in one place.

``lastTransitionTime`` only moves when a condition's status changes, so a status
write of an unchanged object changes nothing and triggers nothing.
"""

from __future__ import annotations

import datetime
from typing import Any

Condition = dict[str, Any]


def now_rfc3339() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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
    """Return ``conditions`` with ``type_`` set; other conditions are kept as they are."""
    status_text = "Unknown" if status is None else ("True" if status else "False")
    previous = next((c for c in conditions if c.get("type") == type_), None)
    changed = previous is None or previous.get("status") != status_text
    new: Condition = {
        "type": type_,
        "status": status_text,
        "reason": reason,
        "message": message,
        "lastTransitionTime": (
            (now or now_rfc3339()) if changed else previous.get("lastTransitionTime")  # type: ignore[union-attr]
        ),
        "observedGeneration": generation,
    }
    return [c for c in conditions if c.get("type") != type_] + [new]


def get_condition(conditions: list[Condition], type_: str) -> Condition | None:
    return next((c for c in conditions if c.get("type") == type_), None)


def is_true(conditions: list[Condition], type_: str = "Ready") -> bool:
    condition = get_condition(conditions, type_)
    return condition is not None and condition.get("status") == "True"

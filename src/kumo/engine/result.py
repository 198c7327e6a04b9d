"""What a kind's reconcile returns: its status fields and whether it is done."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Result:
    """Outcome of one reconcile (or finalize) of one object.

    ``status`` holds the kind's own status fields (camelCase, as in the CRD); the
    engine adds ``phase``, ``conditions`` and ``observedGeneration``.
    """

    phase: str
    ready: bool = False
    reason: str = "Progressing"
    message: str = ""
    status: dict[str, Any] = field(default_factory=dict)
    requeue_after: float | None = None
    done: bool = True
    #: Set by the engine on passes that only observe: ``status.drift`` and ``Drifted``.
    drift: list[dict[str, str]] | None = None
    #: Set by the engine on a paused pass (``kumo.engine.pause``): the ``Paused``
    #: condition's message; ``Ready`` is then kept as it was.
    paused: str | None = None

    @classmethod
    def waiting(
        cls, phase: str, reason: str, message: str, after: float = 2.0, **status: Any
    ) -> Result:
        """The cloud is working on it: report progress and look again soon."""
        return cls(
            phase=phase,
            reason=reason,
            message=message,
            status=status,
            requeue_after=after,
            done=False,
        )

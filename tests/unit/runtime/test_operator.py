"""The kopf wiring: what the registry hands kopf."""

from __future__ import annotations

import inspect

from kumo.api.kinds import KINDS
from kumo.runtime.operator import build_registry


def test_watch_event_handlers_run_on_the_event_loop() -> None:
    """kopf runs a plain function in a worker thread; the store and the work queue
    belong to the event loop (a listing raced a write there: an event was lost). Every
    watch handler must be a coroutine."""
    handlers = build_registry(None)._watching.get_all_handlers()  # type: ignore[arg-type]
    ids = {h.id for h in handlers}
    assert {f"watch-{info.kind}" for info in KINDS} <= ids
    for handler in handlers:
        assert inspect.iscoroutinefunction(handler.fn), handler.id

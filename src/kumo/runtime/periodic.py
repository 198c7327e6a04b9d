"""The leader's follow loops: a round every few seconds that re-reads what objects depend
on outside the cloud, each object it answers re-queued.

Used by :class:`~kumo.runtime.config_maps.ConfigMapFollower` (the referenced ConfigMaps;
its first round at once, to set the baselines) and
:class:`~kumo.runtime.imports.ImportGate` (the namespaces that refused an import; nothing
to read before a pass has asked). Each round catches its own read errors: the next one
reads again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from kumo.engine.objects import Key


async def follow(
    round_: Callable[[], Awaitable[Iterable[Key]]],
    enqueue: Callable[[Key], Any],
    every: float,
    *,
    at_once: bool = True,
) -> None:
    """Forever: ``round_()``, each key it answers to ``enqueue``, then ``every``
    seconds' wait (``at_once`` False: the wait first)."""
    if not at_once:
        await asyncio.sleep(every)
    while True:
        for key in await round_():
            enqueue(key)
        await asyncio.sleep(every)

"""Named crash points for crash-safety tests (like etcd's gofail, much smaller).

``KUMO_FAILPOINTS=after-server-create`` makes the process SIGKILL itself when it
reaches that point — exactly the crash a production operator must survive. Unset
(the default) it does nothing.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal

log = logging.getLogger(__name__)


def failpoint(name: str) -> None:
    if name in os.environ.get("KUMO_FAILPOINTS", "").split(","):
        os.kill(os.getpid(), signal.SIGKILL)


async def pause(name: str) -> None:
    """``KUMO_FAILPOINTS=<name>=<seconds>`` holds the pass here that long, logging it.

    Only widens a window that exists anyway (between the cache read and a write), so a
    real-server test can act inside it — deleting an object mid-pass — reliably.
    """
    for entry in os.environ.get("KUMO_FAILPOINTS", "").split(","):
        point, _, seconds = entry.partition("=")
        if point == name and seconds:
            log.warning("failpoint %s: pausing %ss", name, seconds)
            await asyncio.sleep(float(seconds))

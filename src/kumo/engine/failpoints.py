"""Named crash points for crash-safety tests (like etcd's gofail, much smaller).

``KUMO_FAILPOINTS=after-server-create`` makes the process SIGKILL itself when it
reaches that point — exactly the crash a production operator must survive. Unset
(the default) it does nothing.
"""

from __future__ import annotations

import os
import signal


def failpoint(name: str) -> None:
    if name in os.environ.get("KUMO_FAILPOINTS", "").split(","):
        os.kill(os.getpid(), signal.SIGKILL)

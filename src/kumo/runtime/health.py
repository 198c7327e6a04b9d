"""One HTTP port for what the kubelet and Prometheus ask: /healthz, /readyz, /metrics.

* ``/healthz`` (liveness) answers 200 while the event loop runs and, for a leader,
  while it keeps its lease; a wedged process fails it and is restarted.
* ``/readyz`` (readiness) is 200 once the object caches are synced *and* this replica
  either leads or is a healthy standby (it can read the lease, so it can take over).
  The body says which, so ``curl /readyz`` tells an operator who is active.
* Both bodies name the cluster ID Kumo's ownership markers carry (runtime/cluster.py).
* ``/metrics`` is the Prometheus exposition of ``runtime/metrics.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import prometheus_client
from aiohttp import web


@dataclass(frozen=True)
class Health:
    """What the probes report, read fresh on every request."""

    synced: bool
    role: str  # "leader" | "standby" | "starting" | "stopping"
    lease_ok: bool
    identity: str = ""  # this process's name in the Lease
    cluster: str = ""  # the cluster ID its markers name ("" until known)

    @property
    def ready(self) -> bool:
        return self.synced and self.lease_ok and self.role in ("leader", "standby")


async def start_server(address: str, port: int, health: Callable[[], Health]) -> web.AppRunner:
    """Serve the three endpoints; the caller cleans the runner up on shutdown."""

    def answer(ok: bool, state: Health) -> web.Response:
        body = {
            "ok": ok,
            "synced": state.synced,
            "role": state.role,
            "lease": state.lease_ok,
            "identity": state.identity,
            "cluster": state.cluster,
        }
        return web.Response(
            status=200 if ok else 503, text=json.dumps(body), content_type="application/json"
        )

    async def healthz(_: web.Request) -> web.Response:
        state = health()
        return answer(state.lease_ok or state.role != "leader", state)

    async def readyz(_: web.Request) -> web.Response:
        state = health()
        return answer(state.ready, state)

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(
            body=prometheus_client.generate_latest(),
            headers={"Content-Type": prometheus_client.CONTENT_TYPE_LATEST},
        )

    app = web.Application()
    app.add_routes(
        [web.get("/healthz", healthz), web.get("/readyz", readyz), web.get("/metrics", metrics)]
    )
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, address, port).start()
    return runner

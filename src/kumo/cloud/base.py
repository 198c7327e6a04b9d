"""CloudBase: how every cloud call is made, and name resolution.

Blocking SDK calls run in threads, bounded per cloud by a semaphore and a token
bucket, so the event loop never blocks and one cloud is never flooded. ``_call``
classifies failures into transient/terminal ReconcileErrors; ``_get`` turns 404
into ``None``. The per-service calls live in compute.py, octavia.py, designate.py.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, TypeVar

import openstack.connection
from openstack import exceptions as os_exc

from kumo.cloud.errors import classify
from kumo.cloud.ratelimit import TokenBucket
from kumo.engine.errors import TerminalError

T = TypeVar("T")


class CloudBase:
    def __init__(
        self,
        conn: openstack.connection.Connection,
        *,
        concurrency: int = 8,
        rate: float = 20.0,
    ) -> None:
        self.conn = conn
        self.region = conn.config.get_region_name()
        self._slots = asyncio.Semaphore(concurrency)
        self._bucket = TokenBucket(rate, burst=max(concurrency, int(rate)))
        self._names: dict[tuple[str, str], str] = {}

    async def _call(
        self, action: str, fn: Callable[..., T], *args: Any, field: str | None = None, **kw: Any
    ) -> T:
        await self._bucket.acquire()
        async with self._slots:
            try:
                return await asyncio.to_thread(functools.partial(fn, *args, **kw))
            except Exception as error:
                raise classify(error, action, field) from error

    async def _get(self, action: str, fn: Callable[..., T], *args: Any, **kw: Any) -> T | None:
        try:
            return await self._call(action, fn, *args, **kw)
        except TerminalError as error:
            if isinstance(error.__cause__, os_exc.NotFoundException):
                return None
            raise

    # -- name resolution (cached: names of images/flavors/networks rarely move) --------

    async def _resolve(self, what: str, find: Callable[..., Any], ref: str, field: str) -> str:
        key = (what, ref)
        if key not in self._names:
            found = await self._call(
                f"look up {what} {ref!r}", find, ref, ignore_missing=True, field=field
            )
            if found is None:
                raise TerminalError(
                    f"{what.title()}NotFound", f"{what} {ref!r} not found", field=field
                )
            self._names[key] = found.id
        return self._names[key]

    async def image_id(self, ref: str, field: str = "spec.image") -> str:
        return await self._resolve("image", self.conn.image.find_image, ref, field)

    async def flavor_id(self, ref: str, field: str = "spec.flavor") -> str:
        return await self._resolve("flavor", self.conn.compute.find_flavor, ref, field)

    async def network_id(self, ref: str, field: str = "spec.networks") -> str:
        return await self._resolve("network", self.conn.network.find_network, ref, field)

    async def default_network_id(self, external: bool, field: str) -> str:
        """The project's own network, or the external network when ``external``."""
        key = ("default-network", str(external))
        if key not in self._names:

            def pick() -> str | None:
                project = self.conn.current_project_id
                for net in sorted(self.conn.network.networks(), key=lambda n: n.name or ""):
                    if external and net.is_router_external:
                        return str(net.id)
                    if not external and not net.is_router_external and net.project_id == project:
                        return str(net.id)
                return None

            found = await self._call("list networks", pick)
            if found is None:
                kind = "external" if external else "project"
                raise TerminalError("NetworkNotFound", f"no {kind} network found", field=field)
            self._names[key] = found
        return self._names[key]

    async def lb_flavor_id(self, ref: str, field: str = "spec.serviceType") -> str:
        return await self._resolve(
            "load balancer flavor", self.conn.load_balancer.find_flavor, ref, field
        )

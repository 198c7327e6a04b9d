"""The boot shim's Octavia VIP: TCP on VIP:port forwarded to the pool's members.

The lab's Octavia runs no-op drivers: a load balancer exists in its database only, and
nothing answers on its VIP. The shim puts the VIP on the nodes' bridge and forwards each
new connection to one of the members Octavia holds (the shim passes only those up and
with weight > 0), in turn. Nothing else decides where traffic goes: a member Kumo forgot
to add, or left in after its node went, shows as the outage it would be on a real cloud.
A connection to a member that leaves the pool is closed.

One asyncio loop in a thread of its own, so the shim's polls of the cloud never hold up
traffic; ``update`` is called from the shim's loop with the whole wanted state.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

Address = tuple[str, int]
#: Seconds to reach one member before the next is tried.
CONNECT_TIMEOUT = 3.0
CHUNK = 65536


@dataclass(eq=False)
class _Link:
    member: Address
    client: asyncio.StreamWriter
    upstream: asyncio.StreamWriter

    def close(self) -> None:
        for writer in (self.client, self.upstream):
            writer.close()


@dataclass
class _Vip:
    server: asyncio.Server
    members: list[Address] = field(default_factory=list)
    turn: itertools.count[int] = field(default_factory=itertools.count)
    links: set[_Link] = field(default_factory=set)


class Proxy:
    """Listeners on VIPs, each forwarding to its members; call ``close`` to stop."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._vips: dict[Address, _Vip] = {}
        self._thread = threading.Thread(target=self._loop.run_forever, name="vip-proxy")
        self._thread.daemon = True
        self._thread.start()

    def update(self, wanted: Mapping[Address, Sequence[Address]]) -> dict[Address, str]:
        """Serve exactly the VIPs of ``wanted``, each with its members; returns why a VIP
        could not be served (its address not on this host yet, the port taken)."""
        future = asyncio.run_coroutine_threadsafe(self._update(dict(wanted)), self._loop)
        return future.result(timeout=30)

    def members(self) -> dict[Address, list[Address]]:
        """What each VIP forwards to now."""
        return {vip: list(v.members) for vip, v in self._vips.items()}

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.update({})
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _update(self, wanted: dict[Address, Sequence[Address]]) -> dict[Address, str]:
        errors: dict[Address, str] = {}
        for vip in [v for v in self._vips if v not in wanted]:
            gone = self._vips.pop(vip)
            gone.server.close()
            for link in list(gone.links):
                link.close()
        for vip, members in wanted.items():
            if vip not in self._vips:
                try:
                    server = await asyncio.start_server(
                        lambda r, w, vip=vip: self._serve(vip, r, w),  # type: ignore[misc]
                        vip[0],
                        vip[1],
                        reuse_address=True,
                    )
                except OSError as error:
                    errors[vip] = str(error)
                    continue
                self._vips[vip] = _Vip(server)
            served = self._vips[vip]
            served.members = list(members)
            for link in [k for k in served.links if k.member not in served.members]:
                link.close()
        return errors

    async def _serve(
        self, vip: Address, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        served = self._vips.get(vip)
        members = list(served.members) if served else []
        if served is None or not members:
            writer.close()  # no member: the outage a missing member is
            return
        start = next(served.turn) % len(members)
        for member in members[start:] + members[:start]:
            try:
                up_reader, up_writer = await asyncio.wait_for(
                    asyncio.open_connection(*member), CONNECT_TIMEOUT
                )
            except (OSError, TimeoutError):
                continue
            break
        else:
            writer.close()
            return
        link = _Link(member, writer, up_writer)
        served.links.add(link)
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            served.links.discard(link)
            link.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until end of stream, then pass the end on (a half-close, as TCP has it)."""
    try:
        while chunk := await reader.read(CHUNK):
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, RuntimeError):
        writer.close()

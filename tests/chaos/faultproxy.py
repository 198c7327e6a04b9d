"""A fault-injecting reverse proxy for the lab's OpenStack APIs.

Why: Kumo's claim is that a flaky cloud (5xx, 429 with Retry-After, dropped
connections, slow answers) never makes it leak or duplicate a resource. The lab's
services answer perfectly, so the chaos suite puts this proxy between the operator and
Nova, Neutron, Glance, Octavia and Designate (one listener per service, each on a random
127.0.0.1 port; Keystone stays direct) and lets it misbehave with configurable
probabilities, counting what it did so a test can show the faults really happened.

Faults, decided per request:

* ``latency`` — wait 1-3 s (``latency_range``) first; combines with the others;
* ``5xx`` — answer 500/502/503 without asking the upstream;
* ``429`` — answer 429 with ``Retry-After``;
* ``reset`` — close the connection without an answer (RST);
* ``lost`` — a share (``lost_response``) of the 5xx and resets happens *after* the
  upstream carried the request out: the create went through, its answer is lost.
  These are counted under their kind and again under ``lost``;
* ``swallowed`` — a request matching ``swallow`` (a regex over ``METHOD /path``), at
  most ``swallow_limit`` times, is answered ``202 Accepted`` and never carried out: a
  cloud that accepted a delete and then failed it (the server stays ACTIVE);
* ``lost_first`` — the first request of each ``METHOD /path`` matching ``lose_first`` (a
  regex; :data:`LOSE_FIRST_CREATES`: the creates of networks, routers and security
  groups) is carried out by the upstream and answered 502: a create whose answer is
  lost, for certain rather than by chance. Counted under ``lost`` too.

Version documents (``GET /``, ``GET /v2.1`` …) are not faulted unless
``fault_discovery`` is set: when openstacksdk's discovery fails it falls back to the
base microversion for that call, a client-library behaviour this suite does not examine.
They are also the one thing the proxy edits: the upstream's own address in them is
replaced by the proxy's. openstacksdk takes the service URL from the version document's
links and, when it differs from an endpoint override, re-points the override there;
Octavia and Designate build those links from ``api_base_uri`` (not from the ``Host``
header), so without the edit they would lead the client straight past the proxy.

Every other answer is passed on as it is — with every probability at 0 the proxy is
transparent: status, reason, end-to-end headers and body bytes are the upstream's
(hop-by-hop headers such as ``Connection`` and ``Transfer-Encoding`` belong to each
connection and are not copied). The ``Host`` header is passed on, so the services that
build links from it (Nova, Glance) point back at the proxy. Links built from
``api_base_uri`` in other answers (pagination of Octavia and Designate lists) still
lead to the upstream: those pages bypass the faults, nothing else.

Safety: upstreams must be ``http://127.0.0.1:PORT``, listeners bind 127.0.0.1 only, a
request only ever goes to its listener's upstream, and the proxy stops by itself after
``lifetime`` seconds even if nobody stops it. :class:`FaultProxy` is the asyncio core;
:class:`FaultProxyThread` runs it in a background thread for synchronous tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import re
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

__all__ = [
    "FAULT_KINDS",
    "LOSE_FIRST_CREATES",
    "FaultConfig",
    "FaultProxy",
    "FaultProxyThread",
    "check_upstream",
]

FAULT_KINDS = ("5xx", "429", "reset", "latency", "lost", "swallowed", "lost_first")
LOOPBACK = "127.0.0.1"
#: Headers that describe one connection, not the message (RFC 9110 §7.6.1).
HOP_BY_HOP = frozenset(
    h.lower()
    for h in (
        "Connection",
        "Keep-Alive",
        "Proxy-Authenticate",
        "Proxy-Authorization",
        "Proxy-Connection",
        "TE",
        "Trailer",
        "Transfer-Encoding",
        "Upgrade",
    )
)
#: Version documents: ``/``, ``/v2``, ``/v2.0``, ``/v2.1/`` (what keystoneauth discovers).
DISCOVERY_PATH = re.compile(r"^/(v\d+(\.\d+)?/?)?$")
#: ``lose_first`` for Neutron's creates that carry Kumo's marker only in the description
#: (the tags follow in a second call): a network, a router, a security group.
LOSE_FIRST_CREATES = r"^POST (/v2\.0)?/(networks|routers|security-groups)$"
UPSTREAM_TIMEOUT = aiohttp.ClientTimeout(total=120)


@dataclass(frozen=True)
class FaultConfig:
    """Probabilities (0-1) per request. ``error_5xx + too_many + reset`` must be ≤ 1."""

    error_5xx: float = 0.0
    too_many: float = 0.0
    reset: float = 0.0
    latency: float = 0.0
    latency_range: tuple[float, float] = (1.0, 3.0)
    retry_after: int = 1
    lost_response: float = 0.0
    fault_discovery: bool = False
    error_statuses: tuple[int, ...] = (500, 502, 503)
    swallow: str | None = None
    swallow_limit: int = 1
    lose_first: str | None = None

    def __post_init__(self) -> None:
        for name in ("error_5xx", "too_many", "reset", "latency", "lost_response"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be within 0..1, got {value}")
        if self.error_5xx + self.too_many + self.reset > 1.0:
            raise ValueError("error_5xx + too_many + reset must not exceed 1")
        low, high = self.latency_range
        if not 0 <= low <= high <= 30:
            raise ValueError(f"latency_range must be 0 <= low <= high <= 30, got {low}, {high}")

    @property
    def quiet(self) -> bool:
        return not (
            self.error_5xx
            or self.too_many
            or self.reset
            or self.latency
            or self.swallow
            or self.lose_first
        )


def check_upstream(url: str) -> str:
    """``scheme://127.0.0.1:PORT`` of an upstream URL; anything not on 127.0.0.1 is refused."""
    parts = urlsplit(url)
    if parts.scheme != "http" or parts.hostname != LOOPBACK or parts.port is None:
        raise ValueError(f"upstream must be http://{LOOPBACK}:PORT, got {url!r}")
    return f"http://{LOOPBACK}:{parts.port}"


@dataclass
class _Listener:
    name: str
    upstream: str
    runner: web.AppRunner | None = None
    port: int = 0


@dataclass
class FaultProxy:
    """One listener per named upstream; ``configure`` changes the faults at any time."""

    upstreams: Mapping[str, str]
    config: FaultConfig = field(default_factory=FaultConfig)
    seed: int | None = None
    rewrite_discovery: bool = True

    def __post_init__(self) -> None:
        self._listeners = {
            name: _Listener(name, check_upstream(url)) for name, url in self.upstreams.items()
        }
        self._rng = random.Random(self.seed)
        self.counts: Counter[str] = Counter()
        self.by_service: dict[str, Counter[str]] = {n: Counter() for n in self._listeners}
        self.requests = 0
        self._session: aiohttp.ClientSession | None = None
        self._lost_first: set[str] = set()  # the METHOD /path whose first answer was lost

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> dict[str, str]:
        """Bind every listener; return name → ``http://127.0.0.1:PORT``."""
        self._session = aiohttp.ClientSession(
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            timeout=UPSTREAM_TIMEOUT,
            connector=aiohttp.TCPConnector(limit=64),
        )
        try:
            for listener in self._listeners.values():
                app = web.Application(client_max_size=64 * 1024 * 1024)
                app.router.add_route("*", "/{tail:.*}", self._handler(listener))
                runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
                await runner.setup()
                site = web.TCPSite(runner, LOOPBACK, 0)
                await site.start()
                listener.runner = runner
                listener.port = _bound_port(runner)
        except BaseException:
            await self.stop()
            raise
        return self.urls

    async def stop(self) -> None:
        for listener in self._listeners.values():
            if listener.runner is not None:
                await listener.runner.cleanup()
                listener.runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    @property
    def urls(self) -> dict[str, str]:
        return {n: f"http://{LOOPBACK}:{x.port}" for n, x in self._listeners.items() if x.port}

    def configure(self, config: FaultConfig) -> None:
        self.config = config

    def snapshot(self) -> dict[str, int]:
        """Injected faults per kind (every kind present, zeros included)."""
        return {kind: self.counts.get(kind, 0) for kind in FAULT_KINDS}

    def requests_of(self, name: str) -> int:
        """Requests the listener ``name`` received (faulted or not)."""
        return self.by_service[name]["requests"]

    def calls_of(self, name: str) -> int:
        """API calls (requests other than version documents) the listener received."""
        return self.by_service[name]["calls"]

    # -- requests ------------------------------------------------------------------------

    def _handler(self, listener: _Listener) -> Any:
        async def handle(request: web.Request) -> web.StreamResponse:
            return await self._handle(listener, request)

        return handle

    def _count(self, listener: _Listener, kind: str) -> None:
        self.counts[kind] += 1
        self.by_service[listener.name][kind] += 1

    async def _handle(self, listener: _Listener, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        self.by_service[listener.name]["requests"] += 1
        config = self.config  # one decision per request, even if reconfigured meanwhile
        body = await request.read()
        discovery = (
            request.method in ("GET", "HEAD") and DISCOVERY_PATH.match(request.path) is not None
        )
        if not discovery:
            self.by_service[listener.name]["calls"] += 1
        rewrite = discovery and self.rewrite_discovery
        if (discovery and not config.fault_discovery) or config.quiet:
            return await self._forward(listener, request, body, rewrite)

        if (
            config.swallow
            and self.counts["swallowed"] < config.swallow_limit
            and re.search(config.swallow, f"{request.method} {request.path}")
        ):
            self._count(listener, "swallowed")
            return web.Response(status=202, reason="Accepted")
        if config.lose_first and self._first(config.lose_first, request):
            self._count(listener, "lost_first")
            self._count(listener, "lost")
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                await self._forward(listener, request, body)
            return _error(502, "injected by the chaos suite's fault proxy: answer lost")
        rng = self._rng
        if rng.random() < config.latency:
            self._count(listener, "latency")
            await asyncio.sleep(rng.uniform(*config.latency_range))
        draw = rng.random()
        lost = rng.random() < config.lost_response
        if draw < config.error_5xx:
            kind = "5xx"
        elif draw < config.error_5xx + config.too_many:
            kind = "429"
        elif draw < config.error_5xx + config.too_many + config.reset:
            kind = "reset"
        else:
            return await self._forward(listener, request, body, rewrite)

        self._count(listener, kind)
        if kind != "429" and lost:
            self._count(listener, "lost")
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                await self._forward(listener, request, body)
        if kind == "429":
            return _error(429, "injected by the chaos suite's fault proxy", config.retry_after)
        if kind == "5xx":
            status = rng.choice(config.error_statuses)
            return _error(status, "injected by the chaos suite's fault proxy")
        return _reset(request)

    def _first(self, pattern: str, request: web.Request) -> bool:
        """Is this the first request of its ``METHOD /path`` matching ``pattern``?"""
        key = f"{request.method} {request.path}"
        if key in self._lost_first or not re.search(pattern, key):
            return False
        self._lost_first.add(key)
        return True

    async def _forward(
        self, listener: _Listener, request: web.Request, body: bytes, rewrite: bool = False
    ) -> web.StreamResponse:
        assert self._session is not None, "the proxy is not started"
        headers = CIMultiDict(
            (k, v) for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP
        )
        headers.popall("Content-Length", None)
        if rewrite:
            headers["Accept-Encoding"] = "identity"  # a compressed body could not be edited
        skip = {h for h in ("Accept-Encoding", "User-Agent", "Content-Type") if h not in headers}
        try:
            async with self._session.request(
                request.method,
                listener.upstream + request.rel_url.raw_path_qs,  # never an absolute URL
                headers=headers,
                data=body if body else None,
                allow_redirects=False,
                skip_auto_headers=skip,
            ) as upstream:
                payload = await upstream.read()
                out = CIMultiDict(
                    (k, v) for k, v in upstream.headers.items() if k.lower() not in HOP_BY_HOP
                )
                if rewrite:
                    payload = _point_at_proxy(payload, out, listener)
                return web.Response(
                    status=upstream.status, reason=upstream.reason, headers=out, body=payload
                )
        except (aiohttp.ClientError, TimeoutError) as error:
            # The upstream is down (an outage test stopped it): say so like a gateway would.
            return _error(502, f"upstream {listener.name} unreachable: {type(error).__name__}")


def _point_at_proxy(payload: bytes, headers: CIMultiDict[str], listener: _Listener) -> bytes:
    """The upstream's address replaced by the proxy's in a version document."""
    old, new = listener.upstream, f"http://{LOOPBACK}:{listener.port}"
    address = re.compile(re.escape(old) + r"(?![0-9])")  # :987 must not match :9876
    if "Location" in headers:
        headers["Location"] = address.sub(new, headers["Location"])
    if "Content-Encoding" in headers:
        return payload
    edited = re.compile(address.pattern.encode()).sub(new.encode(), payload)
    if edited == payload:
        return payload
    if "Content-Length" in headers:
        headers["Content-Length"] = str(len(edited))
    return edited


def _error(status: int, message: str, retry_after: int | None = None) -> web.Response:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
    body = {"code": status, "title": "Injected fault", "message": message}
    return web.Response(
        status=status, headers=headers, text=json.dumps(body), content_type="application/json"
    )


def _reset(request: web.Request) -> web.StreamResponse:
    """Drop the connection with an RST and no answer (SO_LINGER 0, then abort)."""
    transport = request.transport
    if transport is not None:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
    # aiohttp finds the transport closed and writes nothing; the client sees a reset.
    return web.Response(status=500)


def _bound_port(runner: web.AppRunner) -> int:
    for address in runner.addresses:
        return int(address[1])
    raise RuntimeError("listener did not bind")


class FaultProxyThread:
    """:class:`FaultProxy` on its own event loop in a daemon thread, for sync tests.

    ``start()`` returns once every listener is bound (or raises). The proxy stops on
    ``stop()`` (waits at most ``stop_timeout``) or by itself after ``lifetime`` seconds,
    so a test that dies half-way cannot leave it running.
    """

    def __init__(
        self,
        upstreams: Mapping[str, str],
        config: FaultConfig | None = None,
        *,
        seed: int | None = None,
        lifetime: float = 3600.0,
    ) -> None:
        self.proxy = FaultProxy(upstreams, config or FaultConfig(), seed)
        self.lifetime = lifetime
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="fault-proxy", daemon=True)
        self.urls: dict[str, str] = {}
        self.stopped_at: float | None = None

    def start(self, timeout: float = 10.0) -> dict[str, str]:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError(f"fault proxy did not start within {timeout}s")
        if self._error is not None:
            raise RuntimeError("fault proxy failed to start") from self._error
        return self.urls

    def configure(self, config: FaultConfig) -> None:
        self.proxy.configure(config)  # one attribute assignment: safe across threads

    def snapshot(self) -> dict[str, int]:
        return dict(self.proxy.snapshot())

    @property
    def requests(self) -> int:
        return self.proxy.requests

    def requests_of(self, name: str) -> int:
        return self.proxy.requests_of(name)

    def calls_of(self, name: str) -> int:
        return self.proxy.calls_of(name)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float = 10.0) -> None:
        loop, stopped = self._loop, self._stopped
        if loop is not None and stopped is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(stopped.set)
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"fault proxy did not stop within {timeout}s")

    def __enter__(self) -> FaultProxyThread:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        finally:
            loop.close()
            self.stopped_at = time.monotonic()

    async def _serve(self) -> None:
        self._stopped = asyncio.Event()
        try:
            self.urls = await self.proxy.start()
        except BaseException as error:
            self._error = error
            self._ready.set()
            return
        self._ready.set()
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopped.wait(), timeout=self.lifetime)
        finally:
            await self.proxy.stop()

"""The chaos suite's fault proxy against a tiny aiohttp upstream on a random 127.0.0.1
port: transparent at 0 %, each fault kind happens and is counted, it only talks to
127.0.0.1 and it stops by itself."""

from __future__ import annotations

import asyncio
import http.client
import threading
import time
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tests.chaos.faultproxy import (
    FAULT_KINDS,
    HOP_BY_HOP,
    LOSE_FIRST_CREATES,
    FaultConfig,
    FaultProxy,
    FaultProxyThread,
    check_upstream,
)
from tests.integration.polling import wait_until

FIXED_DATE = "Thu, 01 Jan 2026 00:00:00 GMT"


class Upstream:
    """Answers by path; records every request it received."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, bytes, dict[str, str]]] = []
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> str:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self.runner.addresses[0][1]}"
        return self.url

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.seen.append((request.method, request.path_qs, body, dict(request.headers)))
        fixed = {"Date": FIXED_DATE, "Server": "upstream/1"}
        if request.path == "/accepted":
            response = web.Response(
                status=202, reason="Accepted For Now", body=b"\x00\x01binary\xff", headers=fixed
            )
            response.headers.add("X-Multi", "one")
            response.headers.add("X-Multi", "two")
            response.headers["Content-Type"] = "application/x-kumo-test"
            response.headers["Location"] = "/v2.1/servers/abc"
            return response
        if request.path == "/empty":
            return web.Response(status=204, headers=fixed)
        if request.path == "/missing":
            return web.json_response({"itemNotFound": {"code": 404}}, status=404, headers=fixed)
        if request.path == "/broken":
            return web.Response(status=500, text="upstream's own error", headers=fixed)
        if request.path in ("/", "/v2.0/lbaas/loadbalancers"):
            links = {
                "self": f"{self.url}/v2.0",
                "next": f"{self.url}/v2.0?marker=x",
                "other": f"{self.url}0/v2.0",  # another port that starts alike
            }
            return web.json_response(
                {"versions": [{"id": "v2.0", "links": links}]},
                headers={**fixed, "Location": f"{self.url}/v2.0"},
            )
        if request.path == "/big":
            return web.Response(body=bytes(range(256)) * 4096, headers=fixed)
        echo = {"method": request.method, "path": request.path_qs, "body": body.decode()}
        return web.json_response(echo, headers={**fixed, "X-Request-Id": "req-1"})


Scenario = Callable[[FaultProxy, Upstream, aiohttp.ClientSession], Awaitable[Any]]


def run(scenario: Scenario, config: FaultConfig | None = None, seed: int = 7) -> Any:
    async def main() -> Any:
        upstream = Upstream()
        await upstream.start()
        proxy = FaultProxy({"svc": upstream.url}, config or FaultConfig(), seed)
        await proxy.start()
        try:
            async with aiohttp.ClientSession(auto_decompress=False) as session:
                return await scenario(proxy, upstream, session)
        finally:
            await proxy.stop()
            await upstream.stop()

    return asyncio.run(main())


async def fetch(
    session: aiohttp.ClientSession, method: str, url: str, **kw: Any
) -> tuple[int, str | None, list[tuple[str, str]], bytes]:
    async with session.request(method, url, **kw) as r:
        headers = [(k, v) for k, v in r.headers.items() if k.lower() not in HOP_BY_HOP]
        return r.status, r.reason, headers, await r.read()


REQUESTS: list[tuple[str, str, dict[str, Any]]] = [
    ("GET", "/accepted", {}),
    ("GET", "/servers/detail?tags=kumo-owner%3Dabc&limit=2", {}),
    ("POST", "/servers", {"data": b'{"server": {"name": "x"}}'}),
    ("PUT", "/servers/abc/tags", {"json": {"tags": ["kumo"]}}),
    ("DELETE", "/servers/abc", {}),
    ("GET", "/empty", {}),
    ("GET", "/missing", {}),
    ("GET", "/broken", {}),
    ("HEAD", "/accepted", {}),
    ("GET", "/big", {}),
]


def test_zero_faults_pass_everything_through_byte_identical() -> None:
    async def scenario(proxy: FaultProxy, upstream: Upstream, s: aiohttp.ClientSession) -> None:
        base = proxy.urls["svc"]
        for method, path, kw in REQUESTS:
            direct = await fetch(s, method, upstream.url + path, **kw)
            proxied = await fetch(s, method, base + path, **kw)
            assert proxied == direct, f"{method} {path}"
        # The upstream saw the same method, path, query and body both times.
        direct_seen, proxied_seen = upstream.seen[0::2], upstream.seen[1::2]
        for a, b in zip(direct_seen, proxied_seen, strict=True):
            assert a[:3] == b[:3]
        assert proxy.snapshot() == dict.fromkeys(FAULT_KINDS, 0)
        assert proxy.requests == len(REQUESTS)

    run(scenario)


def test_request_headers_reach_the_upstream() -> None:
    async def scenario(proxy: FaultProxy, upstream: Upstream, s: aiohttp.ClientSession) -> None:
        headers = {"X-Auth-Token": "tok", "OpenStack-API-Version": "compute 2.96"}
        await fetch(s, "GET", proxy.urls["svc"] + "/x", headers=headers)
        got = upstream.seen[-1][3]
        assert got["X-Auth-Token"] == "tok"
        assert got["OpenStack-API-Version"] == "compute 2.96"
        assert got["Host"] == proxy.urls["svc"].removeprefix("http://")  # preserved

    run(scenario)


def test_version_documents_point_at_the_proxy_and_api_answers_stay_untouched() -> None:
    async def scenario(proxy: FaultProxy, upstream: Upstream, s: aiohttp.ClientSession) -> None:
        base = proxy.urls["svc"]
        async with s.get(base + "/") as r:
            doc, location = await r.json(), r.headers["Location"]
            assert int(r.headers["Content-Length"]) == len(await r.read())
        links = doc["versions"][0]["links"]
        assert links["self"] == f"{base}/v2.0" and links["next"] == f"{base}/v2.0?marker=x"
        assert links["other"] == f"{upstream.url}0/v2.0"
        assert location == f"{base}/v2.0"
        # An API call's body is the upstream's, byte for byte.
        direct = await fetch(s, "GET", upstream.url + "/v2.0/lbaas/loadbalancers")
        proxied = await fetch(s, "GET", base + "/v2.0/lbaas/loadbalancers")
        assert proxied == direct
        assert proxy.calls_of("svc") == 1 and proxy.requests_of("svc") == 2

    run(scenario)


def test_5xx_always_when_asked_and_the_upstream_is_not_called() -> None:
    async def scenario(proxy: FaultProxy, upstream: Upstream, s: aiohttp.ClientSession) -> None:
        statuses = [(await fetch(s, "POST", proxy.urls["svc"] + "/servers"))[0] for _ in range(20)]
        assert set(statuses) <= {500, 502, 503} and len(statuses) == 20
        assert upstream.seen == []
        assert proxy.snapshot()["5xx"] == 20

    run(scenario, FaultConfig(error_5xx=1.0))


def test_429_carries_retry_after() -> None:
    async def scenario(proxy: FaultProxy, upstream: Upstream, s: aiohttp.ClientSession) -> None:
        async with s.get(proxy.urls["svc"] + "/x") as r:
            assert r.status == 429 and r.headers["Retry-After"] == "3"
        assert proxy.snapshot()["429"] == 1 and upstream.seen == []

    run(scenario, FaultConfig(too_many=1.0, retry_after=3))


def test_reset_closes_the_connection_without_an_answer() -> None:
    async def scenario(proxy: FaultProxy, upstream: Upstream, s: aiohttp.ClientSession) -> None:
        port = int(proxy.urls["svc"].rsplit(":", 1)[1])

        def plain_request() -> None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            try:
                conn.request("GET", "/x")
                conn.getresponse()
            finally:
                conn.close()

        with pytest.raises((ConnectionResetError, http.client.RemoteDisconnected)):
            await asyncio.to_thread(plain_request)
        assert proxy.snapshot()["reset"] == 1 and upstream.seen == []

    run(scenario, FaultConfig(reset=1.0))


def test_latency_delays_then_passes_through() -> None:
    async def scenario(proxy: FaultProxy, upstream: Upstream, s: aiohttp.ClientSession) -> None:
        began = time.monotonic()
        status, *_ = await fetch(s, "GET", proxy.urls["svc"] + "/x")
        assert status == 200 and time.monotonic() - began >= 0.2
        assert proxy.snapshot()["latency"] == 1 and len(upstream.seen) == 1

    run(scenario, FaultConfig(latency=1.0, latency_range=(0.2, 0.3)))


def test_lost_response_means_the_upstream_did_it_and_the_client_got_an_error() -> None:
    async def scenario(proxy: FaultProxy, upstream: Upstream, s: aiohttp.ClientSession) -> None:
        status, *_ = await fetch(s, "POST", proxy.urls["svc"] + "/servers", data=b"{}")
        assert status >= 500
        assert [(m, p) for m, p, *_ in upstream.seen] == [("POST", "/servers")]
        assert proxy.snapshot()["5xx"] == 1 and proxy.snapshot()["lost"] == 1

    run(scenario, FaultConfig(error_5xx=1.0, lost_response=1.0))


def test_mixed_probabilities_are_roughly_honoured_and_counted_per_service() -> None:
    config = FaultConfig(error_5xx=0.2, too_many=0.1, reset=0.1)

    async def scenario(proxy: FaultProxy, upstream: Upstream, s: aiohttp.ClientSession) -> None:
        answers: list[int] = []
        for _ in range(400):
            try:
                answers.append((await fetch(s, "GET", proxy.urls["svc"] + "/x"))[0])
            except aiohttp.ClientError:
                answers.append(0)
        counts = proxy.snapshot()
        assert 50 <= counts["5xx"] <= 120, counts
        assert 20 <= counts["429"] <= 70, counts
        assert 20 <= counts["reset"] <= 70, counts
        assert answers.count(429) == counts["429"]
        assert sum(1 for a in answers if a >= 500) == counts["5xx"]
        assert proxy.by_service["svc"]["5xx"] == counts["5xx"]
        # aiohttp retries a request once when a reused connection is reset: count >= 400.
        assert proxy.requests_of("svc") == proxy.requests >= 400

    run(scenario, config)


def test_the_same_seed_injects_the_same_faults() -> None:
    config = FaultConfig(error_5xx=0.3, too_many=0.2)

    async def scenario(
        proxy: FaultProxy, upstream: Upstream, s: aiohttp.ClientSession
    ) -> list[int]:
        return [(await fetch(s, "GET", proxy.urls["svc"] + "/x"))[0] for _ in range(50)]

    assert run(scenario, config, seed=42) == run(scenario, config, seed=42)


def test_version_documents_are_spared_unless_asked() -> None:
    async def scenario(proxy: FaultProxy, upstream: Upstream, s: aiohttp.ClientSession) -> None:
        for path in ("/", "/v2.1", "/v2.1/", "/v2"):
            assert (await fetch(s, "GET", proxy.urls["svc"] + path))[0] == 200, path
        assert (await fetch(s, "GET", proxy.urls["svc"] + "/v2.1/servers"))[0] >= 500
        proxy.configure(FaultConfig(error_5xx=1.0, fault_discovery=True))
        assert (await fetch(s, "GET", proxy.urls["svc"] + "/v2.1"))[0] >= 500

    run(scenario, FaultConfig(error_5xx=1.0))


def test_an_unreachable_upstream_is_a_502_not_a_counted_fault() -> None:
    async def main() -> None:
        upstream = Upstream()
        url = await upstream.start()
        await upstream.stop()  # nothing listens there any more
        proxy = FaultProxy({"svc": url})
        await proxy.start()
        try:
            async with aiohttp.ClientSession() as s:
                assert (await fetch(s, "GET", proxy.urls["svc"] + "/x"))[0] == 502
        finally:
            await proxy.stop()
        assert proxy.snapshot() == dict.fromkeys(FAULT_KINDS, 0)

    asyncio.run(main())


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.1:8774",
        "http://localhost:8774",
        "http://example.com:80",
        "https://127.0.0.1:8774",
        "http://127.0.0.1",
        "http://[::1]:8774",
    ],
)
def test_only_127_0_0_1_upstreams(url: str) -> None:
    with pytest.raises(ValueError):
        check_upstream(url)
    with pytest.raises(ValueError):
        FaultProxy({"svc": url})


def test_upstream_paths_are_dropped_and_listeners_bind_loopback() -> None:
    assert check_upstream("http://127.0.0.1:8774/v2.1") == "http://127.0.0.1:8774"

    async def scenario(proxy: FaultProxy, upstream: Upstream, s: aiohttp.ClientSession) -> None:
        assert all(u.startswith("http://127.0.0.1:") for u in proxy.urls.values())

    run(scenario)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"error_5xx": 1.5},
        {"reset": -0.1},
        {"error_5xx": 0.6, "too_many": 0.3, "reset": 0.2},
        {"latency_range": (3.0, 1.0)},
    ],
)
def test_nonsense_configs_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        FaultConfig(**kwargs)


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *args: Any) -> None:
        pass


def test_thread_wrapper_serves_reconfigures_and_stops_in_bounded_time() -> None:
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    serving = threading.Thread(target=upstream.serve_forever, daemon=True)
    serving.start()
    try:
        with FaultProxyThread({"svc": f"http://127.0.0.1:{upstream.server_port}"}) as proxy:
            port = int(proxy.urls["svc"].rsplit(":", 1)[1])

            def get(path: str) -> tuple[int, bytes]:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                try:
                    conn.request("GET", path)
                    response = conn.getresponse()
                    return response.status, response.read()
                finally:
                    conn.close()

            assert get("/x") == (200, b"hello")
            proxy.configure(FaultConfig(error_5xx=1.0))
            assert get("/x")[0] >= 500
            assert proxy.snapshot()["5xx"] == 1 and proxy.requests == 2
            began = time.monotonic()
        assert time.monotonic() - began < 5 and not proxy.alive
    finally:
        upstream.shutdown()
        upstream.server_close()


def test_thread_wrapper_stops_by_itself_after_its_lifetime() -> None:
    proxy = FaultProxyThread({"svc": "http://127.0.0.1:9"}, lifetime=0.5)
    proxy.start()
    wait_until("the proxy to stop by itself", lambda: not proxy.alive, 10, interval=0.1)
    proxy.stop(timeout=1)  # already stopped: returns at once


def test_a_swallowed_request_is_accepted_and_never_carried_out_up_to_its_limit() -> None:
    """A cloud that accepts a delete and then fails it: 202, and the upstream never sees it
    (only the first ``swallow_limit`` matches); other requests pass through untouched."""

    async def scenario(proxy: FaultProxy, upstream: Upstream, s: aiohttp.ClientSession) -> Any:
        url = proxy.urls["svc"]
        first = await fetch(s, "DELETE", url + "/servers/abc")
        other = await fetch(s, "GET", url + "/servers/abc")
        second = await fetch(s, "DELETE", url + "/servers/abc")
        return first[0], other[0], second[0], [(m, p) for m, p, _, _ in upstream.seen]

    config = FaultConfig(swallow=r"^DELETE /servers/", swallow_limit=1)
    first, other, second, seen = run(scenario, config)
    assert (first, other, second) == (202, 200, 200)
    assert seen == [("GET", "/servers/abc"), ("DELETE", "/servers/abc")]


def test_lose_first_carries_out_each_first_create_and_loses_its_answer() -> None:
    """The first POST of networks, routers and security groups each reaches the upstream
    and the client gets a 502; a second create of each, and everything else, passes."""

    async def scenario(proxy: FaultProxy, upstream: Upstream, s: aiohttp.ClientSession) -> Any:
        url = proxy.urls["svc"]
        asked = [
            ("POST", "/v2.0/networks"),
            ("GET", "/v2.0/networks"),
            ("POST", "/v2.0/networks"),
            ("POST", "/v2.0/routers"),
            ("PUT", "/v2.0/routers/r-1/tags"),
            ("POST", "/v2.0/security-groups"),
            ("POST", "/v2.0/security-group-rules"),
            ("POST", "/v2.0/security-groups"),
        ]
        answers = [(await fetch(s, m, url + p, data=b"{}"))[0] for m, p in asked]
        return answers, [(m, p) for m, p, _, _ in upstream.seen], asked, proxy.snapshot()

    answers, seen, asked, counts = run(scenario, FaultConfig(lose_first=LOSE_FIRST_CREATES))
    assert answers == [502, 200, 200, 502, 200, 502, 200, 200]
    assert seen == asked, "every request, the lost ones too, was carried out upstream"
    assert (counts["lost_first"], counts["lost"], counts["5xx"]) == (3, 3, 0)

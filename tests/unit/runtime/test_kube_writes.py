"""A write of Kumo's that the API server answers 404 is never success (issue 21 item 8):
the client used to hand back the old body, and the engine went on to create a server
for an object that was already gone."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import kopf
import pytest
from aiohttp import web

from kumo import __version__
from kumo.api.kinds import VIRTUAL_MACHINE
from kumo.engine.errors import ObjectGone
from kumo.engine.objects import Obj
from kumo.engine.text import EVENT_LIMIT
from kumo.runtime.kube import KubeClient
from tests.unit.fakes import make_body

Handler = Callable[[web.Request], Awaitable[web.Response]]


@contextlib.asynccontextmanager
async def _client(handle: Handler) -> AsyncIterator[KubeClient]:
    """A KubeClient against a local API server that answers every request with ``handle``."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    kube = KubeClient(kopf.ConnectionInfo(server=url, token="t"))
    try:
        yield kube
    finally:
        await kube.close()
        await runner.cleanup()


async def _against_a_server_that_answers_404(check: object) -> list[str]:
    seen: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        seen.append(request.method)
        return web.json_response({"kind": "Status", "code": 404, "reason": "NotFound"}, status=404)

    async with _client(handle) as kube:
        await check(kube)  # type: ignore[operator]
    return seen


def test_every_write_that_answers_404_raises_object_gone() -> None:
    obj = Obj(VIRTUAL_MACHINE, make_body(VIRTUAL_MACHINE, "vm", {}))

    async def check(kube: KubeClient) -> None:
        for write in (
            kube.set_finalizers(obj, ["virtualmachine.kumo.dev/finalizer"]),
            kube.patch_status(obj, {"phase": "Running"}),
            kube.patch(VIRTUAL_MACHINE, "default", "vm", {"spec": {}}),
            kube.create(VIRTUAL_MACHINE, "default", make_body(VIRTUAL_MACHINE, "vm-1", {})),
        ):
            with pytest.raises(ObjectGone) as gone:
                await write
            assert gone.value.reason == "ObjectGone"
        await kube.delete(VIRTUAL_MACHINE, "default", "vm")  # gone is what a delete wants
        assert await kube.get(VIRTUAL_MACHINE, "default", "vm") is None

    seen = asyncio.run(_against_a_server_that_answers_404(check))
    assert seen == ["PATCH", "PATCH", "PATCH", "POST", "DELETE", "GET"]


def test_every_request_names_the_process_in_its_user_agent() -> None:
    """The API server's audit log records the User-Agent of each write: with the Lease
    identity in it, a write by a standby shows (tests/integration/test_leader_election)."""

    async def scenario() -> list[str]:
        agents: list[str] = []

        async def handle(request: web.Request) -> web.Response:
            agents.append(request.headers.get("User-Agent", ""))
            return web.json_response({"metadata": {}, "status": {}})

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        obj = Obj(VIRTUAL_MACHINE, make_body(VIRTUAL_MACHINE, "vm", {}))
        named = KubeClient(kopf.ConnectionInfo(server=url, token="t"), "host_42_ab12cd")
        anonymous = KubeClient(kopf.ConnectionInfo(server=url, token="t"))
        try:
            await named.patch_status(obj, {"phase": "Running"})
            await named.get(VIRTUAL_MACHINE, "default", "vm")
            await anonymous.patch_status(obj, {"phase": "Running"})
        finally:
            await named.close()
            await anonymous.close()
            await runner.cleanup()
        return agents

    named = f"kumo/{__version__} (host_42_ab12cd)"
    assert asyncio.run(scenario()) == [named, named, f"kumo/{__version__}"]


def test_every_event_posted_passes_the_text_gate() -> None:
    """An object's and a namespace's events: one line, at most EVENT_LIMIT, no
    credentials, the retry hint kept."""
    hint = "(transient: retrying)"
    message = "list servers: cannot reach https://u:hunter2@h.example/v3\n" + "x " * 900 + hint

    async def scenario() -> list[str]:
        posted: list[str] = []

        async def handle(request: web.Request) -> web.Response:
            posted.append((await request.json())["message"])
            return web.json_response({})

        obj = Obj(VIRTUAL_MACHINE, make_body(VIRTUAL_MACHINE, "vm", {}))
        async with _client(handle) as kube:
            await kube.post_event(obj, "Warning", "CloudUnreachable", message)
            await kube.post_namespace_event("default", "Warning", "OrphanFound", message)
        return posted

    for posted in asyncio.run(scenario()):
        assert len(posted) <= EVENT_LIMIT and "\n" not in posted
        assert "hunter2" not in posted
        assert posted.startswith("list servers: cannot reach https://h.example/v3 x x")
        assert posted.endswith(f"… {hint}")

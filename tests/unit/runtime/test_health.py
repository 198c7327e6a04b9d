"""The probe endpoints: ready only when synced and leading or a healthy standby."""

from __future__ import annotations

import asyncio
import json
import socket

import aiohttp

from kumo.runtime import metrics  # noqa: F401 - registers the metrics /metrics serves
from kumo.runtime.health import Health, start_server


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def probe(states: list[Health]) -> list[tuple[str, int, dict[str, object]]]:
    async def scenario() -> list[tuple[str, int, dict[str, object]]]:
        current: list[Health] = [states[0]]
        port = _port()
        runner = await start_server("127.0.0.1", port, lambda: current[0])
        answers = []
        try:
            async with aiohttp.ClientSession() as session:
                for state in states:
                    current[0] = state
                    for path in ("/readyz", "/healthz"):
                        async with session.get(f"http://127.0.0.1:{port}{path}") as r:
                            answers.append((path, r.status, json.loads(await r.text())))
                async with session.get(f"http://127.0.0.1:{port}/metrics") as r:
                    assert "kumo_queue_depth" in await r.text()
        finally:
            await runner.cleanup()
        return answers

    return asyncio.run(scenario())


def test_not_ready_until_synced_then_ready_as_standby_or_leader() -> None:
    answers = probe(
        [
            Health(synced=False, role="starting", lease_ok=False),
            Health(synced=True, role="standby", lease_ok=True, identity="b"),
            Health(synced=True, role="leader", lease_ok=True, identity="b"),
        ]
    )
    ready = [(status, body["role"]) for path, status, body in answers if path == "/readyz"]
    assert ready == [(503, "starting"), (200, "standby"), (200, "leader")]
    assert all(status == 200 for path, status, _ in answers if path == "/healthz")


def test_a_standby_that_cannot_read_the_lease_is_not_ready() -> None:
    answers = probe([Health(synced=True, role="standby", lease_ok=False)])
    assert answers[0][:2] == ("/readyz", 503)


def test_a_leader_that_lost_the_api_fails_liveness() -> None:
    answers = probe([Health(synced=True, role="leader", lease_ok=False)])
    assert dict((path, status) for path, status, _ in answers) == {"/readyz": 503, "/healthz": 503}

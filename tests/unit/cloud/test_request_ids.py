"""The pass's global request ID on the one request path (cloud/telemetry.py): every
request of a pass carries ``X-OpenStack-Request-ID``, each response's own ID is kept
by that pass, concurrent passes do not mix, and nothing is sent outside a pass."""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import Any

import requests_mock as rm

from kumo.cloud import telemetry
from kumo.cloud.adapter import OpenStackCloud
from kumo.engine import trace
from tests.unit.cloud.rest import NOVA, recorded
from tests.unit.cloud.test_adapter import run

SERVERS = re.compile(re.escape(f"{NOVA}/servers/") + r"[0-9a-f-]+$")
HEADER = telemetry.REQUEST_ID_HEADER


def answer_with_ids(requests_mock: rm.Mocker) -> list[str]:
    """Nova answers every server GET with 404 and a fresh ``x-openstack-request-id``;
    the IDs it gave, in order."""
    given: list[str] = []

    def body(request: Any, context: Any) -> Any:
        local = f"req-{uuid.uuid4()}"
        given.append(local)
        context.headers["x-openstack-request-id"] = local
        context.headers["x-compute-request-id"] = local
        return recorded("nova_server_not_found.json")

    requests_mock.get(SERVERS, status_code=404, json=body)
    return given


def sent(requests_mock: rm.Mocker) -> list[str | None]:
    """The global request ID of every server GET sent (None: none)."""
    return [r.headers.get(HEADER) for r in requests_mock.request_history if SERVERS.match(r.url)]


def test_every_request_of_a_pass_carries_its_id_and_the_pass_keeps_the_answers(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    given = answer_with_ids(requests_mock)

    async def one_pass() -> trace.Pass:
        with trace.running("VirtualMachine", "ns", "vm", "uid-1") as opened:
            await cloud.get_server(str(uuid.uuid4()))
            await cloud.get_server(str(uuid.uuid4()))
        return opened

    opened = run(one_pass())
    assert trace.GLOBAL_REQUEST_ID.match(opened.request_id)
    assert sent(requests_mock) == [opened.request_id, opened.request_id]
    assert opened.request_ids == given
    assert opened.requests >= 2  # (and the version discovery the first call makes)


def test_no_id_is_sent_outside_a_pass(cloud: OpenStackCloud, requests_mock: rm.Mocker) -> None:
    answer_with_ids(requests_mock)
    assert run(cloud.get_server(str(uuid.uuid4()))) is None
    assert sent(requests_mock) == [None]


def test_concurrent_passes_send_and_keep_their_own_ids(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """Two passes at once, their calls in the adapter's thread pool: each request
    carries its own pass's ID, and each response goes to the pass that asked."""
    answer_with_ids(requests_mock)

    async def one_pass(name: str) -> trace.Pass:
        with trace.running("VirtualMachine", "ns", name, f"uid-{name}") as opened:
            for _ in range(3):
                await cloud.get_server(str(uuid.uuid4()))
        return opened

    async def both() -> list[trace.Pass]:
        return list(await asyncio.gather(one_pass("a"), one_pass("b")))

    a, b = run(both())
    assert a.request_id != b.request_id
    ids = sent(requests_mock)
    assert sorted(ids) == sorted([a.request_id] * 3 + [b.request_id] * 3)  # type: ignore[type-var]
    by_local = {
        r.headers.get(HEADER): r for r in requests_mock.request_history if SERVERS.match(r.url)
    }
    assert set(by_local) == {a.request_id, b.request_id}
    assert len(a.request_ids) == len(b.request_ids) == 3
    assert not set(a.request_ids) & set(b.request_ids)


def test_a_callers_own_global_request_id_is_kept(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    answer_with_ids(requests_mock)
    own = f"req-{uuid.uuid4()}"

    def get() -> Any:
        return cloud.conn.compute.get(f"/servers/{uuid.uuid4()}", headers={HEADER: own})

    async def one_pass() -> None:
        with trace.running("VirtualMachine", "ns", "vm", "uid-1"):
            await asyncio.to_thread(get)

    run(one_pass())
    assert sent(requests_mock) == [own]


def test_instrumenting_twice_wraps_the_session_once(cloud: OpenStackCloud) -> None:
    http = cloud.conn.session.session
    first = http.send
    assert isinstance(first, telemetry.Sender)
    assert telemetry.instrument(cloud.conn) is telemetry.instrument(cloud.conn)
    assert http.send is first
    assert not isinstance(first.send, telemetry.Sender)


def test_the_response_id_is_read_from_either_header() -> None:
    class Answer:
        def __init__(self, headers: dict[str, str]) -> None:
            self.headers = headers

    assert telemetry.response_request_id(Answer({"x-openstack-request-id": "req-1"})) == "req-1"
    assert telemetry.response_request_id(Answer({"x-compute-request-id": "req-2"})) == "req-2"
    assert telemetry.response_request_id(Answer({})) is None

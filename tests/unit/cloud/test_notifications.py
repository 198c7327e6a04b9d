"""Reading the cloud's notifications: which messages poke which watches.

The bus itself (RabbitMQ, Nova publishing) is exercised by
tests/integration/test_notifications.py on the lab.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kumo.cloud.notifications import (
    Notice,
    NoticeBoard,
    NotificationListener,
    broker_urls,
    parse,
    read_transport_url,
    redact,
)

PROJECT = "5f1c0c5e0c4b4c0f9a3d2d8f4e6a7b10"
SERVER = "0d6a3c8e-1111-4222-8333-944455556666"


def versioned(event_type: str, **data: Any) -> bytes:
    """A Nova versioned notification as oslo.messaging's messagingv2 driver sends it."""
    message = {
        "priority": "INFO",
        "event_type": event_type,
        "publisher_id": "nova-compute:lab-compute-1",
        "payload": {
            "nova_object.name": "InstanceActionPayload",
            "nova_object.namespace": "nova",
            "nova_object.version": "1.8",
            "nova_object.data": {"uuid": SERVER, "tenant_id": PROJECT, **data},
        },
        "_context_project_id": "the-admin-project",  # who asked, not whose server it is
    }
    return json.dumps({"oslo.version": "2.0", "oslo.message": json.dumps(message)}).encode()


def test_a_versioned_delete_names_the_servers_project_not_the_callers() -> None:
    assert parse(versioned("instance.delete.end")) == Notice(
        "instance.delete.end", "compute", PROJECT, SERVER
    )


def test_a_legacy_notification_is_understood_with_or_without_the_envelope() -> None:
    legacy = {
        "event_type": "compute.instance.delete.end",
        "payload": {"tenant_id": PROJECT, "instance_id": SERVER, "state": "deleted"},
    }
    expected = Notice("compute.instance.delete.end", "compute", PROJECT, SERVER)
    assert parse(json.dumps(legacy)) == expected
    wrapped = {"oslo.version": "2.0", "oslo.message": json.dumps(legacy)}
    assert parse(json.dumps(wrapped).encode()) == expected


@pytest.mark.parametrize(
    "body",
    [
        versioned("instance.delete.start"),  # the .end follows; the change is not done yet
        json.dumps({"event_type": "volume.delete.end", "payload": {"tenant_id": PROJECT}}),
        json.dumps({"event_type": "instance.update", "payload": {"uuid": SERVER}}),  # no project
        json.dumps({"event_type": "instance.update", "payload": "text"}),
        b"\x00not json",
        json.dumps(["a", "list"]),
        json.dumps({"oslo.version": "2.0", "oslo.message": "{broken"}),
    ],
)
def test_what_is_not_a_notice_about_a_project_is_ignored(body: bytes | str) -> None:
    assert parse(body) is None


class Watch:
    def __init__(self) -> None:
        self.poked: list[str] = []

    def poke(self, service: str) -> None:
        self.poked.append(service)


def test_a_notice_pokes_only_the_watches_of_its_project() -> None:
    board = NoticeBoard()
    ours, also_ours, theirs = Watch(), Watch(), Watch()
    board.add(PROJECT, ours)
    board.add(PROJECT, also_ours)  # two credentials of one project: two watches
    board.add("another-project", theirs)
    assert board.deliver(Notice("instance.delete.end", "compute", PROJECT, SERVER)) == 2
    assert ours.poked == ["compute"] and also_ours.poked == ["compute"]
    assert theirs.poked == []

    board.discard(ours)  # its cloud was closed
    assert board.deliver(Notice("instance.update", "compute", PROJECT)) == 1
    assert ours.poked == ["compute"]
    assert board.deliver(Notice("instance.update", "compute", "nobody-watches-this")) == 0


def test_after_a_reconnect_every_watch_looks_once() -> None:
    board = NoticeBoard()
    a, b = Watch(), Watch()
    board.add("p1", a)
    board.add("p2", b)
    board.poke_all()
    assert a.poked == ["compute"] and b.poked == ["compute"]


def test_an_oslo_transport_url_gives_one_amqp_url_per_host() -> None:
    assert broker_urls("rabbit://nova:s3cret@10.0.0.1:5672,nova:s3cret@10.0.0.2:5672/prod") == [
        "amqp://nova:s3cret@10.0.0.1:5672/prod",
        "amqp://nova:s3cret@10.0.0.2:5672/prod",
    ]
    assert broker_urls("rabbit://u:p@h1:5672,h2:5672/") == [
        "amqp://u:p@h1:5672/",
        "amqp://u:p@h2:5672/",
    ]
    assert broker_urls("rabbit://u:p@h1:5671/?ssl=1") == ["amqps://u:p@h1:5671/"]
    assert broker_urls("amqp://guest:guest@127.0.0.1") == ["amqp://guest:guest@127.0.0.1/"]
    with pytest.raises(ValueError, match="unsupported transport scheme 'kafka'"):
        broker_urls("kafka://h:9092/")


def test_the_password_never_reaches_a_log_line() -> None:
    assert redact("amqp://nova:s3cret@10.0.0.1:5672/prod") == "amqp://nova@10.0.0.1:5672/prod"
    assert "s3cret" not in redact("amqps://nova:s3cret@h/")


def test_the_secret_must_name_a_usable_bus() -> None:
    assert read_transport_url({"transport_url": " rabbit://u:p@h:5672/\n"}, "Secret s") == (
        "rabbit://u:p@h:5672/"
    )
    with pytest.raises(ValueError, match="Secret kumo-system/bus has no key transport_url"):
        read_transport_url({"url": "x"}, "Secret kumo-system/bus")
    with pytest.raises(ValueError, match="unsupported transport scheme"):
        read_transport_url({"transport_url": "http://h/"}, "Secret s")


def test_a_dropped_connection_that_had_worked_starts_the_backoff_afresh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three failed connects back off 2, 4, 8 s; then one that listened drops: 2 s again."""
    import asyncio

    from kumo.cloud import notifications

    outcomes = iter([False, False, False, True, False])
    pauses: list[float] = []

    async def consume(self: NotificationListener, url: str) -> None:
        self._listened = next(outcomes)
        raise ConnectionError("dropped")

    async def sleep(seconds: float) -> None:
        pauses.append(round(seconds))
        if len(pauses) == 5:
            raise asyncio.CancelledError

    monkeypatch.setattr(NotificationListener, "_consume", consume)
    monkeypatch.setattr(notifications.asyncio, "sleep", sleep)
    monkeypatch.setattr(notifications.random, "uniform", lambda a, b: 1.0)
    listener = NotificationListener("amqp://h/", NoticeBoard())
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(listener.run())
    assert pauses == [2, 4, 8, 2, 4]

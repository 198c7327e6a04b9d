"""OpenStack's own notifications as a hint to look now.

A cloud whose operators may read its message bus (the platform team running Kumo often
runs the cloud too) publishes what its services do: Nova sends ``instance.delete.end``
the moment a server is gone. Kumo listens with a queue of its own, bound to the
services' notification exchanges, and turns each notice for a project it watches into
a **poke**: that project's cloud watch lists the service now instead of at its next
interval — so an out-of-band delete is noticed in about a second, not an interval.

A notice is never trusted for what it says, only for *when* to look: the listing
decides what changed. A lost, late, forged or misrouted notice therefore costs at most
one incremental listing and never a wrong state, and the periodic listings stay the
safety net (for a bus that is down, a notice dropped, a cloud without notifications).

Both Nova formats are understood: versioned (``versioned_notifications.*``,
``instance.*``) and the legacy one (``notifications.*``, ``compute.instance.*``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from kumo.cloud.services.compute.watch import ServerWatcher

log = logging.getLogger("kumo.cloud.notifications")

#: Event-type prefixes → the cloud watch's service they concern.
SERVICES: tuple[tuple[str, str], ...] = (
    ("instance.", ServerWatcher.service),
    ("compute.instance.", ServerWatcher.service),
)
#: (exchange, routing key) Kumo's queue is bound to: Nova's versioned and legacy
#: notifications, normal and error priority (a failed build is ``instance.create.error``).
BINDINGS: tuple[tuple[str, str], ...] = (
    ("nova", "versioned_notifications.info"),
    ("nova", "versioned_notifications.error"),
    ("nova", "notifications.info"),
    ("nova", "notifications.error"),
)
#: Kumo's queue drops its oldest notices beyond this (a stalled Kumo must not fill the
#: broker: the notices are hints, the listings catch up).
QUEUE_MAX_LENGTH = 10_000
RETRY_SECONDS = (1.0, 60.0)


@dataclass(frozen=True)
class Notice:
    event_type: str
    service: str
    project_id: str
    resource_id: str | None = None


def parse(body: bytes | str) -> Notice | None:
    """The notice in one message, or None when it is none of Kumo's concern (another
    service, a ``*.start``, no project) or not a notification at all."""
    try:
        message = json.loads(body)
        if isinstance(message, dict) and "oslo.message" in message:  # messaging v2 envelope
            message = json.loads(message["oslo.message"])
    except (TypeError, ValueError):
        return None
    if not isinstance(message, dict):
        return None
    event_type = message.get("event_type")
    if not isinstance(event_type, str) or event_type.endswith(".start"):
        return None
    service = next((s for prefix, s in SERVICES if event_type.startswith(prefix)), None)
    if service is None:
        return None
    payload = message.get("payload")
    if not isinstance(payload, dict):
        return None
    data = payload.get("nova_object.data", payload)  # versioned payloads wrap their fields
    if not isinstance(data, dict):
        return None
    project = data.get("tenant_id") or data.get("project_id")
    if not isinstance(project, str) or not project:
        return None
    resource = data.get("uuid") or data.get("instance_id")
    return Notice(event_type, service, project, resource if isinstance(resource, str) else None)


class Pokeable(Protocol):
    def poke(self, service: str) -> None: ...


class NoticeBoard:
    """Which cloud watches observe which project: a notice pokes those of its project."""

    def __init__(self) -> None:
        self._watches: dict[str, set[Pokeable]] = {}

    def add(self, project_id: str, watch: Pokeable) -> None:
        self._watches.setdefault(project_id, set()).add(watch)

    def discard(self, watch: Pokeable) -> None:
        for project in list(self._watches):
            self._watches[project].discard(watch)
            if not self._watches[project]:
                del self._watches[project]

    def deliver(self, notice: Notice) -> int:
        """Poke the watches of the notice's project; how many there were."""
        watches = self._watches.get(notice.project_id, ())
        for watch in watches:
            watch.poke(notice.service)
        return len(watches)

    def poke_all(self) -> None:
        """Notices may have been missed (the bus was unreachable): every watch looks."""
        services = {service for _, service in SERVICES}
        for watches in self._watches.values():
            for watch in watches:
                for service in services:
                    watch.poke(service)


# -- the bus ---------------------------------------------------------------------------------


def broker_urls(transport_url: str) -> list[str]:
    """AMQP URLs from an oslo.messaging ``transport_url`` (``rabbit://u:p@h1:5672,u:p@h2/vh``
    — each host a URL of its own, tried in turn) or a plain ``amqp(s)://`` URL."""
    parts = urlsplit(transport_url.strip())
    scheme = {"rabbit": "amqp", "amqp": "amqp", "amqps": "amqps"}.get(parts.scheme)
    if scheme is None:
        raise ValueError(f"unsupported transport scheme {parts.scheme!r} (rabbit, amqp, amqps)")
    if "ssl=1" in parts.query or "ssl=true" in parts.query.lower():
        scheme = "amqps"
    vhost = parts.path or "/"
    urls = []
    for host in parts.netloc.split(","):
        if not host:
            continue
        if "@" not in host and "@" in parts.netloc:  # u:p@h1,h2 — later hosts share the login
            host = parts.netloc.split("@", 1)[0] + "@" + host
        urls.append(f"{scheme}://{host}{vhost}")
    if not urls:
        raise ValueError("transport_url names no host")
    return urls


def redact(url: str) -> str:
    """The URL without its password, for logs."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    user = unquote(parts.username) + "@" if parts.username else ""
    return f"{parts.scheme}://{user}{host}:{parts.port or 5672}{parts.path}"


Sink = Callable[[Notice], None]


class NotificationListener:
    """Consumes the bus until closed; reconnects with backoff (jittered), and after each
    (re)connect pokes every watch once — what was published meanwhile is unknown."""

    def __init__(
        self,
        transport_url: str,
        board: NoticeBoard,
        *,
        bindings: Iterable[tuple[str, str]] = BINDINGS,
        on_notice: Sink | None = None,
    ) -> None:
        self._urls = broker_urls(transport_url)
        self._board = board
        self._bindings = tuple(bindings)
        self._on_notice = on_notice
        #: The latest connection got as far as listening (so a later drop starts the
        #: backoff afresh instead of where the failures before it had left it).
        self._listened = False

    async def run(self) -> None:
        failures = 0
        while True:
            for url in self._urls:
                self._listened = False
                try:
                    await self._consume(url)  # returns only by raising
                except asyncio.CancelledError:
                    raise
                except Exception as error:  # the bus is a hint: log, back off, try again
                    failures = 1 if self._listened else failures + 1
                    log.warning(
                        "notifications from %s: %s: %s",
                        redact(url),
                        type(error).__name__,
                        _safe(error, url),
                    )
            low, high = RETRY_SECONDS
            await asyncio.sleep(min(high, low * 2 ** min(failures, 6)) * random.uniform(0.8, 1.2))

    async def _consume(self, url: str) -> None:
        import aio_pika  # only a Kumo told to listen needs it

        connection = await aio_pika.connect(url, timeout=10)
        async with connection:
            channel = await connection.channel()
            queue = await channel.declare_queue(
                exclusive=True,
                auto_delete=True,
                arguments={"x-max-length": QUEUE_MAX_LENGTH, "x-overflow": "drop-head"},
            )
            bound = []
            for exchange_name, routing_key in self._bindings:
                # Passive: the exchange is the service's (Nova declares it at start);
                # declaring it with other flags than Nova's would break Nova.
                exchange = await channel.get_exchange(exchange_name, ensure=True)
                await queue.bind(exchange, routing_key=routing_key)
                bound.append(f"{exchange_name}/{routing_key}")
            log.info("listening to notifications on %s (%s)", redact(url), ", ".join(bound))
            self._listened = True
            self._board.poke_all()
            async with queue.iterator(no_ack=True) as messages:  # ends when the channel closes
                async for message in messages:
                    notice = parse(message.body)
                    if notice is None:
                        continue
                    if self._on_notice is not None:
                        self._on_notice(notice)
                    self._board.deliver(notice)
        raise ConnectionError("the broker closed the connection")


def _safe(error: BaseException, url: str) -> str:
    """An error's text with the URL's password removed (libraries echo the URL)."""
    text = str(error)
    password = urlsplit(url).password
    return text.replace(password, "***") if password else text


def read_transport_url(data: dict[str, Any] | None, origin: str) -> str:
    """The ``transport_url`` key of the notifications Secret; ValueError says what is wrong."""
    if not data or not data.get("transport_url"):
        raise ValueError(f"{origin} has no key transport_url")
    url = str(data["transport_url"]).strip()
    broker_urls(url)  # fail now, not in the background
    return url

"""Service: one OpenStack service as the adapter knows it — one package under
``kumo.cloud.services`` named like its port's module in :mod:`kumo.ports`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kumo.cloud.dry import DryRunBase
from kumo.cloud.watcher import WatchEnv, Watcher
from kumo.ports import Cloud


@dataclass(frozen=True)
class Service:
    #: Its name: the key of its port in :data:`kumo.ports.SERVICES`.
    name: str
    #: Its port (a Protocol of kumo.ports, in parts or not).
    port: type
    #: Its calls on openstacksdk: the adapter's mixin implementing the port.
    calls: type
    #: Its watchers, in the order they are listed at start.
    watchers: tuple[Callable[[Cloud, WatchEnv], Watcher], ...]
    #: Its dry-run half: reads passed through, writes recorded.
    dryrun: type[DryRunBase]

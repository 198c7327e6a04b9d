"""FakePorts: the networking service's ports part (kumo.ports.PortsPort) in memory, with
the manners that matter to Kumo.

* A port is created with its tags (Neutron's bulk create takes them), unless
  ``tags_in_create`` is off (a Neutron without ``tag-ports-during-bulk-creation``: the
  tags then need a second call).
* It gets the next free address of 10.0.0.0/24 on its network, or the one asked for (a
  taken one is refused, 409 as Neutron's ``IpAddressAlreadyAllocated``), and a MAC.
* A server binds a port (:meth:`bind`, what Nova does when it boots on it) and lets it
  go (:meth:`unbind`, when Nova deletes the server). Neutron refuses to delete nothing:
  deleting a bound port tears it from its server, which Kumo must never ask.
* ``fetch_ports`` answers only the ports tagged ``kumo`` (the watch's listing).
"""

from __future__ import annotations

import dataclasses
import itertools

from kumo.cloud import model
from kumo.engine.errors import TerminalError
from kumo.ports import PortsPort

_ids = itertools.count(1)


def new_id(prefix: str) -> str:
    return f"{prefix}-{next(_ids):04d}"


class FakePorts(PortsPort):
    region: str | None = "tokyo1"

    async def project_id(self) -> str | None:
        return "project-tokyo1"

    def __init__(self, tags_in_create: bool = True) -> None:
        self.ports: dict[str, model.Port] = {}
        self.security_group_ids = {"default": "sg-default", "web": "sg-web"}
        self.tags_in_create = tags_in_create
        self.torn: list[str] = []  # bound ports deleted (what Kumo must never do)
        self.calls: list[str] = []
        self._next = itertools.count(10)

    # -- helpers for tests ------------------------------------------------------------------

    def only_port(self) -> model.Port:
        (port,) = self.ports.values()
        return port

    def add_port(
        self,
        name: str,
        *,
        network_id: str = "net-demo",
        tags: list[str] | None = None,
        description: str | None = None,
        device_id: str = "",
        address: str | None = None,
    ) -> model.Port:
        """Out of band: a port someone (or a crashed Kumo, another cluster's) made."""
        port = model.Port(
            new_id("port"),
            network_id,
            device_id,
            fixed_addresses=[address or f"10.0.0.{next(self._next)}"],
            status="ACTIVE" if device_id else "DOWN",
            name=name,
            mac_address="fa:16:3e:00:00:01",
            description=description,
            tags=list(tags or []),
        )
        self.ports[port.id] = port
        return port

    def bind(self, port_id: str, server_id: str) -> None:
        port = self.ports[port_id]
        if port.device_id and port.device_id != server_id:
            raise TerminalError("PortInUse", f"port {port_id} is in use by {port.device_id}")
        self.ports[port_id] = dataclasses.replace(
            port, device_id=server_id, device_owner="compute:nova", status="ACTIVE"
        )

    def unbind(self, server_id: str) -> None:
        for port in list(self.ports.values()):
            if port.device_id == server_id:
                self.ports[port.id] = dataclasses.replace(
                    port, device_id="", device_owner="", status="DOWN"
                )

    def edit_out_of_band(self, port_id: str, **changes: object) -> None:
        self.ports[port_id] = dataclasses.replace(self.ports[port_id], **changes)  # type: ignore[arg-type]

    # -- the adapter's surface ---------------------------------------------------------------

    async def get_port(self, port_id: str) -> model.Port | None:
        self.calls.append("get_port")
        return self.ports.get(port_id)

    async def fetch_port(self, port_id: str) -> model.Port | None:
        self.calls.append("fetch_port")
        return self.ports.get(port_id)

    async def list_owned_ports(self, uid: str) -> list[model.Port]:
        return [p for p in self.ports.values() if model.described_owner(p) == uid]

    async def find_ports_by_name(self, name: str) -> list[model.Port]:
        return [p for p in self.ports.values() if p.name == name]

    async def fetch_ports(self) -> list[model.Port]:
        self.calls.append("fetch_ports")
        return [p for p in self.ports.values() if "kumo" in p.tags]

    async def create_port(
        self,
        *,
        name: str,
        network_id: str,
        address: str | None,
        description: str,
        security_groups: list[str] | None,
        allowed_address_pairs: list[model.AddressPair],
        tags: list[str],
    ) -> model.Port:
        self.calls.append("create_port")
        taken = {a for p in self.ports.values() for a in p.fixed_addresses}
        if address in taken:
            raise TerminalError("CloudBusy", f"IP address {address} already allocated")
        while address is None or address in taken:
            address = f"10.0.0.{next(self._next)}"
        port = model.Port(
            new_id("port"),
            network_id,
            "",
            fixed_addresses=[address],
            status="DOWN",
            name=name,
            mac_address=f"fa:16:3e:00:00:{next(self._next) % 100:02d}",
            description=description,
            tags=list(tags) if self.tags_in_create else [],
            security_groups=tuple(
                security_groups if security_groups is not None else ["sg-default"]
            ),
            allowed_address_pairs=tuple(allowed_address_pairs),
        )
        self.ports[port.id] = port
        if not self.tags_in_create:
            await self.set_port_tags(port.id, tags)
        return self.ports[port.id]

    async def update_port(
        self,
        port_id: str,
        *,
        description: str | None = None,
        security_groups: list[str] | None = None,
        allowed_address_pairs: list[model.AddressPair] | None = None,
    ) -> model.Port:
        self.calls.append("update_port")
        port = self._port(port_id)
        if description is not None:
            port = dataclasses.replace(port, description=description)
        if security_groups is not None:
            port = dataclasses.replace(port, security_groups=tuple(security_groups))
        if allowed_address_pairs is not None:
            port = dataclasses.replace(port, allowed_address_pairs=tuple(allowed_address_pairs))
        self.ports[port_id] = port
        return port

    async def set_port_tags(self, port_id: str, tags: list[str]) -> None:
        self.calls.append("set_port_tags")
        self.ports[port_id] = dataclasses.replace(self._port(port_id), tags=list(tags))

    async def delete_port(self, port_id: str) -> None:
        self.calls.append("delete_port")
        port = self.ports.pop(port_id, None)
        if port is not None and port.device_id:
            self.torn.append(port_id)

    def _port(self, port_id: str) -> model.Port:
        port = self.ports.get(port_id)
        if port is None:
            raise TerminalError("NotFound", f"port {port_id} not found")
        return port

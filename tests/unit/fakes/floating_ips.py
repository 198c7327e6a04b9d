"""An in-memory Neutron (floating IPs and ports) with the manners that matter to Kumo.

* One external network, ``public`` (``net-public``); ``external`` may hold more.
* A floating IP comes without tags (Neutron takes them in a second call) and gets the
  next free address of 203.0.113.0/24. Claiming an address is an admin's right by
  Neutron's default policy: refused (403) unless ``admin`` is set.
* Association needs the port to exist; it fills ``fixed_address`` and ``device_id``
  (Neutron's ``port_details``). Deleting a server's ports (:meth:`drop_device`, what Nova
  does when the server goes) disassociates the floating IPs on them, as Neutron does.
* A deleted floating IP leaves the API at once.
* ``get_load_balancer`` answers from ``lbs`` (a LoadBalancer target's VIP port).
"""

from __future__ import annotations

import itertools
from dataclasses import replace

from kumo.cloud import model
from kumo.cloud.services.networking.floating_ips import pick_external_network
from kumo.engine.errors import TerminalError
from kumo.ports import FloatingIPsPort

_ids = itertools.count(1)

PUBLIC = "net-public"


def new_id(prefix: str) -> str:
    return f"{prefix}-{next(_ids):04d}"


class FakeFloatingIPs(FloatingIPsPort):
    region: str | None = "tokyo1"

    async def project_id(self) -> str | None:
        return "project-tokyo1"

    def __init__(self, admin: bool = False) -> None:
        self.external = {PUBLIC: "public"}
        self.fips: dict[str, model.FloatingIP] = {}
        self.ports: dict[str, model.Port] = {}
        self.lbs: dict[str, model.LoadBalancer] = {}
        self.admin = admin
        self.calls: list[str] = []
        self._next = itertools.count(10)

    # -- helpers for tests ----------------------------------------------------------------

    def only(self) -> model.FloatingIP:
        (fip,) = self.fips.values()
        return fip

    def add_port(self, device_id: str, *addresses: str, network_id: str = "net-demo") -> str:
        """A port Nova made for a server (or Octavia for a VIP)."""
        port = model.Port(new_id("port"), network_id, device_id, "compute:nova", list(addresses))
        self.ports[port.id] = port
        return port.id

    def drop_device(self, device_id: str) -> None:
        """The server is gone: Neutron deletes its ports and frees their floating IPs."""
        for port_id in [p.id for p in self.ports.values() if p.device_id == device_id]:
            del self.ports[port_id]
            for fip in list(self.fips.values()):
                if fip.port_id == port_id:
                    self.fips[fip.id] = _held(fip)

    def add_fip(
        self, address: str, tags: list[str] | None = None, description: str | None = None
    ) -> model.FloatingIP:
        """Out of band: a floating IP someone (or a crashed Kumo) allocated."""
        fip = model.FloatingIP(
            new_id("fip"), address, PUBLIC, "DOWN", tags=list(tags or []), description=description
        )
        self.fips[fip.id] = fip
        return fip

    def disassociate_out_of_band(self, fip_id: str) -> None:
        self.fips[fip_id] = _held(self.fips[fip_id])

    def delete_out_of_band(self, fip_id: str) -> None:
        del self.fips[fip_id]

    # -- the adapter's surface ------------------------------------------------------------

    async def floating_ip_network_id(self, ref: str | None, field: str = "spec.network") -> str:
        return pick_external_network(list(self.external.items()), ref, field)

    async def get_floating_ip(self, fip_id: str) -> model.FloatingIP | None:
        self.calls.append("get_floating_ip")
        return self.fips.get(fip_id)

    async def list_owned_floating_ips(self, uid: str) -> list[model.FloatingIP]:
        return [f for f in self.fips.values() if model.floating_ip_owner(f) == uid]

    async def find_floating_ips_by_address(self, address: str) -> list[model.FloatingIP]:
        return [f for f in self.fips.values() if f.address == address]

    async def fetch_floating_ips(self) -> list[model.FloatingIP]:
        self.calls.append("fetch_floating_ips")
        return list(self.fips.values())

    async def list_ports_of_device(self, device_id: str) -> list[model.Port]:
        self.calls.append("list_ports_of_device")
        return [p for p in self.ports.values() if p.device_id == device_id]

    async def create_floating_ip(
        self,
        *,
        network_id: str,
        address: str | None,
        description: str,
        tags: list[str],
    ) -> model.FloatingIP:
        self.calls.append("create_floating_ip")
        if address and not self.admin:
            raise TerminalError(
                "CloudForbidden",
                "create floating IP: rule:create_floatingip:floating_ip_address is disallowed "
                "by policy",
                field="spec.address",
            )
        if network_id not in self.external:
            raise TerminalError("CloudRejected", f"network {network_id} is not external")
        taken = {f.address for f in self.fips.values()}
        if address in taken:
            raise TerminalError("CloudBusy", f"IP address {address} already allocated")
        while address is None or address in taken:
            address = f"203.0.113.{next(self._next)}"
        fip = model.FloatingIP(new_id("fip"), address, network_id, "DOWN", description=description)
        self.fips[fip.id] = fip
        await self.set_floating_ip_tags(fip.id, tags)
        return self.fips[fip.id]

    async def associate_floating_ip(
        self, fip_id: str, port_id: str | None, fixed_address: str | None
    ) -> model.FloatingIP:
        self.calls.append("associate_floating_ip" if port_id else "disassociate_floating_ip")
        fip = self._fip(fip_id)
        if port_id is None:
            self.fips[fip_id] = _held(fip)
            return self.fips[fip_id]
        port = self.ports.get(port_id)
        if port is None:
            raise TerminalError("NotFound", f"associate floating IP: port {port_id} not found")
        fixed = fixed_address or port.fixed_addresses[0]
        self.fips[fip_id] = replace(
            fip, port_id=port_id, fixed_address=fixed, device_id=port.device_id, status="ACTIVE"
        )
        return self.fips[fip_id]

    async def update_floating_ip(self, fip_id: str, *, description: str) -> model.FloatingIP:
        self.calls.append("update_floating_ip")
        self.fips[fip_id] = replace(self._fip(fip_id), description=description)
        return self.fips[fip_id]

    async def set_floating_ip_tags(self, fip_id: str, tags: list[str]) -> None:
        self.calls.append("set_floating_ip_tags")
        self.fips[fip_id] = replace(self._fip(fip_id), tags=list(tags))

    async def delete_floating_ip(self, fip_id: str) -> None:
        self.calls.append("delete_floating_ip")
        self.fips.pop(fip_id, None)

    async def get_load_balancer(self, lb_id: str) -> model.LoadBalancer | None:
        return self.lbs.get(lb_id)

    def _fip(self, fip_id: str) -> model.FloatingIP:
        fip = self.fips.get(fip_id)
        if fip is None:
            raise TerminalError("NotFound", f"floating IP {fip_id} not found")
        return fip


def _held(fip: model.FloatingIP) -> model.FloatingIP:
    return replace(fip, port_id=None, fixed_address=None, device_id=None, status="DOWN")

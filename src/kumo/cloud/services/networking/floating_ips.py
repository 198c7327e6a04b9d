"""Neutron calls: floating IPs, and the port lookups an association needs.

Plain REST on the network proxy (``/v2.0`` is the proxy's). Ownership: Neutron (Zed)
takes a floating IP's tags only after the create (``PUT /floatingips/{id}/tags``; only
ports accept tags in their POST), so the create writes Kumo's marker word
``kumo-owner=<uid>`` into the description and then sets the tags ``kumo`` and
``kumo-owner=<uid>``: a floating IP whose tags never came (a crash between the calls)
still carries the marker (:func:`kumo.ports.model.floating_ip_owner`); the failpoint
``after-floating-ip-create`` sits between the two calls.

Reads come from the cloud watch's listing of the project's floating IPs
(:class:`~kumo.cloud.services.networking.watch.FloatingIPWatcher`) once it has listed; ports are read from
the API, and only when an association must be made.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from openstack import exceptions as os_exc

from kumo.cloud import model
from kumo.cloud.cache import GONE
from kumo.cloud.services.networking.rest import NeutronBase
from kumo.cloud.services.networking.watch import FloatingIPWatcher
from kumo.engine.errors import TerminalError
from kumo.engine.failpoints import failpoint


class FloatingIPsCalls(NeutronBase):
    # -- the external network ----------------------------------------------------------------

    async def floating_ip_network_id(self, ref: str | None, field: str = "spec.network") -> str:
        """The external network (``router:external``) ``ref`` names, by name or ID; without
        ``ref`` the cloud's only one (several: the spec must name one)."""

        async def load() -> str:
            found = await self._call(
                "list external networks",
                self._neutron_list,
                "/networks",
                "networks",
                {"router:external": True},
                field=field,
            )
            networks = [(str(n["id"]), str(n.get("name") or "")) for n in found]
            return pick_external_network(networks, ref, field)

        return await self._names.resolve(("external network", ref or ""), load, field)

    # -- floating IPs ----------------------------------------------------------------------

    async def get_floating_ip(self, fip_id: str) -> model.FloatingIP | None:
        hit = self.watch.of(FloatingIPWatcher).floating_ips.lookup(fip_id)
        if isinstance(hit, model.FloatingIP):
            return hit
        if hit is GONE:
            return None
        found = await self._get("get floating IP", self._neutron, "get", f"/floatingips/{fip_id}")
        return _floating_ip(found["floatingip"]) if found is not None else None

    async def list_owned_floating_ips(self, uid: str) -> list[model.FloatingIP]:
        """Floating IPs carrying ``uid``'s marker (tags, or the description's word)."""
        cache = self.watch.of(FloatingIPWatcher).floating_ips
        if not cache.answers_for(uid):
            await self._relist(cache, uid, self.fetch_floating_ips)
        return cache.owned_by(uid)

    async def find_floating_ips_by_address(self, address: str) -> list[model.FloatingIP]:
        """For ``import: {name: <address>}``: a floating IP's address is its name."""
        found = await self._call(
            "list floating IPs",
            self._neutron_list,
            "/floatingips",
            "floatingips",
            {"floating_ip_address": address},
            field="spec.import.name",
        )
        return [_floating_ip(x) for x in found]

    async def fetch_floating_ips(self) -> list[model.FloatingIP]:
        """Every floating IP of the project, in one listing (the watcher's)."""

        def listing() -> list[Any]:
            params = {"project_id": self.conn.current_project_id}
            return self._neutron_list("/floatingips", "floatingips", params)

        found = await self._call("list floating IPs", listing)
        return [_floating_ip(x) for x in found]

    async def list_ports_of_device(self, device_id: str) -> list[model.Port]:
        found = await self._call(
            "list ports", self._neutron_list, "/ports", "ports", {"device_id": device_id}
        )
        return [port_from(x) for x in found]

    async def create_floating_ip(
        self,
        *,
        network_id: str,
        address: str | None,
        description: str,
        tags: list[str],
    ) -> model.FloatingIP:
        """Allocate an address (``address``: that one — Neutron's default policy lets only
        admins choose) with the marker in the description, then tag it."""
        body: dict[str, Any] = {"floating_network_id": network_id, "description": description}
        if address:
            body["floating_ip_address"] = address
        created = await self._create(
            "create floating IP",
            self._neutron,
            "post",
            "/floatingips",
            resolved=[network_id],
            in_doubt=(self.watch.of(FloatingIPWatcher).floating_ips, model.owner_of(tags) or ""),
            json={"floatingip": body},
            field="spec.address" if address else "spec.network",
        )
        fip = _floating_ip(created["floatingip"])
        self.watch.of(FloatingIPWatcher).floating_ips.put(fip)  # marked by its description already
        failpoint("after-floating-ip-create")  # crash tests: adopted by its description
        await self.set_floating_ip_tags(fip.id, tags)
        return dataclasses.replace(fip, tags=list(tags))

    async def associate_floating_ip(
        self, fip_id: str, port_id: str | None, fixed_address: str | None
    ) -> model.FloatingIP:
        body: dict[str, Any] = {"port_id": port_id}
        if port_id and fixed_address:
            body["fixed_ip_address"] = fixed_address
        updated = await self._call(
            "associate floating IP" if port_id else "disassociate floating IP",
            self._neutron,
            "put",
            f"/floatingips/{fip_id}",
            json={"floatingip": body},
        )
        return self._fip_changed(_floating_ip(updated["floatingip"]))

    async def update_floating_ip(self, fip_id: str, *, description: str) -> model.FloatingIP:
        updated = await self._call(
            "update floating IP",
            self._neutron,
            "put",
            f"/floatingips/{fip_id}",
            json={"floatingip": {"description": description}},
            field="spec.description",
        )
        return self._fip_changed(_floating_ip(updated["floatingip"]))

    async def set_floating_ip_tags(self, fip_id: str, tags: list[str]) -> None:
        await self._call(
            "tag floating IP",
            self._neutron,
            "put",
            f"/floatingips/{fip_id}/tags",
            json={"tags": list(tags)},
        )
        self.watch.of(FloatingIPWatcher).floating_ips.update(
            fip_id, lambda f: dataclasses.replace(f, tags=list(tags))
        )
        self.watch.nudge(FloatingIPWatcher.service)

    async def delete_floating_ip(self, fip_id: str) -> None:
        """Release the address; one already gone is fine."""
        try:
            await self._call(
                "delete floating IP", self._neutron, "delete", f"/floatingips/{fip_id}"
            )
        except TerminalError as error:
            if not isinstance(error.__cause__, os_exc.NotFoundException):
                raise
        self.watch.of(FloatingIPWatcher).floating_ips.forget(fip_id)
        self.watch.nudge(FloatingIPWatcher.service)

    def _fip_changed(self, fip: model.FloatingIP) -> model.FloatingIP:
        """Kumo's write returned it: the freshest view until the next listing."""
        self.watch.of(FloatingIPWatcher).floating_ips.put(fip)
        self.watch.nudge(FloatingIPWatcher.service)
        return fip


def pick_external_network(networks: list[tuple[str, str]], ref: str | None, field: str) -> str:
    """The ID of the external network ``ref`` names among ``networks`` ((id, name) of
    every ``router:external`` network), or of the only one when ``ref`` is None."""
    if ref:
        by_id = [i for i, _ in networks if i == ref]
        by_name = [i for i, name in networks if name == ref]
        if by_id or len(by_name) == 1:
            return (by_id or by_name)[0]
        if by_name:
            raise TerminalError(
                "AmbiguousName",
                f"{len(by_name)} external networks are named {ref!r}: name one by ID",
                field=field,
            )
        raise TerminalError(
            "NetworkNotFound",
            f"no external network {ref!r} (a floating IP comes from a network with "
            "router:external)",
            field=field,
        )
    if len(networks) == 1:
        return networks[0][0]
    if not networks:
        raise TerminalError("NetworkNotFound", "the cloud has no external network", field=field)
    names = ", ".join(sorted(name or i for i, name in networks))
    raise TerminalError(
        "InvalidSpec",
        f"required: the cloud has {len(networks)} external networks ({names}); name one",
        field=field,
    )


def _floating_ip(x: dict[str, Any]) -> model.FloatingIP:
    details = x.get("port_details") or {}
    return model.FloatingIP(
        id=x["id"],
        address=x.get("floating_ip_address") or "",
        network_id=x.get("floating_network_id") or "",
        status=x.get("status") or "",
        port_id=x.get("port_id"),
        fixed_address=x.get("fixed_ip_address"),
        device_id=details.get("device_id") if x.get("port_id") else None,
        tags=list(x.get("tags") or []),
        description=x.get("description"),
    )


def port_from(x: dict[str, Any]) -> model.Port:
    """A Neutron port as Kumo reads it (the floating IPs', the networks' and the ports'
    calls)."""
    fixed = x.get("fixed_ips") or []
    return model.Port(
        id=x["id"],
        network_id=x.get("network_id") or "",
        device_id=x.get("device_id") or "",
        device_owner=x.get("device_owner") or "",
        fixed_addresses=[ip["ip_address"] for ip in fixed if ip.get("ip_address")],
        status=x.get("status") or "",
        subnet_ids=tuple(sorted({ip["subnet_id"] for ip in fixed if ip.get("subnet_id")})),
        name=x.get("name") or "",
        mac_address=x.get("mac_address") or "",
        description=x.get("description"),
        tags=list(x.get("tags") or []),
        security_groups=tuple(x.get("security_groups") or ()),
        allowed_address_pairs=tuple(
            model.AddressPair(p["ip_address"], p.get("mac_address"))
            for p in x.get("allowed_address_pairs") or ()
            if p.get("ip_address")
        ),
    )

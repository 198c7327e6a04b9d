"""Neutron calls: the ports of Port objects, and a server's own port's address pairs.

Plain REST on the network proxy (``/v2.0`` is the proxy's). Ownership: unlike Neutron's
other resources, a port takes its tags in the create itself when created in bulk
(``tag-ports-during-bulk-creation``), so :meth:`PortsCalls.create_port` is one bulk
``POST /ports`` carrying the tags ``kumo``, ``kumo-owner=<uid>``, ``kumo-cluster=…`` and
the marker word at the end of the description; a tag call follows only when Neutron's
answer lacks the tags (a Neutron without that extension).

Reads come from the cloud watch's listing of Kumo's ports (``tags=kumo``,
:class:`~kumo.cloud.services.networking.watch.PortWatcher`) once it has listed. That
listing runs only once a Port's call asked for it (:meth:`PortWatcher.want`): a project
without Port objects pays no call for it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from openstack import exceptions as os_exc

from kumo.cloud import model
from kumo.cloud.services.networking.floating_ips import port_from
from kumo.cloud.services.networking.rest import NeutronBase
from kumo.cloud.services.networking.watch import PortWatcher
from kumo.engine.errors import TerminalError
from kumo.engine.failpoints import failpoint


class PortsCalls(NeutronBase):
    def _ports(self) -> PortWatcher:
        """The ports' watcher, asked to list: a Port object is here."""
        watcher = self.watch.of(PortWatcher)
        if watcher.want():
            self.watch.nudge(PortWatcher.service)
        return watcher

    async def get_port(self, port_id: str) -> model.Port | None:
        hit = self._ports().ports.lookup(port_id)
        if isinstance(hit, model.Port):
            return hit
        # GONE too: the watch lists Kumo's marked ports only, so one dropped from its
        # listing may live on unmarked (released by Orphan, to be imported by ID).
        return await self.fetch_port(port_id)

    async def fetch_port(self, port_id: str) -> model.Port | None:
        found = await self._get("get port", self._neutron, "get", f"/ports/{port_id}")
        return port_from(found["port"]) if found is not None else None

    async def list_owned_ports(self, uid: str) -> list[model.Port]:
        """Ports carrying ``uid``'s marker (tags, or the description's word)."""
        cache = self._ports().ports
        if not cache.answers_for(uid):
            found = await self._relist(cache, uid, self.fetch_ports)
            return [p for p in found if model.described_owner(p) == uid]
        return cache.owned_by(uid)

    async def find_ports_by_name(self, name: str) -> list[model.Port]:
        found = await self._call(
            "list ports",
            self._neutron_project,
            "/ports",
            "ports",
            {"name": name},
            field="spec.import.name",
        )
        return [port_from(x) for x in found]

    async def fetch_ports(self) -> list[model.Port]:
        """Kumo's ports of the project, in one listing (every page): the watcher's."""
        found = await self._call(
            "list ports", self._neutron_project, "/ports", "ports", {"tags": "kumo"}
        )
        return [port_from(x) for x in found]

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
        body: dict[str, Any] = {
            "name": name,
            "network_id": network_id,
            "description": description,
            "tags": list(tags),
        }
        if address:
            body["fixed_ips"] = [{"ip_address": address}]
        if security_groups is not None:
            body["security_groups"] = list(security_groups)
        if allowed_address_pairs:
            body["allowed_address_pairs"] = _pairs(allowed_address_pairs)
        watcher = self._ports()
        created = await self._create(
            "create port",
            self._neutron,
            "post",
            "/ports",
            resolved=[network_id],
            in_doubt=(watcher.ports, model.owner_of(tags) or ""),
            json={"ports": [body]},  # bulk: the only create that takes tags
            field="spec.address" if address else "spec.network",
        )
        port = port_from(created["ports"][0])
        watcher.ports.put(port)  # marked by its description at least
        if not set(tags) <= set(port.tags):  # a Neutron without tags in bulk creates
            failpoint("after-port-create")  # crash tests: marked by its description only
            await self.set_port_tags(port.id, tags)
            port = dataclasses.replace(port, tags=list(tags))
        self.watch.nudge(PortWatcher.service)
        return port

    async def update_port(
        self,
        port_id: str,
        *,
        description: str | None = None,
        security_groups: list[str] | None = None,
        allowed_address_pairs: list[model.AddressPair] | None = None,
    ) -> model.Port:
        body: dict[str, Any] = {}
        if description is not None:
            body["description"] = description
        if security_groups is not None:
            body["security_groups"] = list(security_groups)
        if allowed_address_pairs is not None:
            body["allowed_address_pairs"] = _pairs(allowed_address_pairs)
        field = "spec.allowedAddressPairs" if allowed_address_pairs is not None else "spec"
        updated = await self._call(
            "update port",
            self._neutron,
            "put",
            f"/ports/{port_id}",
            json={"port": body},
            field=field,
        )
        port = port_from(updated["port"])
        if model.described_marker(port) is not None:  # a server's own port is not watched
            self.watch.of(PortWatcher).ports.put(port)
            self.watch.nudge(PortWatcher.service)
        return port

    async def set_port_tags(self, port_id: str, tags: list[str]) -> None:
        await self._call(
            "tag port", self._neutron, "put", f"/ports/{port_id}/tags", json={"tags": list(tags)}
        )
        self.watch.of(PortWatcher).ports.update(
            port_id, lambda p: dataclasses.replace(p, tags=list(tags))
        )
        self.watch.nudge(PortWatcher.service)

    async def delete_port(self, port_id: str) -> None:
        """Delete the port; one already gone is fine."""
        try:
            await self._call("delete port", self._neutron, "delete", f"/ports/{port_id}")
        except TerminalError as error:
            if not isinstance(error.__cause__, os_exc.NotFoundException):
                raise
        self.watch.of(PortWatcher).ports.forget(port_id)
        self.watch.nudge(PortWatcher.service)


def _pairs(pairs: list[model.AddressPair]) -> list[dict[str, str]]:
    """Neutron's ``allowed_address_pairs``: the MAC only where one is given."""
    return [
        {"ip_address": p.ip_address, **({"mac_address": p.mac_address} if p.mac_address else {})}
        for p in pairs
    ]

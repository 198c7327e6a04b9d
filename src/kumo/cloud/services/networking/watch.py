"""Neutron's watchers, one per part of the networking service.

- **Security groups**: one listing of the project's groups without their rules, per
  interval, keeping Kumo's (tag ``kumo``, or the description's marker word: Neutron takes
  tags only after a create, so a group whose tags never came is still seen by its
  marker); Neutron bumps a group's ``revision_number`` whenever a rule of it is created
  or deleted, so only a group whose revision moved has its rules read again.
- **Floating IPs**: one listing of the project's floating IPs per interval (not filtered
  by tag: Neutron takes a floating IP's tags only after its create, so one whose tags are
  missing — a crash between the two calls, a ``kumo`` tag removed by hand — is still seen
  by its marker). Each carries ``port_details``, so whether it still points at its
  target's server is read from this one list; ports are looked up only to repair.
- **Networks and routers**: see :class:`NetworkWatcher`.
- **Ports** of Port objects: see :class:`PortWatcher`.
"""

from __future__ import annotations

import dataclasses

from kumo.cloud import model
from kumo.cloud.cache import ResourceCache
from kumo.cloud.watcher import Changes, ListingWatcher, WatchEnv, Watcher
from kumo.engine import sweep
from kumo.ports import FloatingIPsPort, NetworksPort, PortsPort, SecurityGroupsPort


class SecurityGroupWatcher(Watcher):
    """Neutron: Kumo's security groups without their rules (one call), then the rules
    of each group whose ``revision_number`` moved — so while nothing changes, the cost
    is one call per interval whatever the number of groups and rules."""

    service = "networking.security-groups"
    api, resource = "network", "security_groups"

    def __init__(self, cloud: SecurityGroupsPort, env: WatchEnv) -> None:
        super().__init__(env)
        self.cloud = cloud
        self.security_groups: ResourceCache[model.SecurityGroup] = ResourceCache(
            "security groups", lambda g: g.id, model.described_owner
        )
        self.caches = self.singles = (self.security_groups,)
        self.marks = (("security_group", self.security_groups, model.described_marker),)

    async def delete_marked(self, resource: model.Marked) -> None:
        await self.cloud.delete_security_group(resource.id)

    async def refresh(self, full: bool) -> Changes:
        cache = self.security_groups
        stats = self.env.stats
        token = cache.begin()
        stats.count("security-groups")
        listed = await self.cloud.security_group_versions()
        groups = []
        for group in listed:
            cached = cache.lookup(group.id)
            fresh = isinstance(cached, model.SecurityGroup) and cached.revision == group.revision
            if not full and isinstance(cached, model.SecurityGroup) and fresh:
                groups.append(dataclasses.replace(group, rules=cached.rules))
                continue
            stats.count("security-group-rules")
            rules = await self.cloud.fetch_security_group_rules(group.id)
            groups.append(dataclasses.replace(group, rules=tuple(rules)))
        return [(cache, c) for c in cache.replace(token, groups)]


class FloatingIPWatcher(ListingWatcher[model.FloatingIP]):
    """Neutron floating IPs: the project's, in one listing per interval (see the module
    docstring for why it is not filtered by tag). A disassociation or a deletion made
    out of band, and a target's port going with its server, show in the next listing."""

    service = "networking.floating-ips"
    api, resource = "network", "floatingips"
    counted = "floating-ips"

    def __init__(self, cloud: FloatingIPsPort, env: WatchEnv) -> None:
        self.cloud = cloud
        self.floating_ips: ResourceCache[model.FloatingIP] = ResourceCache(
            "floating ips", lambda f: f.id, model.floating_ip_owner
        )
        mark = ("floatingip", model.floating_ip_marker)
        super().__init__(env, self.floating_ips, mark, lambda: self.cloud.fetch_floating_ips())

    async def delete_marked(self, resource: model.Marked) -> None:
        await self.cloud.delete_floating_ip(resource.id)


class NetworkWatcher(Watcher):
    """Neutron networks and routers: Kumo's networks and their subnets, Kumo's routers
    and their interface ports — at most four calls per interval whatever the number of
    networks, subnets and routers (one while the project has no Kumo network: routers
    are listed then only by the full relist), and no per-object GET. Kumo's are the
    project's marked by tag or, before their tags came (a lost create answer, a crash
    between the create and the tag call), by the description's marker word. A subnet or
    an interface removed by hand, or a router's gateway changed, shows in the next
    listing."""

    service = "networking.networks"
    api, resource = "network", "networks"

    def __init__(self, cloud: NetworksPort, env: WatchEnv) -> None:
        super().__init__(env)
        self.cloud = cloud
        self.networks: ResourceCache[model.Network] = ResourceCache(
            "networks", lambda n: n.id, model.described_owner
        )
        self.routers: ResourceCache[model.Router] = ResourceCache(
            "routers", lambda r: r.id, model.described_owner
        )
        self.caches = self.singles = (self.networks, self.routers)
        # Routers first: the orphan sweep deletes a leaked router before its network.
        self.marks = (
            ("router", self.routers, model.described_marker),
            ("network", self.networks, model.described_marker),
        )

    async def delete_marked(self, resource: model.Marked) -> None:
        if resource.kind != "router":
            await self.cloud.delete_network(resource.id)
            return
        router = await self.cloud.get_router(resource.id)
        if router is None:
            return
        # Only the subnets of its own network (the same owner's, this cluster's current
        # marker) are Kumo's to detach: a subnet of another object's network, another
        # cluster's, a legacy-marked one or a user's stays, and so does the router.
        subnet_owners = {
            subnet.id: marker.uid if marker is not None and marker.current else None
            for network in self.networks.live()
            for marker in (model.marker_of(network.tags),)
            for subnet in network.subnets
        }
        own, foreign = sweep.router_interfaces(resource.owner, router.interfaces, subnet_owners)
        for subnet_id in own:
            await self.cloud.remove_router_interface(resource.id, subnet_id)
        if foreign:
            raise sweep.OrphanKept(
                f"router {resource.id} keeps an interface on subnet(s) {', '.join(foreign)} "
                "that are not on its own network: those were not detached and the router "
                "is kept (detach them, then the next sweep deletes it)"
            )
        await self.cloud.delete_router(resource.id)

    async def refresh(self, full: bool) -> Changes:
        networks, changes = await self.listed(
            self.networks, "networks-list", self.cloud.fetch_networks
        )
        # A Kumo router serves a Kumo network: with none listed (and none cached) only
        # the full relist looks, so a project without Networks pays one call per interval.
        if full or networks or self.routers.items() or not self.routers.synced:
            _, routed = await self.listed(self.routers, "routers-list", self.cloud.fetch_routers)
            changes += routed
        return changes

    def transitional(self) -> bool:
        return any(n.status not in ("ACTIVE", "DOWN") for n in self.networks.items())


class PortWatcher(ListingWatcher[model.Port]):
    """Neutron ports of Port objects: Kumo's (tag ``kumo``; a Port's port takes its tags
    in its create), one listing per interval whatever their number — and none at all
    while the project has no Port: neither the startup listing nor the relist lists
    until a Port's call asks (:meth:`want`), and the listing stops again once it finds no
    port of Kumo's and no Port has asked since the listing before. (A port leaked then,
    its Port object gone, is reported by the orphan sweep once a Port asks again.) A
    port bound to a server is never swept: the server would lose its address."""

    service = "networking.ports"
    api, resource = "network", "ports"
    counted = "ports"

    def __init__(self, cloud: PortsPort, env: WatchEnv) -> None:
        self.cloud = cloud
        self.ports: ResourceCache[model.Port] = ResourceCache(
            "ports", lambda p: p.id, model.described_owner
        )
        mark = ("port", model.described_marker)
        super().__init__(env, self.ports, mark, lambda: self.cloud.fetch_ports())
        self.listing = False
        self._asked = 0

    def want(self) -> bool:
        """A Port's call: list from now on. True when the listing was off until now."""
        self._asked += 1
        started = not self.listing
        self.listing = True
        return started

    def is_in_use(self, resource: model.Port) -> bool:
        return bool(resource.device_id)

    async def delete_marked(self, resource: model.Marked) -> None:
        port = await self.cloud.get_port(resource.id)
        if port is not None and port.device_id:  # bound since the sweep's look: kept
            raise sweep.OrphanKept(f"port {resource.id} is bound to server {port.device_id}")
        await self.cloud.delete_port(resource.id)

    async def refresh(self, full: bool) -> Changes:
        if not self.listing:
            return []
        asked, self._asked = self._asked, 0
        changes = await super().refresh(full)
        if not asked and not self.ports.items():
            # No Port asked since the last listing and Kumo has no port: stop listing.
            # The cache no longer answers: a Port's next call reads the API and asks.
            self.listing = False
            self.ports.synced = False
        return changes

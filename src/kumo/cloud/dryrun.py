"""DryRunCloud: the cloud adapter with its writes recorded instead of made.

Reads (what :mod:`kumo.ports` declares ``@read``) go to the real adapter; every write
(declared ``@write``) is defined here and only appends an
:class:`~kumo.engine.dryrun.Action` — with the fields it would change, old (read from
the adapter) → new — and returns what the actuator needs to carry on (a new server as
``BUILD`` with the ID ``(new)``). Any other attribute is refused, so a write added to
the adapter and forgotten here fails loudly instead of being made
(``tests/unit/cloud/test_dryrun.py`` checks that every write of the adapter is here).

Who uses it: the engine's dry passes (``managementPolicy: Observe``, ``driftPolicy:
Report``) and ``kumo plan``, through ``Engine(dry_run=DryRunCloud)``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kumo import ports
from kumo.cloud import model
from kumo.engine.dryrun import Action, Change

NEW_ID = "(new)"

#: What passes through to the real adapter: the ports' declared reads (``@read`` in
#: :mod:`kumo.ports`) and the adapter's watch, which only reads.
READS = ports.READS | {"watch"}


def _is_read(name: str) -> bool:
    return name in READS


class DryRunCloud:
    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.actions: list[Action] = []

    def __getattr__(self, name: str) -> Any:
        if not _is_read(name):
            raise AttributeError(f"DryRunCloud does not know {name!r}: not a read, not a write")
        return getattr(self._inner, name)

    def _record(
        self, verb: str, noun: str, target: str = "", *changes: Change, note: str = ""
    ) -> None:
        self.actions.append(Action(verb, noun, target, tuple(changes), note))

    # -- Nova --------------------------------------------------------------------------

    async def admit_build(self, uid: str) -> bool:
        """A plan shows the create whatever the cloud is building now (and takes no turn)."""
        return True

    async def withdraw_build(self, uid: str) -> None:
        """Nothing to give up: a plan never took a turn."""

    async def create_server(self, **attrs: Any) -> model.Server:
        shown = (
            "image_id",
            "flavor_id",
            "network_ids",
            "availability_zone",
            "key_name",
            "security_groups",
            "server_group_id",
            "description",
        )
        changes = [Change(f"spec.{k}", None, attrs.get(k)) for k in shown if attrs.get(k)]
        if attrs.get("user_data"):
            changes.append(Change("spec.initScript", None, f"{len(attrs['user_data'])} bytes"))
        self._record("create", "server", attrs["name"], *changes)
        return model.Server(
            id=NEW_ID,
            name=attrs["name"],
            status="BUILD",
            tags=list(attrs.get("tags") or []),
            metadata=dict(attrs.get("metadata") or {}),
            description=attrs.get("description"),
        )

    async def update_server(self, server_id: str, *, description: str | None) -> None:
        old = await self._inner.get_server(server_id)
        before = old.description if old is not None else None
        self._record("update", "server", server_id, Change("spec.description", before, description))

    async def set_server_metadata(
        self, server_id: str, metadata: dict[str, str], remove: list[str]
    ) -> None:
        old = await self._inner.get_server(server_id)
        have = old.metadata if old is not None else {}
        changes = [Change(_metadata_field(k), have.get(k), v) for k, v in sorted(metadata.items())]
        changes += [Change(_metadata_field(k), have.get(k), None) for k in sorted(remove)]
        self._record("update", "server", server_id, *changes)

    async def set_server_tags(self, server_id: str, tags: list[str]) -> None:
        old = await self._inner.get_server(server_id)
        before = old.tags if old is not None else []
        self._record("update", "server", server_id, Change("tags", before, tags))

    async def delete_server(self, server_id: str) -> None:
        self._record("delete", "server", server_id)

    async def add_server_security_group(self, server_id: str, group: str) -> None:
        self._record(
            "update", "server", server_id, Change("spec.securityGroups", None, f"add {group}")
        )

    async def remove_server_security_group(self, server_id: str, group: str) -> None:
        self._record("update", "server", server_id, Change("spec.securityGroups", group, "remove"))

    async def create_server_group(self, name: str, policy: str) -> model.ServerGroup:
        self._record("create", "server group", name, Change("spec.haPolicy", None, policy))
        return model.ServerGroup(id=NEW_ID, name=name, policy=policy)

    async def delete_server_group(self, group_id: str) -> None:
        self._record("delete", "server group", group_id)

    # -- Octavia -----------------------------------------------------------------------

    async def create_load_balancer(self, **attrs: Any) -> model.LoadBalancer:
        shown = {
            "vip_network_id": "spec.vipType",
            "availability_zone": "spec.zone",
            "flavor_id": "spec.serviceType",
            "description": "spec.description",
        }
        changes = [Change(f, None, attrs.get(k)) for k, f in shown.items() if attrs.get(k)]
        self._record("create", "load balancer", attrs["name"], *changes)
        return model.LoadBalancer(
            id=NEW_ID,
            name=attrs["name"],
            provisioning_status="PENDING_CREATE",
            operating_status="OFFLINE",
            vip_address=None,
            tags=list(attrs.get("tags") or []),
            description=attrs.get("description"),
        )

    async def update_load_balancer(self, lb_id: str, *, description: str | None) -> None:
        old = await self._inner.get_load_balancer(lb_id)
        before = old.description if old is not None else None
        self._record(
            "update", "load balancer", lb_id, Change("spec.description", before, description)
        )

    async def set_load_balancer_tags(self, lb_id: str, tags: list[str]) -> None:
        old = await self._inner.get_load_balancer(lb_id)
        self._record(
            "update", "load balancer", lb_id, Change("tags", old.tags if old else [], tags)
        )

    async def delete_load_balancer(self, lb_id: str) -> None:
        self._record("delete", "load balancer", lb_id, note="with its listeners, pools and members")

    async def create_listener(
        self, lb_id: str, *, name: str, protocol: str, port: int, tags: list[str]
    ) -> str:
        self._record(
            "create", "listener", name, Change(f"spec.ports[{port}].protocol", None, protocol)
        )
        return NEW_ID

    async def create_pool(
        self, listener_id: str, *, name: str, protocol: str, tags: list[str]
    ) -> str:
        self._record(
            "create", "pool", name, Change("spec.ports[].realServers.protocol", None, protocol)
        )
        return NEW_ID

    async def create_health_monitor(
        self, pool_id: str, *, protocol: str, url_path: str | None, tags: list[str]
    ) -> str:
        label = f"{protocol} {url_path}" if url_path else protocol
        self._record(
            "create",
            "health monitor",
            f"on pool {pool_id}",
            Change("spec.ports[].monitors[0]", None, label),
        )
        return NEW_ID

    async def delete_health_monitor(self, hm_id: str) -> None:
        self._record("delete", "health monitor", hm_id)

    async def delete_listener(self, listener_id: str) -> None:
        self._record("delete", "listener", listener_id)

    async def delete_pool(self, pool_id: str) -> None:
        self._record("delete", "pool", pool_id)

    async def replace_owned_members(
        self, pool_id: str, uid: str, members: list[model.MemberSpec]
    ) -> None:
        """The batch update, as members to add, drain (weight 0), restore and remove."""
        current = [
            m for m in await self._inner.list_members(pool_id) if model.owner_of(m.tags) == uid
        ]
        have = {(m.address, m.port): m for m in current}
        want = {(m.address, m.port): m for m in members}
        changes = []
        for key, m in sorted(want.items()):
            old = have.get(key)
            label = f"{m.name} {m.address}:{m.port}"
            if old is None:
                changes.append(Change("members", None, f"add {label}"))
            elif old.weight != m.weight:
                what = "drain" if m.weight == 0 else "restore"
                changes.append(
                    Change("members", f"weight {old.weight}", f"{what} {label} (weight {m.weight})")
                )
        for key, old in sorted(have.items()):
            if key not in want:
                changes.append(Change("members", f"{old.name} {old.address}:{old.port}", "remove"))
        self._record("update", "members of pool", pool_id, *changes)

    async def add_members(self, pool_id: str, members: list[model.MemberSpec]) -> None:
        changes = [Change("members", None, f"add {m.name} {m.address}:{m.port}") for m in members]
        self._record("update", "members of pool", pool_id, *changes)

    async def create_member(self, pool_id: str, member: model.MemberSpec) -> None:
        label = f"add {member.name} {member.address}:{member.port}"
        self._record("update", "members of pool", pool_id, Change("members", None, label))

    async def update_owned_member(
        self, pool_id: str, member_id: str, uid: str, member: model.MemberSpec
    ) -> None:
        old = await self._member(pool_id, member_id)
        label = f"{member.name} {member.address}:{member.port}"
        what = "drain" if member.weight == 0 else "update"
        before = f"weight {old.weight}" if old is not None else None
        new = f"{what} {label} (weight {member.weight})"
        self._record("update", "members of pool", pool_id, Change("members", before, new))

    async def delete_owned_member(self, pool_id: str, member_id: str, uid: str) -> None:
        old = await self._member(pool_id, member_id)
        label = f"{old.name} {old.address}:{old.port}" if old is not None else member_id
        self._record("update", "members of pool", pool_id, Change("members", label, "remove"))

    async def _member(self, pool_id: str, member_id: str) -> model.Member | None:
        found = await self._inner.list_members(pool_id)
        return next((m for m in found if m.id == member_id), None)

    # -- Designate ---------------------------------------------------------------------

    async def create_recordset(
        self, zone_id: str, *, name: str, type: str, records: list[str], ttl: int, description: str
    ) -> model.Recordset:
        self._record(
            "create",
            "recordset",
            f"{name} {type}",
            Change("spec.values", None, records),
            Change("spec.ttl", None, ttl),
        )
        return model.Recordset(
            NEW_ID, zone_id, name, type, list(records), ttl, description, "PENDING"
        )

    async def update_recordset(
        self, zone_id: str, rs_id: str, *, records: list[str], ttl: int, description: str
    ) -> model.Recordset:
        old = await self._inner.get_recordset(zone_id, rs_id)
        changes = []
        if old is None or sorted(old.records) != sorted(records):
            changes.append(Change("spec.values", old.records if old else None, records))
        if old is None or old.ttl != ttl:
            changes.append(Change("spec.ttl", old.ttl if old else None, ttl))
        if old is None or (old.description or "") != description:
            before = old.description if old else None
            changes.append(Change(_described(before, description), before, description))
        self._record("update", "recordset", old.name if old else rs_id, *changes)
        if old is None:
            return model.Recordset(
                rs_id, zone_id, "", "", list(records), ttl, description, "PENDING"
            )
        return model.Recordset(
            rs_id, zone_id, old.name, old.type, list(records), ttl, description, "PENDING"
        )

    async def delete_recordset(self, zone_id: str, rs_id: str) -> None:
        self._record("delete", "recordset", rs_id)

    # -- Manila ------------------------------------------------------------------------

    async def create_share(self, **attrs: Any) -> model.Share:
        self._record(
            "create",
            "share",
            attrs["name"],
            Change("spec.size", None, attrs.get("size")),
            Change("spec.protocol", None, attrs.get("protocol")),
        )
        return model.Share(
            id=NEW_ID,
            name=attrs["name"],
            status="creating",
            size=attrs.get("size", 0),
            protocol=attrs.get("protocol", ""),
            metadata=dict(attrs.get("metadata") or {}),
        )

    async def extend_share(self, share_id: str, new_size: int) -> None:
        old = await self._inner.get_share(share_id)
        self._record(
            "update", "share", share_id, Change("spec.size", old.size if old else None, new_size)
        )

    async def set_share_metadata(self, share_id: str, metadata: dict[str, str]) -> None:
        old = await self._inner.get_share(share_id)
        self._record(
            "update", "share", share_id, Change("metadata", old.metadata if old else None, metadata)
        )

    async def update_share(self, share_id: str, *, description: str | None) -> None:
        old = await self._inner.get_share(share_id)
        self._record(
            "update",
            "share",
            share_id,
            Change("spec.description", old.description if old else None, description),
        )

    async def delete_share(self, share_id: str) -> None:
        self._record("delete", "share", share_id)

    async def create_access_rule(
        self, share_id: str, *, access_to: str, access_level: str, metadata: dict[str, str]
    ) -> model.AccessRule:
        self._record(
            "create",
            "access rule",
            f"{access_to} {access_level}",
            Change("spec.access", None, f"{access_to} {access_level}"),
        )
        return model.AccessRule(
            NEW_ID, "ip", access_to, access_level, "queued_to_apply", dict(metadata)
        )

    async def delete_access_rule(self, share_id: str, rule_id: str) -> None:
        self._record("delete", "access rule", rule_id)

    # -- Neutron -----------------------------------------------------------------------

    async def create_security_group(
        self, *, name: str, description: str, tags: list[str]
    ) -> model.SecurityGroup:
        self._record("create", "security group", name)
        return model.SecurityGroup(NEW_ID, name, 0, description, list(tags))

    async def update_security_group(self, group_id: str, *, description: str | None) -> None:
        old = await self._inner.get_security_group(group_id)
        before = old.description if old is not None else None
        self._record(
            "update",
            "security group",
            group_id,
            Change(_described(before, description or ""), before, description),
        )

    async def set_security_group_tags(self, group_id: str, tags: list[str]) -> None:
        old = await self._inner.get_security_group(group_id)
        self._record(
            "update", "security group", group_id, Change("tags", old.tags if old else [], tags)
        )

    async def delete_security_group(self, group_id: str) -> None:
        self._record("delete", "security group", group_id, note="with its rules")

    async def create_security_group_rule(
        self,
        group_id: str,
        *,
        direction: str,
        ethertype: str,
        protocol: str | None,
        port_range_min: int | None,
        port_range_max: int | None,
        remote_ip_prefix: str | None,
        remote_group_id: str | None,
        description: str,
    ) -> model.SecurityGroupRule:
        rule = model.SecurityGroupRule(
            NEW_ID,
            direction,
            ethertype,
            protocol,
            port_range_min,
            port_range_max,
            remote_ip_prefix,
            remote_group_id,
            description,
        )
        label = model.rule_label(rule)
        self._record("create", "security group rule", label, Change("spec.rules", None, label))
        return rule

    async def delete_security_group_rule(self, group_id: str, rule_id: str) -> None:
        old = await self._inner.get_security_group(group_id)
        rule = next((r for r in old.rules if r.id == rule_id), None) if old else None
        label = model.rule_label(rule) if rule is not None else rule_id
        self._record("delete", "security group rule", label, Change("spec.rules", label, None))

    # -- Nova keypairs -----------------------------------------------------------------

    async def create_keypair(self, name: str, public_key: str) -> model.KeyPair:
        words = public_key.split()
        shown = " ".join([*words[:1], f"…{words[1][-12:]}"] if len(words) > 1 else words)
        self._record("create", "keypair", name, Change("spec.publicKey", None, shown))
        return model.KeyPair(name, public_key)

    async def delete_keypair(self, name: str) -> None:
        self._record("delete", "keypair", name)

    # -- Neutron floating IPs ------------------------------------------------------------

    async def create_floating_ip(
        self, *, network_id: str, address: str | None, description: str, tags: list[str]
    ) -> model.FloatingIP:
        changes = [Change("spec.network", None, network_id)]
        if address:
            changes.append(Change("spec.address", None, address))
        self._record("create", "floating IP", address or "(any address)", *changes)
        return model.FloatingIP(
            id=NEW_ID,
            address=address or NEW_ID,
            network_id=network_id,
            status="DOWN",
            tags=list(tags),
            description=description,
        )

    async def associate_floating_ip(
        self, fip_id: str, port_id: str | None, fixed_address: str | None
    ) -> model.FloatingIP:
        old = await self._inner.get_floating_ip(fip_id)
        before = old.port_id if old is not None else None
        self._record(
            "update",
            "floating IP",
            old.address if old else fip_id,
            Change("spec.target", _port_text(before), _port_text(port_id)),
        )
        if old is None:
            return model.FloatingIP(fip_id, "", "", "DOWN", port_id, fixed_address)
        return dataclasses.replace(
            old, port_id=port_id, fixed_address=fixed_address, device_id=None
        )

    async def update_floating_ip(self, fip_id: str, *, description: str) -> model.FloatingIP:
        old = await self._inner.get_floating_ip(fip_id)
        before = old.description if old is not None else None
        self._record(
            "update",
            "floating IP",
            old.address if old else fip_id,
            Change(_described(before, description), before, description),
        )
        if old is None:
            return model.FloatingIP(fip_id, "", "", "DOWN", description=description)
        return dataclasses.replace(old, description=description)

    async def set_floating_ip_tags(self, fip_id: str, tags: list[str]) -> None:
        old = await self._inner.get_floating_ip(fip_id)
        self._record(
            "update",
            "floating IP",
            old.address if old else fip_id,
            Change("tags", old.tags if old else [], tags),
        )

    async def delete_floating_ip(self, fip_id: str) -> None:
        self._record("delete", "floating IP", fip_id)

    # -- Cinder ------------------------------------------------------------------------

    async def create_volume(self, **attrs: Any) -> model.Volume:
        self._record(
            "create",
            "volume",
            attrs["name"],
            Change("spec.size", None, attrs.get("size")),
            Change("spec.volumeType", None, attrs.get("volume_type")),
        )
        return model.Volume(
            id=NEW_ID,
            name=attrs["name"],
            status="creating",
            size=attrs.get("size", 0),
            volume_type=attrs.get("volume_type"),
            metadata=dict(attrs.get("metadata") or {}),
        )

    async def extend_volume(self, volume_id: str, new_size: int) -> None:
        old = await self._inner.get_volume(volume_id)
        self._record(
            "update", "volume", volume_id, Change("spec.size", old.size if old else None, new_size)
        )

    async def update_volume(self, volume_id: str, *, description: str | None) -> None:
        old = await self._inner.get_volume(volume_id)
        self._record(
            "update",
            "volume",
            volume_id,
            Change("spec.description", old.description if old else None, description),
        )

    async def set_volume_metadata(self, volume_id: str, metadata: dict[str, str]) -> None:
        old = await self._inner.get_volume(volume_id)
        self._record(
            "update",
            "volume",
            volume_id,
            Change("metadata", old.metadata if old else None, metadata),
        )

    async def delete_volume(self, volume_id: str) -> None:
        self._record("delete", "volume", volume_id)

    async def attach_volume(self, server_id: str, volume_id: str, device: str | None) -> None:
        self._record(
            "update", "server", server_id, Change("spec.volumes", None, f"attach {volume_id}")
        )

    async def detach_volume(self, server_id: str, volume_id: str) -> None:
        self._record(
            "update", "server", server_id, Change("spec.volumes", f"attach {volume_id}", None)
        )

    async def create_snapshot(
        self, volume_id: str, *, name: str, description: str, metadata: dict[str, str]
    ) -> model.Snapshot:
        self._record("create", "snapshot", name, Change("volume", None, volume_id))
        return model.Snapshot(NEW_ID, name, "creating", volume_id, metadata=dict(metadata))

    async def set_snapshot_metadata(self, snapshot_id: str, metadata: dict[str, str]) -> None:
        self._record("update", "snapshot", snapshot_id, Change("metadata", None, metadata))

    async def delete_snapshot(self, snapshot_id: str) -> None:
        self._record("delete", "snapshot", snapshot_id)

    # -- Neutron networks, subnets and routers -----------------------------------------------

    async def create_network(
        self,
        *,
        name: str,
        description: str,
        mtu: int | None,
        port_security: bool,
        tags: list[str],
    ) -> model.Network:
        changes = [Change("spec.portSecurity", None, port_security)]
        if mtu is not None:
            changes.append(Change("spec.mtu", None, mtu))
        self._record("create", "network", name, *changes)
        return model.Network(NEW_ID, name, "ACTIVE", mtu, port_security, description, list(tags))

    async def update_network(self, network_id: str, changes: dict[str, Any]) -> None:
        old = await self._inner.get_network(network_id)
        fields = {"mtu": "spec.mtu", "port_security_enabled": "spec.portSecurity"}
        have = {
            "mtu": old.mtu if old else None,
            "port_security_enabled": old.port_security if old else None,
            "description": old.description if old else None,
        }
        self._record(
            "update",
            "network",
            network_id,
            *(
                Change(_described(have[k], v), have[k], v)
                if k == "description"
                else Change(fields.get(k, f"spec.{k}"), have.get(k), v)
                for k, v in changes.items()
            ),
        )

    async def set_network_tags(self, network_id: str, tags: list[str]) -> None:
        old = await self._inner.get_network(network_id)
        self._record("update", "network", network_id, Change("tags", old.tags if old else [], tags))

    async def delete_network(self, network_id: str) -> None:
        self._record("delete", "network", network_id, note="with its subnets")

    async def create_subnet(
        self,
        network_id: str,
        *,
        name: str,
        cidr: str,
        ip_version: int,
        gateway: str | None,
        dns_nameservers: list[str],
        allocation_pools: list[tuple[str, str]],
        enable_dhcp: bool,
    ) -> model.Subnet:
        self._record("create", "subnet", cidr, Change("spec.subnets[].cidr", None, cidr))
        return model.Subnet(
            NEW_ID, network_id, cidr, ip_version, None if gateway == "none" else gateway
        )

    async def update_subnet(self, network_id: str, subnet_id: str, changes: dict[str, Any]) -> None:
        self._record(
            "update",
            "subnet",
            subnet_id,
            *(Change(f"spec.subnets[].{k}", None, v) for k, v in changes.items()),
        )

    async def delete_subnet(self, network_id: str, subnet_id: str) -> None:
        self._record("delete", "subnet", subnet_id)

    async def create_router(
        self,
        *,
        name: str,
        description: str,
        external_network_id: str,
        enable_snat: bool,
        tags: list[str],
    ) -> model.Router:
        self._record(
            "create",
            "router",
            name,
            Change("spec.router.externalNetwork", None, external_network_id),
        )
        return model.Router(
            NEW_ID,
            name,
            "ACTIVE",
            list(tags),
            external_network_id,
            enable_snat,
            description=description,
        )

    async def update_router(self, router_id: str, *, description: str) -> None:
        old = await self._inner.get_router(router_id)
        before = old.description if old else None
        self._record(
            "update",
            "router",
            router_id,
            Change(_described(before, description), before, description),
        )

    async def set_router_gateway(
        self, router_id: str, external_network_id: str, enable_snat: bool
    ) -> None:
        old = await self._inner.get_router(router_id)
        self._record(
            "update",
            "router",
            router_id,
            Change(
                "spec.router.externalNetwork",
                old.external_network_id if old else None,
                external_network_id,
            ),
            Change("spec.router.enableSnat", old.enable_snat if old else None, enable_snat),
        )

    async def set_router_tags(self, router_id: str, tags: list[str]) -> None:
        old = await self._inner.get_router(router_id)
        self._record("update", "router", router_id, Change("tags", old.tags if old else [], tags))

    async def add_router_interface(self, router_id: str, subnet_id: str) -> None:
        self._record(
            "update", "router", router_id, Change("interfaces", None, f"subnet {subnet_id}")
        )

    async def remove_router_interface(self, router_id: str, subnet_id: str) -> None:
        self._record(
            "update", "router", router_id, Change("interfaces", f"subnet {subnet_id}", None)
        )

    async def delete_router(self, router_id: str) -> None:
        self._record("delete", "router", router_id)


def _port_text(port_id: str | None) -> str:
    """How a floating IP's association reads in a plan and in ``status.drift``."""
    return f"port {port_id}" if port_id else "held (no port)"


def _metadata_field(key: str) -> str:
    """Kumo's own keys (``kumo:``) are bookkeeping, the rest the spec's metadata."""
    return f"metadata.{key}" if key.startswith("kumo:") else f"spec.metadata.{key}"


def _implements(cloud: DryRunCloud) -> ports.Cloud:
    """Never called: mypy checks here that the recorded writes keep the ports' signatures
    (reads pass through ``__getattr__``), so a kind's call works in a dry pass too."""
    return cloud


def _described(before: str | None, after: str) -> str:
    """The field a description change comes from: ``spec.description`` when the user's
    words differ, else Kumo's bookkeeping (``description``: only its marker word moved, a
    legacy marker re-marked), which is no drift from the spec."""
    if before is None or model.user_text(before) != model.user_text(after):
        return "spec.description"
    return "description"

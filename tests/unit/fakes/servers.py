"""FakeServers: the compute service's servers part (kumo.ports.ServersPort) in memory."""

from __future__ import annotations

import dataclasses
import itertools
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

from kumo.cloud import model
from kumo.engine.errors import TerminalError
from kumo.ports import ServersPort

_ids = itertools.count(1)


def new_id(prefix: str) -> str:
    return f"{prefix}-{next(_ids):04d}"


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class FakeServers(ServersPort):
    """Servers and server groups with tags, answering like ``ServersCalls`` over Nova.

    Nova works asynchronously, and so does this fake: a new server is BUILD until
    ``settle()``; a deleted server stays listed as DELETING (Nova's task_state
    ``deleting``) until the next ``settle()``, and only then disappears. As in the real
    adapter, ``get_server`` returns a DELETING server and ``list_owned_servers`` does
    not unless asked (``going``). ``list_servers_since`` answers like ``changes-since``:
    every server changed at or after the time given, deleted ones as DELETED, and every
    build request (a queued server not yet ``schedule``d), with Nova's clock (``now``,
    moved by ``tick``; a compute node's clock may lag it by ``node_lag`` seconds).
    """

    region: str | None = "tokyo1"

    async def project_id(self) -> str | None:
        return "project-tokyo1"

    def __init__(self) -> None:
        self.servers: dict[str, dict[str, Any]] = {}
        self.groups: dict[str, model.ServerGroup] = {}
        self.images = {"centos79": "img-1"}
        self.flavors = {"n3-1vcpu-2gb": "flv-1"}
        self.calls: list[str] = []
        self.now = datetime(2026, 11, 1, tzinfo=UTC)
        self.node_lag = 0.0
        self.deleted: dict[str, datetime] = {}  # gone servers, as changes-since shows them
        self.queued_builds_limit = 0  # as ``kumo run --max-queued-builds``; 0: no limit
        self.withdrawn: list[str] = []  # VMs that gave up their turn to build

    def tick(self, seconds: float = 1.0) -> None:
        self.now += timedelta(seconds=seconds)

    def _touch(self, s: dict[str, Any]) -> None:
        s["updated"] = self.now - timedelta(seconds=self.node_lag)
        s["unwritten"] = False

    def _server(self, s: dict[str, Any]) -> model.Server:
        return model.Server(
            id=s["id"],
            name=s["name"],
            status=s["status"],
            tags=list(s["tags"]),
            metadata=dict(s["metadata"]),
            description=s["description"],
            addresses=[("kumo-demo-net", s["ip"], 4)] if s["status"] == "ACTIVE" else [],
            host_id=s.get("host"),
            fault=s.get("fault"),
            updated=_iso(s["updated"]),
            image_id=s["attrs"].get("image_id"),
            flavor=s["attrs"].get("flavor_id"),
            security_groups=tuple(sorted(s["attrs"].get("security_groups") or ["default"])),
            volumes=tuple(sorted(s.get("volumes") or ())),
        )

    def _listed(self, s: dict[str, Any]) -> model.Server:
        """As Nova's listings show a server: without its fault (only a GET has it)."""
        return dataclasses.replace(self._server(s), fault=None)

    def schedule(self) -> None:
        """Nova's conductor makes every build request an instance in its cell that no
        compute has started yet: still BUILD without a host, and with no ``updated_at``,
        so changes-since listings leave them out (only a compute's first write sets it;
        Nova then shows the creation time as ``updated``)."""
        for s in self.servers.values():
            if self._requested(s):
                s.update(task_state=None, unwritten=True)

    @staticmethod
    def _requested(s: dict[str, Any]) -> bool:
        """Still a build request: listed by every changes-since answer, whatever the time."""
        return s["status"] == "BUILD" and s["host"] is None and s["task_state"] == "scheduling"

    def place(self) -> None:
        """Nova's scheduler puts every queued server on a host; they are still BUILD."""
        for s in self.servers.values():
            if s["status"] == "BUILD" and s["host"] is None:
                s.update(host="host-a", task_state="spawning")
                self._touch(s)

    def settle(self, status: str = "ACTIVE") -> None:
        """Let Nova finish: deleted servers go, building servers become ``status``."""
        for sid, s in list(self.servers.items()):
            if s["status"] == "DELETING":
                del self.servers[sid]
                self.deleted[sid] = self.now - timedelta(seconds=self.node_lag)
            elif s["status"] == "BUILD":
                host = "host-a" if status == "ACTIVE" else s["host"]
                s.update(status=status, task_state=None, host=host)
                self._touch(s)

    def live(self) -> dict[str, dict[str, Any]]:
        """The servers that are not being deleted."""
        return {k: s for k, s in self.servers.items() if s["status"] != "DELETING"}

    async def list_servers_since(self, since: str | None) -> tuple[list[model.Server], str | None]:
        self.calls.append("list_servers_since" if since else "list_servers")
        date = format_datetime(self.now, usegmt=True)
        if since is None:
            tagged = [s for s in self.servers.values() if model.MANAGED_TAG in s["tags"]]
            return [self._listed(s) for s in tagged], date
        start = datetime.fromisoformat(since.replace("Z", "+00:00"))
        changed = [
            self._listed(s)
            for s in self.servers.values()
            if self._requested(s) or (not s.get("unwritten") and s["updated"] >= start)
        ]
        gone = [
            model.Server(id=sid, name="", status="DELETED", updated=_iso(at))
            for sid, at in self.deleted.items()
            if at >= start
        ]
        return changed + gone, date

    async def list_project_servers(self) -> tuple[list[model.Server], str | None]:
        self.calls.append("list_project_servers")
        date = format_datetime(self.now, usegmt=True)
        return [self._listed(s) for s in self.servers.values()], date

    async def list_building_servers(self) -> list[model.Server]:
        self.calls.append("list_building_servers")
        return [
            self._listed(s)
            for s in self.servers.values()
            if s["status"] == "BUILD" and model.MANAGED_TAG in s["tags"]
        ]

    async def fetch_server_groups(self) -> list[model.ServerGroup]:
        self.calls.append("fetch_server_groups")
        return list(self.groups.values())

    async def image_id(self, ref: str, field: str = "spec.image") -> str:
        if ref not in self.images:
            raise TerminalError("ImageNotFound", f"image {ref!r} not found", field=field)
        return self.images[ref]

    async def flavor_id(self, ref: str, field: str = "spec.flavor") -> str:
        if ref not in self.flavors:
            raise TerminalError("FlavorNotFound", f"flavor {ref!r} not found", field=field)
        return self.flavors[ref]

    async def network_id(self, ref: str, field: str = "spec.networks") -> str:
        return f"net-{ref}"

    async def default_network_id(self, external: bool, field: str) -> str:
        return "net-public" if external else "net-private"

    def list_live_server_addresses(self) -> frozenset[str] | None:
        """The fake has no cloud watch: "not listed yet", as the adapter says before its
        first listing (no pool member is then taken for lost)."""
        return None

    async def get_server(self, server_id: str) -> model.Server | None:
        s = self.servers.get(server_id)
        return self._server(s) if s else None

    async def fetch_server(self, server_id: str) -> model.Server | None:
        self.calls.append("fetch_server")
        return await self.get_server(server_id)

    async def list_owned_servers(self, uid: str, *, going: bool = False) -> list[model.Server]:
        owner = model.owner_tag(uid)
        servers = self.servers if going else self.live()
        return [self._server(s) for s in servers.values() if owner in s["tags"]]

    def add_server(
        self,
        name: str,
        *,
        tags: list[str],
        metadata: dict[str, str] | None = None,
        description: str | None = None,
        image_id: str = "img-1",
        flavor_id: str = "flv-1",
    ) -> model.Server:
        """A server someone else created (a crashed run, a user): not a recorded call."""
        attrs = {"name": name, "tags": tags, "metadata": metadata or {}}
        attrs |= {"image_id": image_id, "flavor_id": flavor_id}
        return self._create(attrs, description)

    async def find_servers_by_name(self, name: str) -> list[model.Server]:
        self.calls.append("find_servers_by_name")
        return [self._server(s) for s in self.live().values() if s["name"] == name]

    async def flavor_ids(self, ref: str, field: str = "spec.flavor") -> tuple[str, str]:
        for name, flavor_id in self.flavors.items():
            if ref in (name, flavor_id):
                return flavor_id, name
        raise TerminalError("FlavorNotFound", f"flavor {ref!r} not found", field=field)

    @property
    def max_queued_builds(self) -> int:
        return self.queued_builds_limit

    async def admit_build(self, uid: str) -> bool:
        """The budget without its waiting line: a turn while fewer than
        ``max_queued_builds`` servers are queued (BUILD, not on a host yet)."""
        queued = sum(1 for s in self.live().values() if s["status"] == "BUILD" and not s["host"])
        return self.queued_builds_limit <= 0 or queued < self.queued_builds_limit

    async def withdraw_build(self, uid: str) -> None:
        self.withdrawn.append(uid)

    async def create_server(
        self,
        *,
        name: str,
        image_id: str,
        flavor_id: str,
        network_ids: list[str],
        user_data: str | None,
        description: str | None,
        metadata: dict[str, str],
        tags: list[str],
        availability_zone: str | None,
        key_name: str | None,
        security_groups: list[str],
        server_group_id: str | None,
        root_volume: tuple[int, str | None] | None = None,
        port_ids: tuple[str, ...] = (),
    ) -> model.Server:
        self.calls.append("create_server")
        attrs = {k: v for k, v in locals().items() if k != "self"}
        return self._create(attrs, description)

    def _create(self, attrs: dict[str, Any], description: str | None) -> model.Server:
        sid = new_id("srv")
        self.servers[sid] = {
            "id": sid,
            "name": attrs["name"],
            "status": "BUILD",
            "task_state": "scheduling",
            "host": None,  # until place() or settle(): queued in Nova
            "tags": list(attrs["tags"]),
            "metadata": dict(attrs["metadata"]),
            "description": description,
            "ip": f"10.0.0.{len(self.servers) + 10}",
            "attrs": attrs,
        }
        self._touch(self.servers[sid])
        return self._server(self.servers[sid])

    async def add_server_security_group(self, server_id: str, group: str) -> None:
        """Nova shows a group by name: here the name is what was given."""
        self.calls.append("add_server_security_group")
        attrs = self.servers[server_id]["attrs"]
        attrs["security_groups"] = sorted({*(attrs.get("security_groups") or ["default"]), group})

    async def remove_server_security_group(self, server_id: str, group: str) -> None:
        self.calls.append("remove_server_security_group")
        attrs = self.servers[server_id]["attrs"]
        groups = attrs.get("security_groups") or ["default"]
        attrs["security_groups"] = [g for g in groups if g != group]

    async def update_server(self, server_id: str, *, description: str | None) -> None:
        self.servers[server_id]["description"] = description
        self._touch(self.servers[server_id])

    async def set_server_metadata(
        self, server_id: str, metadata: dict[str, str], remove: list[str]
    ) -> None:
        md = self.servers[server_id]["metadata"]
        md.update(metadata)
        for key in remove:
            md.pop(key, None)
        self._touch(self.servers[server_id])

    async def set_server_tags(self, server_id: str, tags: list[str]) -> None:
        self.calls.append("set_server_tags")
        self.servers[server_id]["tags"] = list(tags)

    async def delete_server(self, server_id: str) -> None:
        """Nova accepts the delete and finishes it later (at the next ``settle()``)."""
        self.calls.append("delete_server")
        s = self.servers.get(server_id)
        if s is not None:
            s.update(status="DELETING", task_state="deleting")
            self._touch(s)

    async def list_server_groups(self) -> list[model.ServerGroup]:
        return list(self.groups.values())

    async def list_owned_server_groups(self, uid: str) -> list[model.ServerGroup]:
        return [g for g in self.groups.values() if model.text_owner(g.name) == uid]

    async def get_server_group(self, group_id: str) -> model.ServerGroup | None:
        return self.groups.get(group_id)

    async def create_server_group(self, name: str, policy: str) -> model.ServerGroup:
        group = model.ServerGroup(id=new_id("sg"), name=name, policy=policy)
        self.groups[group.id] = group
        return group

    async def delete_server_group(self, group_id: str) -> None:
        self.groups.pop(group_id, None)

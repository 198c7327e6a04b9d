"""Nova's watchers: servers by changes-since (and the turns to build them), server groups
on the full relist, the user's keypairs.

- **Servers**: ``GET /servers/detail?changes-since=T`` — only servers changed since
  T, deleted ones included (their tags are gone, so the incremental list is unfiltered
  and matched by ID). T comes from the cloud's own clock (the ``Date`` of the previous
  answer) minus a margin for skew between Nova's nodes, never from the local clock. A
  full listing filtered by Kumo's tag runs at start and every ``relist_seconds``. The
  cache holds Kumo's servers and the foreign ones an import or an Observe names (the
  adapter caches them at their first read; while it holds any, the full listing is of
  the project's every server), so observing a server costs no GET. Nova returns every
  build request in every answer, so a queued server missing from them for
  ``LINGER_QUEUED`` seconds is looked for in one listing of Kumo's servers in BUILD, and
  read by ID only when missing there too (deleted while queued: no DELETED trace).
- **Server groups**: at start and every ``relist_seconds`` (they change only by Kumo's
  own writes, which update the cache directly).
- **Keypairs**: one listing of the credentials' user's keypairs per interval
  (``GET /os-keypairs``: keypairs belong to a user, and Nova has no changes-since or
  filter for them). It answers with every keypair's public key, where Kumo's marker is.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

from kumo.cloud import model
from kumo.cloud.budget import BuildBudget
from kumo.cloud.cache import Change, ResourceCache
from kumo.cloud.watcher import (
    SKEW_SECONDS,
    Changes,
    ListingWatcher,
    WatchEnv,
    Watcher,
    tags_marker,
)
from kumo.engine.errors import ReconcileError
from kumo.ports import KeyPairsPort, ServersPort
from kumo.ports.times import parse_updated

log = logging.getLogger("kumo.cloud.watch")


def server_time(date_header: str | None) -> datetime | None:
    """The API server's clock from an HTTP ``Date`` header."""
    if not date_header:
        return None
    try:
        return parsedate_to_datetime(date_header).astimezone(UTC)
    except (TypeError, ValueError):
        return None


def next_since(
    previous: datetime | None,
    answered_at: datetime | None,
    servers: Iterable[model.Server],
    skew: float = SKEW_SECONDS,
    took: float = 0.0,
) -> datetime | None:
    """Where the next changes-since listing starts: the cloud's time of this answer, less
    the ``took`` seconds the call lasted, minus the skew margin (a node whose clock lags
    may stamp a later change earlier); without a ``Date``, the newest ``updated`` seen
    minus the margin. Never moves backwards, and never uses the local clock's time (only
    a duration measured on it).

    ``Date`` is when the answer left, not when Nova read its database: that may be
    anywhere in the call. Under a 300-VM delete nova-api held listings for 30 s and
    more after its query (the view asks Neutron, which was queued too), and a server
    deleted in between was in no answer: its finalizer waited for the 10-minute relist.
    The call's start is before the query, so the answer's time less its duration is."""
    candidates = [previous] if previous else []
    if answered_at is not None:
        candidates.append(answered_at - timedelta(seconds=skew + max(0.0, took)))
    else:
        stamps = [t for s in servers if (t := parse_updated(s.updated))]
        if stamps:
            candidates.append(max(stamps) - timedelta(seconds=skew))
    return max(candidates) if candidates else None


def format_since(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def server_group_owner(group: model.ServerGroup) -> str | None:
    """The owner UID in a server group's name (Nova server groups have no tags)."""
    return model.text_owner(group.name)


#: Seconds a server may stay DELETING unchanged in the cache before it is read by ID.
LINGER_DELETING = 5.0


#: Seconds a queued server (BUILD, no host) may be missing from the changes-since answers
#: before the watch asks Nova what it holds in BUILD (see :meth:`ServerWatcher._vouch`).
LINGER_QUEUED = 20.0


#: At most this many reads by ID per refresh.
LINGER_CHECKS = 20


TRANSITIONAL_SERVER = {"BUILD", "REBUILD", "DELETING", "RESIZE", "MIGRATING", "REBOOT"}


class ServerWatcher(Watcher):
    """Nova servers by changes-since, and the turns to build them (what the cache sees
    queued decides)."""

    service = "compute"
    api, resource = "compute", "servers"

    def __init__(self, cloud: ServersPort, env: WatchEnv) -> None:
        super().__init__(env)
        self.cloud = cloud
        self.servers: ResourceCache[model.Server] = ResourceCache(
            "servers",
            lambda s: s.id,
            lambda s: model.owner_of(s.tags),
            live=lambda s: s.status not in ("DELETED", "DELETING"),
        )
        self.caches = self.singles = (self.servers,)
        self.marks = (("server", self.servers, tags_marker),)
        #: Turns for creating servers: at most ``max_queued_builds`` of them in BUILD at once.
        self.builds = BuildBudget(env.max_queued_builds, env.now)
        self._since: datetime | None = None
        #: DELETING servers: as last seen, and since when unchanged.
        self._lingering: dict[str, tuple[model.Server, float]] = {}
        #: DELETING servers a listing showed so (Nova's task_state ``deleting``).
        self._listed_deleting: set[str] = set()
        #: Queued servers: when a listing last showed them (or the watch first saw them).
        self._vouched: dict[str, float] = {}

    async def delete_marked(self, resource: model.Marked) -> None:
        await self.cloud.delete_server(resource.id)

    async def refresh(self, full: bool) -> Changes:
        cache = self.servers
        stats = self.env.stats
        token = cache.begin()
        asked = self.env.now()
        if full or self._since is None or not cache.synced:
            stats.count("servers-full")
            if any(not _marked_server(s) for s in cache.items()):
                # Servers an import or an Observe names: the project's every server, of
                # which Kumo's and those; a cached one missing is gone.
                listed, date = await self.cloud.list_project_servers()
                listed = [
                    s
                    for s in listed
                    if _marked_server(s) or isinstance(cache.lookup(s.id), model.Server)
                ]
                scope = None
            else:
                listed, date = await self.cloud.list_servers_since(None)
                scope = _marked_server
            took = self.env.now() - asked
            answered = server_time(date)
            listed = await self._with_faults(listed)
            changes = cache.replace(token, listed, scope=scope)
            self._shown({s.id for s in listed}, self.env.now())
            self._listed_deleting.update(s.id for s in listed if s.status == "DELETING")
        else:
            stats.count("servers-changes-since")
            listed, date = await self.cloud.list_servers_since(format_since(self._since))
            took = self.env.now() - asked
            answered = server_time(date)
            gone = [s.id for s in listed if s.status == "DELETED"]
            # Servers Kumo never watched (no marker, not cached) are none of its business;
            # a foreign one cached (an object imports or observes it) is kept fresh.
            kept = [
                s
                for s in listed
                if s.status != "DELETED"
                and (_marked_server(s) or isinstance(cache.lookup(s.id), model.Server))
            ]
            changes = cache.apply(token, await self._with_faults(kept), gone)
            self._listed_deleting.update(s.id for s in kept if s.status == "DELETING")
            try:
                changes += await self._confirm_lingering({s.id for s in listed})
            except ReconcileError as error:  # asked again next time; the listing stands
                log.debug("reading lingering servers failed: %s", error)
        self._since = next_since(self._since, answered, listed, self.env.skew, took)
        return [(cache, c) for c in changes]

    async def _confirm_lingering(self, listed: set[str]) -> list[Change[model.Server]]:
        """Servers that leave no trace in changes-since: one deleted while Nova still held
        it as a build request is simply gone, never listed as DELETED. A server Kumo saw
        deleting that has not changed for a while, and a queued one that the listings
        stopped showing (:meth:`_vouch`), is read by ID: a GET only where no listing can
        tell, a few per refresh."""
        now = self.env.now()
        due = self._deleting_due(now)
        changes: list[Change[model.Server]] = []
        missing = self._queued_missing(listed, now)
        if missing:
            found, changes = await self._vouch(now)
            due += [sid for sid in missing if sid not in found]
        for sid in due[:LINGER_CHECKS]:
            token = self.servers.begin()
            self.env.stats.count("server-lingering")
            fresh = await self.cloud.fetch_server(sid)
            if sid in self._lingering:  # not again before the next wait
                self._lingering[sid] = (self._lingering[sid][0], now)
            if sid in self._vouched:
                self._vouched[sid] = now
            if fresh is None:
                changes += self.servers.apply(token, [], [sid])
            else:
                changes += self.servers.apply(token, [fresh])
        return changes

    def _deleting_due(self, now: float) -> list[str]:
        """The DELETING servers unchanged in the cache for ``LINGER_DELETING`` seconds
        that no listing has shown deleting: only Kumo's own mark says so. A build
        request's delete leaves no trace, and a delete Nova dropped leaves the server as
        it was (the finalizer waits for the read that shows it). A server Nova listed as
        deleting is not read: its end (DELETED, or ERROR or ACTIVE again if Nova fails
        it) bumps its ``updated_at``, so changes-since shows it. Under a mass delete
        Nova takes 30 s and more per server, and reading each after 5 s cost 20 GETs
        per listing and made each listing slower, so the watch's pace slower too."""
        seen = self._lingering
        current = {s.id: s for s in self.servers.items() if s.status == "DELETING"}
        self._listed_deleting.intersection_update(current)
        for sid in list(seen):
            if sid not in current or seen[sid][0] != current[sid]:
                del seen[sid]
        return [
            sid
            for sid, server in current.items()
            if sid not in self._listed_deleting
            and now - seen.setdefault(sid, (server, now))[1] >= LINGER_DELETING
        ]

    def _shown(self, listed: set[str], now: float) -> set[str]:
        """Note which queued servers (BUILD, no host) a listing showed; the queued ones."""
        queued = {s.id for s in self.servers.items() if s.status == "BUILD" and not s.host_id}
        for sid in [sid for sid in self._vouched if sid not in queued]:
            del self._vouched[sid]
        for sid in queued & listed:
            self._vouched[sid] = now
        return queued

    def _queued_missing(self, listed: set[str], now: float) -> list[str]:
        """The queued servers this answer did not show, and no listing has shown for
        ``LINGER_QUEUED`` seconds (or since the watch first saw them queued). Nova
        returns every build request in every changes-since answer (their ``updated_at``
        is not set yet, so the filter cannot leave them out), and a server a compute
        builds changes with every step: while a fleet builds, none is due."""
        queued = self._shown(listed, now)
        return [
            sid
            for sid in queued - listed
            if now - self._vouched.setdefault(sid, now) >= LINGER_QUEUED
        ]

    async def _vouch(self, now: float) -> tuple[set[str], list[Change[model.Server]]]:
        """One listing of Kumo's servers Nova holds in BUILD, whatever their ``updated_at``.
        A queued server can be missing from changes-since for a good reason: the conductor
        has made it an instance in its cell (no build request any more) whose compute has
        not started it yet — its ``updated_at`` stays unset until the compute's first
        write, which waits for one of the compute's build slots, minutes on a busy cloud.
        Those are in this listing; only a server missing here too is read by ID."""
        token = self.servers.begin()
        self.env.stats.count("servers-building")
        building = await self.cloud.list_building_servers()
        found = {s.id for s in building}
        for sid in found & set(self._vouched):
            self._vouched[sid] = now
        return found, self.servers.apply(token, building)

    async def _with_faults(self, listed: list[model.Server]) -> list[model.Server]:
        """Nova's listings leave out why a server is in ERROR; the reason decides what
        Kumo reports and does (NoValidHost names the server group). One GET per server
        that went into ERROR, once."""
        filled = []
        for server in listed:
            if server.status == "ERROR" and not server.fault:
                cached = self.servers.lookup(server.id)
                if isinstance(cached, model.Server) and cached.status == "ERROR" and cached.fault:
                    server = dataclasses.replace(server, fault=cached.fault)
                else:
                    self.env.stats.count("server-fault")
                    fresh = await self.cloud.fetch_server(server.id)
                    if fresh is not None and fresh.fault:
                        server = dataclasses.replace(server, fault=fresh.fault)
            filled.append(server)
        return filled

    def transitional(self) -> bool:
        return any(s.status in TRANSITIONAL_SERVER for s in self.servers.items())

    def woken(self) -> set[str]:
        """A queued server that reached a host frees a turn: the VMs waiting for it."""
        return set(self.builds.release(self.queued_builds()))

    def queued_builds(self) -> int:
        """How many of Kumo's servers in this project Nova has accepted but not started on
        a host yet (``BUILD`` without a ``hostId``; from the cache). Those are the ones
        waiting for the scheduler, the conductor or a compute's build slot — and, until
        scheduled, the build requests every server listing returns. A server a compute
        is building costs no listing anything and is not counted."""
        return self.servers.derived(  # every VM waiting for a turn asks
            "queued builds",
            lambda: sum(
                1
                for s in self.servers.items()
                if s.status == "BUILD" and not s.host_id and _marked_server(s)
            ),
        )


class ServerGroupWatcher(ListingWatcher[model.ServerGroup]):
    """Nova server groups: only on the full relist (they change by Kumo's own writes,
    which update the cache directly), on a schedule apart from the servers'."""

    service = "compute.server-groups"
    api, resource = "compute", "server_groups"
    counted = "server-groups"
    relist_only = True

    def __init__(self, cloud: ServersPort, env: WatchEnv) -> None:
        self.cloud = cloud
        self.server_groups: ResourceCache[model.ServerGroup] = ResourceCache(
            "server groups", lambda g: g.id, server_group_owner
        )
        mark = ("server_group", lambda g: model.text_marker(g.name))
        super().__init__(
            env, self.server_groups, mark, lambda: self.cloud.fetch_server_groups(), single=False
        )

    async def delete_marked(self, resource: model.Marked) -> None:
        await self.cloud.delete_server_group(resource.id)

    def is_in_use(self, resource: Any) -> bool:
        return bool(resource.members)


class KeyPairWatcher(ListingWatcher[model.KeyPair]):
    """Nova keypairs: the user's whole list each interval (one call; a project holds few).

    Every keypair is cached, Kumo's or not: the adapter answers ``get_keypair`` for an
    import or a name in the way from here. Kumo's carry the marker as the last word of
    their public key's comment, which Nova never changes (a keypair cannot be edited),
    so :meth:`marked` lists exactly the keypairs Kumo created for an object and has not
    released; a released one carries ``kumo-orphan=<uid>`` there instead."""

    service = "compute.keypairs"
    api, resource = "compute", "keypairs"
    counted = "keypairs-list"

    def __init__(self, cloud: KeyPairsPort, env: WatchEnv) -> None:
        self.cloud = cloud
        self.keypairs: ResourceCache[model.KeyPair] = ResourceCache(
            "keypairs", lambda k: k.name, lambda k: model.keypair_owner(k.public_key)
        )
        mark = ("keypair", lambda k: model.keypair_marker(k.public_key))
        super().__init__(env, self.keypairs, mark, lambda: self.cloud.fetch_keypairs())

    async def delete_marked(self, resource: model.Marked) -> None:
        await self.cloud.delete_keypair(resource.id)


def _marked_server(server: model.Server) -> bool:
    return model.MANAGED_TAG in server.tags

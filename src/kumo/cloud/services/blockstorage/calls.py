"""Cinder calls: volumes, and their attachments to servers (through Nova).

Everything goes through the block-storage (v3) proxy's REST methods at
:data:`MICROVERSION` (3.0 is enough: metadata filter on the listing, ``os-extend`` while
available). Attach and detach go through Nova's ``os-volume_attachments``, so Nova and
Cinder agree on the attachment and the server is never rebuilt.

Every listing reads every page (Cinder answers ``osapi_max_limit`` items per page:
:mod:`kumo.cloud.pages`); volume listings go at :data:`LIST_MICROVERSION` for Cinder's
count, so that a listing filling its page exactly costs no second call.

Ownership: volumes have no tags, but have metadata: Kumo writes ``kumo: managed`` and
``kumo-owner: <uid>`` on what it creates (the same keys as on Manila shares). A volume
is listed by its owner with Cinder's metadata filter.

Snapshots (a stateful group's ``snapshotBeforeReplace``) are marked the same way, and go
at :data:`SNAPSHOT_MICROVERSION`: below 3.22 Cinder silently ignores a snapshot
listing's metadata filter (and would list every snapshot of the project). They are not
watched: only a rollout step (and a snapshotted Volume's deletion) lists them.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from openstack import exceptions as os_exc

from kumo.cloud import model
from kumo.cloud.base import CloudBase
from kumo.cloud.services.blockstorage.watch import VolumeWatcher
from kumo.cloud.services.compute.watch import ServerWatcher
from kumo.engine.errors import TerminalError

MICROVERSION = "3.0"
#: Volume listings ask Cinder's count (3.45), so a listing that fills its page exactly
#: ends there instead of asking for an empty next page (cloud/pages.py).
LIST_MICROVERSION = "3.45"
#: Snapshot listings filter by metadata from 3.22; ``force`` (an in-use volume) still
#: counts there (3.66 dropped the need for it).
SNAPSHOT_MICROVERSION = "3.22"


class BlockStorageCalls(CloudBase):
    def _cinder(self, method: str, path: str, microversion: str = MICROVERSION, **kw: Any) -> Any:
        """One request at ``microversion`` (:meth:`CloudBase._rest`)."""
        return self._rest(self.conn.block_storage, method, path, microversion=microversion, **kw)

    def _cinder_list(
        self, path: str, key: str, params: dict[str, Any], microversion: str = MICROVERSION
    ) -> list[Any]:
        """Every page of a listing (``osapi_max_limit`` per page: cloud/pages.py), with
        Cinder's count from 3.45."""
        counts = tuple(map(int, microversion.split("."))) >= (3, 45)
        settled = _settled if counts else None
        proxy = self.conn.block_storage
        return self._pages(proxy, path, key, params, settled=settled, microversion=microversion)

    def _nova_rest(self, method: str, path: str, **kw: Any) -> Any:
        return self._rest(self.conn.compute, method, path, **kw)

    async def volume_type_name(self, ref: str, field: str = "spec.volumeType") -> str:
        """Name of a volume type given by name or ID (Cinder accepts either on create;
        the name is what a volume reports)."""

        def find() -> str | None:
            types = self._cinder_list("/types", "volume_types", {})
            found = [t for t in types if ref in (t["id"], t["name"])]
            return str(found[0]["name"]) if found else None

        async def load() -> str:
            found = await self._call(f"look up volume type {ref!r}", find, field=field)
            if found is None:
                raise TerminalError(
                    "VolumeTypeNotFound", f"volume type {ref!r} not found", field=field
                )
            return found

        return await self._names.resolve(("volume type", ref), load, field)

    async def get_volume(self, volume_id: str) -> model.Volume | None:
        hit = self.watch.of(VolumeWatcher).volumes.lookup(volume_id)
        if isinstance(hit, model.Volume):
            return hit
        # GONE too: the watch lists Kumo's marked ones only, so one dropped from its
        # listing may live on unmarked (released by Orphan, to be imported by ID).
        return await self.fetch_volume(volume_id)

    async def fetch_volume(self, volume_id: str) -> model.Volume | None:
        """The volume from the API, not the cache (None: gone)."""
        found = await self._get("get volume", self._cinder, "get", f"/volumes/{volume_id}")
        return volume_from(found["volume"]) if found is not None else None

    async def list_owned_volumes(self, uid: str) -> list[model.Volume]:
        cache = self.watch.of(VolumeWatcher).volumes
        if cache.answers_for(uid):
            return cache.owned_by(uid)
        return await self._relist(
            cache, uid, lambda: self._list_volumes({"metadata": {model.SHARE_OWNER_KEY: uid}})
        )

    async def list_managed_volumes(self) -> list[model.Volume]:
        """Every volume Kumo created in the project (one filtered listing, for drift)."""
        return await self._list_volumes(
            {"metadata": {model.SHARE_MANAGED_KEY: model.SHARE_MANAGED_VALUE}}
        )

    async def find_volumes_by_name(self, name: str) -> list[model.Volume]:
        return [v for v in await self._list_volumes({"name": name}) if v.name == name]

    async def _list_volumes(self, filters: dict[str, Any]) -> list[model.Volume]:
        params = {k: json.dumps(v) if isinstance(v, dict) else v for k, v in filters.items()}
        found = await self._call(
            "list volumes",
            self._cinder_list,
            "/volumes/detail",
            "volumes",
            params,
            microversion=LIST_MICROVERSION,
        )
        return [volume_from(x) for x in found]

    async def create_volume(
        self,
        *,
        name: str,
        size: int,
        volume_type: str | None,
        availability_zone: str | None,
        image_id: str | None,
        snapshot_id: str | None,
        description: str | None,
        metadata: dict[str, str],
    ) -> model.Volume:
        body: dict[str, Any] = {
            "name": name,
            "size": size,
            "description": description,
            "metadata": metadata,
        }
        for key, value in (
            ("volume_type", volume_type),
            ("availability_zone", availability_zone),
            ("imageRef", image_id),
            ("snapshot_id", snapshot_id),
        ):
            if value:
                body[key] = value
        created = await self._create(
            "create volume",
            self._cinder,
            "post",
            "/volumes",
            resolved=[volume_type, image_id, snapshot_id],
            in_doubt=(self.watch.of(VolumeWatcher).volumes, model.metadata_owner(metadata) or ""),
            json={"volume": body},
            field="spec",
        )
        volume = volume_from(created["volume"])
        self.watch.of(VolumeWatcher).volumes.put(volume)
        self.watch.nudge(VolumeWatcher.service)
        return volume

    async def extend_volume(self, volume_id: str, new_size: int) -> None:
        await self._call(
            "extend volume",
            self._cinder,
            "post",
            f"/volumes/{volume_id}/action",
            json={"os-extend": {"new_size": new_size}},
            field="spec.size",
        )
        self._volume_changing(volume_id, "extending")

    async def update_volume(self, volume_id: str, *, description: str | None) -> None:
        await self._call(
            "update volume",
            self._cinder,
            "put",
            f"/volumes/{volume_id}",
            json={"volume": {"description": description}},
            field="spec.description",
        )
        self.watch.of(VolumeWatcher).volumes.update(
            volume_id, lambda v: dataclasses.replace(v, description=description)
        )

    async def set_volume_metadata(self, volume_id: str, metadata: dict[str, str]) -> None:
        """Replace the whole metadata (PUT): the released marker's keys go."""
        await self._call(
            "set volume metadata",
            self._cinder,
            "put",
            f"/volumes/{volume_id}/metadata",
            json={"metadata": metadata},
        )
        self.watch.of(VolumeWatcher).volumes.update(
            volume_id, lambda v: dataclasses.replace(v, metadata=metadata)
        )
        self.watch.nudge(VolumeWatcher.service)

    async def delete_volume(self, volume_id: str) -> None:
        """Delete; a volume already gone is fine."""
        try:
            await self._call("delete volume", self._cinder, "delete", f"/volumes/{volume_id}")
        except TerminalError as error:
            if not isinstance(error.__cause__, os_exc.NotFoundException):
                raise
        self._volume_changing(volume_id, "deleting")

    async def attach_volume(self, server_id: str, volume_id: str, device: str | None) -> None:
        attachment: dict[str, Any] = {"volumeId": volume_id}
        if device:
            attachment["device"] = device
        try:
            await self._call(
                "attach volume",
                self._nova_rest,
                "post",
                f"/servers/{server_id}/os-volume_attachments",
                json={"volumeAttachment": attachment},
                field="spec.volumes",
            )
        finally:  # even an error: the attachment may have begun
            self._volume_changing(volume_id, "attaching")
        # Nova records the attachment before it answers; attaching does not move the
        # server's updated_at, so the watch's changes-since would not show it.
        self.watch.of(ServerWatcher).servers.update(
            server_id,
            lambda s: dataclasses.replace(s, volumes=tuple(sorted({*s.volumes, volume_id}))),
        )

    async def detach_volume(self, server_id: str, volume_id: str) -> None:
        """Detach; an attachment already gone is fine."""
        try:
            await self._call(
                "detach volume",
                self._nova_rest,
                "delete",
                f"/servers/{server_id}/os-volume_attachments/{volume_id}",
            )
        except TerminalError as error:
            if not isinstance(error.__cause__, os_exc.NotFoundException):
                raise
        self._volume_changing(volume_id, "detaching")
        self.watch.of(ServerWatcher).servers.update(
            server_id,
            lambda s: dataclasses.replace(s, volumes=tuple(v for v in s.volumes if v != volume_id)),
        )

    async def list_snapshots(self, metadata: dict[str, str]) -> list[model.Snapshot]:
        params = {"metadata": json.dumps(metadata)}
        found = await self._call(
            "list snapshots",
            self._cinder_list,
            "/snapshots/detail",
            "snapshots",
            params,
            microversion=SNAPSHOT_MICROVERSION,
        )
        snapshots = [snapshot_from(x) for x in found]
        # The filter is the API's; the check is Kumo's own (an older Cinder ignores it).
        return [s for s in snapshots if metadata.items() <= s.metadata.items()]

    async def create_snapshot(
        self, volume_id: str, *, name: str, description: str, metadata: dict[str, str]
    ) -> model.Snapshot:
        body = {
            "volume_id": volume_id,
            "name": name,
            "description": description,
            "metadata": metadata,
            "force": True,
        }
        created = await self._call(
            "create snapshot",
            self._cinder,
            "post",
            "/snapshots",
            microversion=SNAPSHOT_MICROVERSION,
            json={"snapshot": body},
            field="spec.snapshotBeforeReplace",
        )
        return snapshot_from(created["snapshot"])

    async def set_snapshot_metadata(self, snapshot_id: str, metadata: dict[str, str]) -> None:
        await self._call(
            "set snapshot metadata",
            self._cinder,
            "put",
            f"/snapshots/{snapshot_id}/metadata",
            microversion=SNAPSHOT_MICROVERSION,
            json={"metadata": metadata},
        )

    async def delete_snapshot(self, snapshot_id: str) -> None:
        try:
            await self._call(
                "delete snapshot",
                self._cinder,
                "delete",
                f"/snapshots/{snapshot_id}",
                microversion=SNAPSHOT_MICROVERSION,
            )
        except TerminalError as error:
            if not isinstance(error.__cause__, os_exc.NotFoundException):
                raise

    def _volume_changing(self, volume_id: str, status: str) -> None:
        self.watch.of(VolumeWatcher).volumes.update(
            volume_id, lambda v: dataclasses.replace(v, status=status)
        )
        self.watch.nudge(VolumeWatcher.service)


def _settled(x: dict[str, Any]) -> bool:
    """Not on its way out: a volume being deleted may leave Cinder's count between a
    page and the count taken after it (cloud/pages.py)."""
    return x.get("status") not in ("deleting", "error_deleting")


def volume_from(x: dict[str, Any]) -> model.Volume:
    image = x.get("volume_image_metadata") or {}
    return model.Volume(
        id=x["id"],
        name=x.get("name") or "",
        status=x.get("status") or "",
        size=int(x.get("size") or 0),
        volume_type=x.get("volume_type"),
        availability_zone=x.get("availability_zone"),
        description=x.get("description"),
        metadata=dict(x.get("metadata") or {}),
        attachments=tuple(
            sorted({a["server_id"] for a in x.get("attachments") or [] if a.get("server_id")})
        ),
        source_image=image.get("image_id"),
        snapshot_id=x.get("snapshot_id"),
        source_volid=x.get("source_volid"),
        created_at=x.get("created_at") or "",
        updated_at=x.get("updated_at") or "",
    )


def snapshot_from(x: dict[str, Any]) -> model.Snapshot:
    return model.Snapshot(
        id=x["id"],
        name=x.get("name") or "",
        status=x.get("status") or "",
        volume_id=x.get("volume_id") or "",
        size=int(x.get("size") or 0),
        created_at=x.get("created_at") or "",
        metadata=dict(x.get("metadata") or {}),
    )

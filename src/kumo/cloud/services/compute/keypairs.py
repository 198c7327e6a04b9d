"""Nova keypair calls. A keypair belongs to the credentials' user and is addressed by
name; it has no tags, metadata or description and cannot be changed, only deleted and
made again. Kumo's marker is the last word of the public key's comment, which Nova
stores and shows back as given.

Reads answer from the cloud watch's cache (:class:`~kumo.cloud.services.compute.watch.KeyPairWatcher`
lists every keypair of the user each interval); Kumo's writes go to the API, then into
the cache.
"""

from __future__ import annotations

from typing import Any

from kumo.cloud import model
from kumo.cloud.base import CloudBase
from kumo.cloud.cache import GONE
from kumo.cloud.services.compute.watch import KeyPairWatcher


class KeyPairsCalls(CloudBase):
    async def fetch_keypairs(self) -> list[model.KeyPair]:
        """Every keypair of the credentials' user, with its public key (one call)."""
        found = await self._call("list keypairs", lambda: list(self.conn.compute.keypairs()))
        return [_keypair(k) for k in found]

    async def get_keypair(self, name: str) -> model.KeyPair | None:
        """The keypair of that name, or None."""
        hit = self.watch.of(KeyPairWatcher).keypairs.lookup(name)
        if isinstance(hit, model.KeyPair):
            return hit
        if hit is GONE:
            return None
        found = await self._get("get keypair", self.conn.compute.get_keypair, name)
        return _keypair(found) if found is not None else None

    async def list_owned_keypairs(self, uid: str) -> list[model.KeyPair]:
        """Keypairs whose public key carries the ownership marker of ``uid``."""
        cache = self.watch.of(KeyPairWatcher).keypairs
        if cache.answers_for(uid):
            return cache.owned_by(uid)
        listed = await self._relist(cache, uid, self.fetch_keypairs)
        return [k for k in listed if model.keypair_owner(k.public_key) == uid]

    async def create_keypair(self, name: str, public_key: str) -> model.KeyPair:
        owner = model.keypair_owner(public_key) or ""
        created = await self._create(
            "create keypair",
            self.conn.compute.create_keypair,
            resolved=[],
            in_doubt=(self.watch.of(KeyPairWatcher).keypairs, owner),
            name=name,
            public_key=public_key,
            field="spec.publicKey",
        )
        keypair = _keypair(created)
        if not keypair.public_key:  # Nova answers an import with the key; be sure anyway
            keypair = model.KeyPair(name, public_key, keypair.fingerprint, keypair.type)
        self.watch.of(KeyPairWatcher).keypairs.put(keypair)
        return keypair

    async def delete_keypair(self, name: str) -> None:
        """Delete it (Nova does at once); a keypair already gone is fine."""
        await self._call(
            "delete keypair", self.conn.compute.delete_keypair, name, ignore_missing=True
        )
        self.watch.of(KeyPairWatcher).keypairs.forget(name)
        self.watch.nudge(KeyPairWatcher.service)


def _keypair(k: Any) -> model.KeyPair:
    return model.KeyPair(
        name=k.name or "",
        public_key=k.public_key or "",
        fingerprint=k.fingerprint,
        type=getattr(k, "type", None) or "ssh",
    )

"""The ConfigMaps objects read, followed by name: no ConfigMap is listed or watched.

A VirtualMachine's ``initScript.configMapRef`` and a KeyPair's
``publicKeyFrom.configMapRef`` name a ConfigMap of their own namespace
(kumo.kinds.references declares which fields). Kumo reads exactly those, with a get by
name, and nothing else: no listing or watch of every ConfigMap of the cluster
(``kube-system``'s included), and RBAC grants ``get`` only.

A change must still reach the objects that read it (a new script replaces the server, a
new key the keypair): on the leader, :class:`ConfigMapFollower` re-reads every
referenced ConfigMap every :data:`FOLLOW_SECONDS` and re-queues its readers when its
content (``data`` and ``binaryData``) differs from what was read before — by this loop or
by a pass (passes read through :meth:`ConfigMapFollower.get`; what the first one read is
the baseline, so a change between a pass and the next round is not missed). A ConfigMap
that appears, or goes, is a change too. The cost is one get per referenced ConfigMap per
round, however many objects name it.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from typing import Any

from kumo.engine.objects import Body, Key, Store
from kumo.kinds import references
from kumo.runtime import periodic

log = logging.getLogger("kumo.configmaps")

#: How often the leader re-reads each referenced ConfigMap.
FOLLOW_SECONDS = 10.0
ABSENT = "absent"

Name = tuple[str, str]  # (namespace, name)


def referenced(store: Store) -> dict[Name, set[Key]]:
    """Every ConfigMap a cached object names in a declared reference → those objects."""
    readers: dict[Name, set[Key]] = {}
    for ref in references.readers_of("ConfigMap"):
        for body in store.list(ref.referrer):
            name = references.referenced_name(body.get("spec") or {}, ref.field)
            if not name:
                continue
            meta = body["metadata"]
            namespace = meta.get("namespace", "default")
            readers.setdefault((namespace, name), set()).add(
                Key(ref.referrer, namespace, meta["name"])
            )
    return readers


def content(body: Body | None) -> str:
    """What of a ConfigMap a reader may read (its data), as a digest; ``absent``."""
    if body is None:
        return ABSENT
    data = {"data": body.get("data") or {}, "binaryData": body.get("binaryData") or {}}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


class ConfigMapFollower:
    def __init__(self, every: float = FOLLOW_SECONDS) -> None:
        self.every = every
        #: The content each followed ConfigMap had when last read.
        self._seen: dict[Name, str] = {}

    async def get(self, kube: Any, namespace: str, name: str) -> Body | None:
        """A pass's read: what it read is the baseline if there is none yet (a later
        pass reading a newer content does not hide the change from the other readers)."""
        body: Body | None = await kube.get_config_map(namespace, name)
        self._seen.setdefault((namespace, name), content(body))
        return body

    async def follow(self, kube: Any, store: Store) -> list[Key]:
        """One round: re-read each referenced ConfigMap; the readers of those whose
        content changed since the last read."""
        readers = referenced(store)
        for gone in set(self._seen) - set(readers):  # no object names it any more
            del self._seen[gone]
        changed: list[Key] = []
        for (namespace, name), keys in sorted(readers.items()):
            try:
                body = await kube.get_config_map(namespace, name)
            except Exception as error:  # the next round reads it again
                log.debug("ConfigMap %s/%s could not be read (%s)", namespace, name, error)
                continue
            now = content(body)
            before = self._seen.get((namespace, name))
            self._seen[(namespace, name)] = now
            if before is not None and before != now:
                log.info("ConfigMap %s/%s changed: %d reader(s)", namespace, name, len(keys))
                changed.extend(sorted(keys))
        return changed

    async def run(self, kube: Any, store: Store, enqueue: Callable[[Key], Any]) -> None:
        """The leader's loop (the first round at once: it sets the baselines)."""
        await periodic.follow(lambda: self.follow(kube, store), enqueue, self.every)


class FollowingKube:
    """The Kubernetes client as passes use it: the same, but its ConfigMap reads go
    through the follower (they set the baseline of what was read)."""

    def __init__(self, kube: Any, follower: ConfigMapFollower) -> None:
        self._kube = kube
        self._follower = follower

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kube, name)

    async def get_config_map(self, namespace: str, name: str) -> Body | None:
        return await self._follower.get(self._kube, namespace, name)

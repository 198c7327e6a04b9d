"""The in-memory object cache the kinds read (fed by kopf's watch events)."""

from __future__ import annotations

from kumo.engine.objects import Body


class MemoryStore:
    def __init__(self) -> None:
        self._objects: dict[tuple[str, str, str], Body] = {}

    def put(self, kind: str, body: Body) -> Body | None:
        """Store ``body`` unless the cache already holds a newer version; return the old one."""
        meta = body["metadata"]
        key = (kind, meta.get("namespace", "default"), meta["name"])
        old = self._objects.get(key)
        if old is not None and _version(old) > _version(body):
            return old
        self._objects[key] = body
        return old

    def remove(self, kind: str, namespace: str, name: str) -> Body | None:
        return self._objects.pop((kind, namespace, name), None)

    def get(self, kind: str, namespace: str, name: str) -> Body | None:
        return self._objects.get((kind, namespace, name))

    def list(self, kind: str, namespace: str | None = None) -> list[Body]:
        return [
            body
            for (k, ns, _), body in self._objects.items()
            if k == kind and (namespace is None or ns == namespace)
        ]


def _version(body: Body) -> int:
    """resourceVersion is opaque, but etcd revisions are integers; fall back to 0."""
    try:
        return int(body["metadata"].get("resourceVersion") or 0)
    except ValueError:
        return 0

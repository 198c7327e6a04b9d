"""The in-memory object cache the kinds read (fed by kopf's watch events).

Indexed like an informer's cache, so what one event costs does not grow with the
number of objects of other kinds, namespaces or groups: objects by kind and namespace
(``list``), by UID (``by_uid``: the owners a cloud watch names), by owner UID
(``owned_by``: a group's members) and by label (``labelled``: the members of the group
a LoadBalancer's pool or a DNSRecord follows, without a scan of the namespace's VMs).
"""

from __future__ import annotations

from collections.abc import Iterable

from kumo.engine.objects import Body

_Name = tuple[str, str]  # (namespace, name)
_Label = tuple[str, str, str, str]  # (kind, namespace, label key, label value)


class MemoryStore:
    def __init__(self) -> None:
        #: kind → namespace → name → body
        self._objects: dict[str, dict[str, dict[str, Body]]] = {}
        self._uids: dict[str, tuple[str, str, str]] = {}  # uid → (kind, namespace, name)
        #: owner uid → kind → {(namespace, name): None}, in the order first seen (from
        #: metadata.ownerReferences)
        self._owned: dict[str, dict[str, dict[_Name, None]]] = {}
        #: (kind, namespace, label key, value) → {name: None}, in the order first seen
        self._labelled: dict[_Label, dict[str, None]] = {}

    def put(self, kind: str, body: Body) -> Body | None:
        """Store ``body`` unless the cache already holds a newer version; return the old one."""
        meta = body["metadata"]
        namespace, name = meta.get("namespace", "default"), meta["name"]
        names = self._objects.setdefault(kind, {}).setdefault(namespace, {})
        old = names.get(name)
        if old is not None and _version(old) > _version(body):
            return old
        names[name] = body
        self._index(kind, namespace, name, body, old)
        return old

    def remove(self, kind: str, namespace: str, name: str) -> Body | None:
        old = self._objects.get(kind, {}).get(namespace, {}).pop(name, None)
        if old is not None:
            self._unindex(kind, namespace, name, old)
        return old

    def get(self, kind: str, namespace: str, name: str) -> Body | None:
        return self._objects.get(kind, {}).get(namespace, {}).get(name)

    def by_uid(self, uid: str) -> tuple[str, Body] | None:
        """The kind and body of the object with ``uid``, if cached."""
        where = self._uids.get(uid)
        if where is None:
            return None
        body = self.get(*where)
        return None if body is None else (where[0], body)

    def owned_by(self, kind: str, uid: str) -> list[Body]:
        """Objects of ``kind`` whose ownerReferences name ``uid`` (a group's members)."""
        found = []
        for namespace, name in self._owned.get(uid, {}).get(kind, ()):
            body = self.get(kind, namespace, name)
            if body is not None:
                found.append(body)
        return found

    def labelled(self, kind: str, namespace: str, key: str, value: str) -> list[Body]:
        """Objects of ``kind`` in ``namespace`` whose label ``key`` is ``value``."""
        names = self._objects.get(kind, {}).get(namespace, {})
        return [names[name] for name in self._labelled.get((kind, namespace, key, value), ())]

    def list(self, kind: str, namespace: str | None = None) -> list[Body]:
        spaces = self._objects.get(kind, {})
        if namespace is not None:
            return list(spaces.get(namespace, {}).values())
        return [body for names in spaces.values() for body in names.values()]

    def _index(self, kind: str, namespace: str, name: str, body: Body, old: Body | None) -> None:
        uid = body["metadata"].get("uid")
        if old is not None and old["metadata"].get("uid") != uid:
            self._unindex(kind, namespace, name, old)
            old = None
        if uid:
            self._uids[uid] = (kind, namespace, name)
        before = _owners(old) if old is not None else set()
        after = _owners(body)
        self._drop_owners(kind, namespace, name, before - after)
        for owner in after - before:
            self._owned.setdefault(owner, {}).setdefault(kind, {})[namespace, name] = None
        had = _labels(old) if old is not None else {}
        has = _labels(body)
        if had != has:
            self._drop_labels(kind, namespace, name, had.items() - has.items())
            for key, value in has.items() - had.items():
                self._labelled.setdefault((kind, namespace, key, value), {})[name] = None

    def _unindex(self, kind: str, namespace: str, name: str, body: Body) -> None:
        uid = body["metadata"].get("uid")
        if uid and self._uids.get(uid) == (kind, namespace, name):
            del self._uids[uid]
        self._drop_owners(kind, namespace, name, _owners(body))
        self._drop_labels(kind, namespace, name, _labels(body).items())

    def _drop_labels(
        self, kind: str, namespace: str, name: str, labels: Iterable[tuple[str, str]]
    ) -> None:
        for key, value in labels:
            names = self._labelled.get((kind, namespace, key, value))
            if names is not None:
                names.pop(name, None)
                if not names:
                    del self._labelled[kind, namespace, key, value]

    def _drop_owners(self, kind: str, namespace: str, name: str, owners: set[str]) -> None:
        for owner in owners:
            names = self._owned.get(owner, {}).get(kind)
            if names is not None:
                names.pop((namespace, name), None)
                if not names:
                    del self._owned[owner][kind]
                    if not self._owned[owner]:
                        del self._owned[owner]


def _owners(body: Body) -> set[str]:
    refs = body["metadata"].get("ownerReferences") or []
    return {ref["uid"] for ref in refs if ref.get("uid")}


def _labels(body: Body) -> dict[str, str]:
    return body["metadata"].get("labels") or {}


def _version(body: Body) -> int:
    """resourceVersion is opaque, but etcd revisions are integers; fall back to 0."""
    try:
        return int(body["metadata"].get("resourceVersion") or 0)
    except ValueError:
        return 0

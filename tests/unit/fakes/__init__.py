"""In-memory stand-ins for the engine's collaborators, for unit tests only.

The real-API tests under tests/integration exercise the real kube-apiserver and
OpenStack; these fakes let the decisions be tested state-in/state-out in
milliseconds.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from typing import Any, TypeVar

from kumo.api.kinds import KINDS, VIRTUAL_MACHINE, KindInfo
from kumo.cloud.dryrun import DryRunCloud
from kumo.engine.errors import ObjectGone, TransientError
from kumo.engine.objects import Body, Context, External, Obj
from kumo.engine.reconciler import Engine
from kumo.kinds.labels import GROUP_LABEL
from kumo.runtime.store import MemoryStore
from tests.unit.fakes.servers import FakeServers, new_id

__all__ = ["FakeServers", "new_id"]

C = TypeVar("C")

#: When a test's user deleted an object (``World.delete``).
DELETED_AT = "2026-11-22T00:00:00Z"


def make_body(
    info: KindInfo, name: str, spec: Body, namespace: str = "default", **meta: Any
) -> Body:
    return {
        "apiVersion": info.api_version,
        "kind": info.kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": meta.pop("uid", f"uid-{name}"),
            "generation": 1,
            "resourceVersion": "1",
            "creationTimestamp": "2026-11-22T00:00:00Z",
            **meta,
        },
        "spec": spec,
    }


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class RecordingEvents:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def emit(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        self.events.append((obj.name, type_, reason, message))

    def reasons(self) -> list[str]:
        return [e[2] for e in self.events]


class FakeKube:
    """Writes land in the store at once (as if the watch echoed them instantly).

    Like the API server, ``set_finalizers`` refuses (409, as the real client raises it)
    a body whose ``metadata.resourceVersion`` is no longer the stored one: KubeClient
    sends that resourceVersion in the patch, so a finalizer list computed from a stale
    read can never overwrite a newer one.
    """

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self._rv = itertools.count(2)
        self.secret_reads: list[tuple[str, str]] = []
        self.external_reads: list[tuple[str, str, str]] = []
        self.patches: list[tuple[str, Body]] = []
        self._made: dict[str, int] = {}  # name → how many objects of it were created

    def _save(self, kind: str, body: Body) -> Body:
        body["metadata"]["resourceVersion"] = str(next(self._rv))
        meta = body["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self.store.remove(kind, meta["namespace"], meta["name"])
        else:
            self.store.put(kind, body)
        return copy.deepcopy(body)

    def _current(self, info: KindInfo, namespace: str, name: str) -> Body:
        body = self.store.get(info.kind, namespace, name)
        if body is None:  # KubeClient's writes answer 404 so
            raise ObjectGone(info.kind, namespace, name)
        return copy.deepcopy(body)

    async def patch_status(self, obj: Obj, status: Body) -> Body:
        body = self._current(obj.info, obj.namespace, obj.name)
        merged = dict(body.get("status") or {})
        for key, value in status.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        body["status"] = merged
        return self._save(obj.info.kind, body)

    async def set_finalizers(self, obj: Obj, finalizers: list[str]) -> Body:
        body = self._current(obj.info, obj.namespace, obj.name)
        sent = obj.meta.get("resourceVersion")
        stored = body["metadata"].get("resourceVersion")
        if sent is not None and sent != stored:
            raise TransientError(
                "KubernetesConflict",
                f"PATCH {obj.info.plural}/{obj.name}: Operation cannot be fulfilled on "
                f"{obj.info.plural}.kumo.dev {obj.name!r}: the object has been modified; "
                "please apply your changes to the latest version and try again",
            )
        body["metadata"]["finalizers"] = finalizers
        return self._save(obj.info.kind, body)

    async def create(self, info: KindInfo, namespace: str, body: Body) -> Body:
        body = copy.deepcopy(body)
        meta = body["metadata"]
        if "generateName" in meta:
            meta["name"] = meta.pop("generateName") + new_id("x")[-4:]
        # Each object its own UID, as the API server gives: a name made again (an
        # ordinal member replaced) gets another (``uid-<name>`` the first time).
        made = self._made[meta["name"]] = self._made.get(meta["name"], 0) + 1
        uid = f"uid-{meta['name']}" + (f"-{made}" if made > 1 else "")
        meta.update(namespace=namespace, uid=uid, generation=1)
        meta.setdefault("creationTimestamp", "2026-11-22T00:00:00Z")
        return self._save(info.kind, body)

    async def patch(self, info: KindInfo, namespace: str, name: str, patch: Body) -> Body:
        """A JSON merge patch (RFC 7386), as KubeClient.patch sends."""
        self.patches.append((name, copy.deepcopy(patch)))
        body = self._current(info, namespace, name)
        return self._save(info.kind, merge_patch(body, patch))

    async def delete(self, info: KindInfo, namespace: str, name: str) -> None:
        body = self.store.get(info.kind, namespace, name)
        if body is None:
            return
        body = copy.deepcopy(body)
        body["metadata"]["deletionTimestamp"] = "2026-11-22T00:00:00Z"
        self._save(info.kind, body)

    async def get_config_map(self, namespace: str, name: str) -> Body | None:
        return self.store.get("ConfigMap", namespace, name)

    async def get_secret(self, namespace: str, name: str) -> Body | None:
        self.secret_reads.append((namespace, name))
        return self.store.get("Secret", namespace, name)

    async def get_external(self, ref: External, namespace: str, name: str) -> Body | None:
        """Another API's object (a CAPI Cluster, Machine): the store holds it by kind."""
        self.external_reads.append((ref.kind, namespace, name))
        found = self.store.get(ref.kind, namespace, name)
        return copy.deepcopy(found) if found is not None else None


class World:
    """A store, a fake kube over it, recorded events and a fake cloud: one test's universe."""

    def __init__(self, cloud: Any | None = None) -> None:
        self.store = MemoryStore()
        self.kube = FakeKube(self.store)
        self.events = RecordingEvents()
        self.cloud: Any = cloud if cloud is not None else FakeServers()
        #: ``Context.import_gate`` of the passes (None: imports of unmarked resources allowed).
        self.import_gate: Any = None

    def ctx(self) -> Context:
        return Context(
            cloud=self.cloud,
            kube=self.kube,
            store=self.store,
            events=self.events,
            import_gate=self.import_gate,
        )

    def add(self, info: KindInfo, name: str, spec: Body, **meta: Any) -> Body:
        body = make_body(info, name, spec, **meta)
        self.store.put(info.kind, body)
        return body

    def stored(self, kind: str, name: str, namespace: str = "default") -> Body:
        """The stored body itself (not a copy): tests edit it to play the user or the API."""
        body = self.store.get(kind, namespace, name)
        assert body is not None, f"{kind} {name} is gone"
        return body

    def cloud_as(self, kind: type[C]) -> C:
        """The fake cloud the test built the world with, as its class (for mypy)."""
        assert isinstance(self.cloud, kind), f"the cloud is a {type(self.cloud).__name__}"
        return self.cloud

    def add_vm(
        self,
        name: str,
        ip: str | None = None,
        *,
        ready: bool | None = True,
        group: str | None = None,
        spec: Body | None = None,
        status: Body | None = None,
        **meta: Any,
    ) -> Body:
        """A VirtualMachine as its own passes would have left it (none runs here): its
        ``status.ip``, its Ready condition (``ready`` None: none yet), a member of
        ``group`` by its label; ``status`` adds fields (``id``, ``addresses``, ``phase``),
        ``meta`` goes to its metadata. The stored body."""
        if group:
            meta["labels"] = {GROUP_LABEL: group}
        body = make_body(VIRTUAL_MACHINE, name, spec or {}, **meta)
        body["status"] = {"ip": ip}
        if ready is not None:
            body["status"]["conditions"] = [{"type": "Ready", "status": str(ready)}]
        body["status"].update(status or {})
        self.store.put(VIRTUAL_MACHINE.kind, body)
        return body

    def condition(self, kind: str, name: str, type_: str = "Ready") -> Body:
        """The object's ``type_`` condition as stored (the test fails when it has none)."""
        status = self.stored(kind, name).get("status") or {}
        found = [c for c in status.get("conditions") or [] if c["type"] == type_]
        assert found, f"{kind} {name} has no {type_} condition: {status}"
        return copy.deepcopy(found[0])

    def delete(self, kind: str, name: str, at: str = DELETED_AT) -> None:
        """Its user deletes the object: the API server marks it, its finalizer holds it."""
        self.stored(kind, name)["metadata"]["deletionTimestamp"] = at

    def settle(self, actuator: Any, name: str) -> None:
        """A pass, the cloud finishing what it was asked (``settle``: servers ACTIVE),
        another pass: the object as it stands once its resource is up."""
        self.run(actuator, name)
        self.cloud.settle()
        self.run(actuator, name)

    def run(self, actuator: Any, name: str, engine: Engine | None = None) -> float | None:
        """One engine pass over the object ``name`` of the actuator's kind."""
        obj = self.obj(actuator.info, name)
        return asyncio.run((engine or Engine(dry_run=DryRunCloud)).run(actuator, self.ctx(), obj))

    def converge(self, actuator: Any, name: str, limit: int = 60) -> int:
        """Run passes until the engine stops asking to look again; return how many."""
        engine = Engine(dry_run=DryRunCloud)
        for passes in range(1, limit + 1):
            if self.run(actuator, name, engine) is None:
                return passes
        status = self.obj(actuator.info, name).status
        raise AssertionError(f"not converged after {limit} passes: {status}")

    def obj(self, info: KindInfo, name: str, namespace: str = "default") -> Obj:
        body = self.store.get(info.kind, namespace, name)
        assert body is not None, f"{info.kind} {name} is gone"
        return Obj(info, copy.deepcopy(body))


KIND = {k.kind: k for k in KINDS}


def fakes() -> dict[type, type]:
    """Each port part (kumo.ports.PORTS but CloudPort) → its unit fake: the class of a
    module of this package that inherits it (so mypy checks the fake against the port).
    tests/unit/test_services.py checks that every port has one."""
    import importlib
    import pkgutil

    from kumo import ports

    found: dict[type, type] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            if not isinstance(value, type) or value.__module__ != module.__name__:
                continue
            for port in ports.PORTS:
                if port is not ports.CloudPort and port in value.__bases__:
                    found[port] = value
    return found

"""A read-only view of a custom object's body, and the contract each kind implements.

Kinds see objects through :class:`Obj` (never raw kopf bodies) and talk to the
outside through :class:`Context`, whose collaborators are protocols: the runtime
passes real clients, unit tests pass in-memory fakes.
"""

from __future__ import annotations

import copy
import logging
import marshal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from pydantic import BaseModel

from kumo.api.common import LEGACY_FINALIZER_GROUP
from kumo.ports import Cloud

if TYPE_CHECKING:
    from kumo.api.kinds import KindInfo
    from kumo.engine.result import Result

Body = dict[str, Any]


class Key(NamedTuple):
    """Identity of an object in the work queue."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


@dataclass
class Obj:
    """A custom object as the engine and kinds see it."""

    info: KindInfo
    body: Body

    @property
    def key(self) -> Key:
        return Key(self.info.kind, self.namespace, self.name)

    @property
    def meta(self) -> Body:
        return self.body.get("metadata", {})

    @property
    def name(self) -> str:
        return str(self.meta["name"])

    @property
    def namespace(self) -> str:
        return str(self.meta.get("namespace", "default"))

    @property
    def uid(self) -> str:
        return str(self.meta.get("uid", ""))

    @property
    def generation(self) -> int | None:
        return self.meta.get("generation")

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.meta.get("labels") or {})

    @property
    def annotations(self) -> dict[str, str]:
        return dict(self.meta.get("annotations") or {})

    @property
    def finalizers(self) -> list[str]:
        return list(self.meta.get("finalizers") or [])

    @property
    def deleting(self) -> bool:
        return bool(self.meta.get("deletionTimestamp"))

    @property
    def spec(self) -> Body:
        return self.body.get("spec") or {}

    @property
    def status(self) -> Body:
        return self.body.get("status") or {}

    @property
    def legacy_finalizer(self) -> str:
        return f"{self.info.singular}.{LEGACY_FINALIZER_GROUP}/finalizer"

    def owned_finalizers(self) -> list[str]:
        """Kumo's finalizer and its Verda alias, as present on the object."""
        mine = {self.info.finalizer, self.legacy_finalizer}
        return [f for f in self.finalizers if f in mine]


class External(NamedTuple):
    """A kind of another API that kinds read by name only (a get: never listed, watched
    or written): Cluster API's Cluster and Machine, read by a KumoCluster or KumoMachine."""

    group: str
    version: str
    kind: str
    plural: str


class Events(Protocol):
    def emit(self, obj: Obj, type_: str, reason: str, message: str) -> None: ...


class KubeApi(Protocol):
    """The Kubernetes calls the engine and the kinds make (the runtime implements it)."""

    async def patch_status(self, obj: Obj, status: Body) -> Body: ...
    async def set_finalizers(self, obj: Obj, finalizers: list[str]) -> Body: ...
    async def create(self, info: KindInfo, namespace: str, body: Body) -> Body: ...
    async def patch(self, info: KindInfo, namespace: str, name: str, patch: Body) -> Body: ...
    async def delete(self, info: KindInfo, namespace: str, name: str) -> None: ...
    async def get_config_map(self, namespace: str, name: str) -> Body | None: ...
    async def get_secret(self, namespace: str, name: str) -> Body | None: ...
    async def get_external(self, ref: External, namespace: str, name: str) -> Body | None:
        """One object of another API (``ref``) by name; None when it does not exist."""
        ...


class Store(Protocol):
    """Read access to the objects the runtime watches (an informer-style cache)."""

    def get(self, kind: str, namespace: str, name: str) -> Body | None: ...
    def owned_by(self, kind: str, uid: str) -> list[Body]:
        """Objects of ``kind`` whose ownerReferences name ``uid`` (indexed: a group's
        members without a scan of every object of the kind)."""
        ...

    def labelled(self, kind: str, namespace: str, key: str, value: str) -> list[Body]:
        """Objects of ``kind`` in ``namespace`` labelled ``key=value`` (indexed: the
        members of a group an aggregate follows, without a scan of the namespace)."""
        ...

    def list(self, kind: str, namespace: str | None = None) -> list[Body]: ...


@dataclass
class Context:
    """What one reconcile may use. ``cloud`` is the adapter for the object's namespace,
    typed by its ports so mypy checks every call a kind makes."""

    cloud: Cloud
    kube: KubeApi
    store: Store
    events: Events
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("kumo"))
    #: Drift saw more than one resource carrying this object's marker: look for
    #: duplicates even though status names the resource (one extra list call).
    audit: bool = False
    #: A dry pass (``kumo plan``, Observe, Report): ``cloud`` records writes instead of
    #: making them, so a kind may list every change it can decide now, not only the first.
    dry_run: bool = False
    #: Kumo only observes: an imported resource is read, never marked; what its import
    #: check finds is reported in ``findings`` instead of failing the pass.
    observe: bool = False
    findings: list[Any] = field(default_factory=list)
    #: Asked before a resource without any Kumo marker is imported or observed: why
    #: that is refused for this object (None: allowed). None here: never refused (a
    #: namespace with its own cloud). The runtime decides (runtime/imports.py).
    import_gate: Callable[[], Awaitable[str | None]] | None = None


class Actuator(Protocol):
    """What each kind implements; the engine does the rest (finalizers, errors, status).

    Obligations:
    * ``reconcile`` is idempotent: observe the cloud, diff against ``spec``, act on the
      difference. Before creating anything, look for a resource carrying the object's
      ownership marker and adopt it; record a new resource's ID at once
      (``ownership.record``, which ``ownership.create_owned`` and the lifecycle call —
      the only status write before the engine's own at the end of the pass). Never
      touch a resource without the marker.
    * Waiting on the cloud is not an error: return a Result with ``requeue_after``.
    * ``finalize`` deletes what the object owns and returns ``done=True`` only when it
      is gone; it must succeed when the resources are already gone.
    * ``release`` (``deletionPolicy: Orphan``) leaves them in the cloud with the marker
      swapped for the orphan mark, so the orphan sweep never deletes them and
      ``spec.import`` can take them over. It runs the one Orphan step
      (``orphan.release_owned``) and returns ``done=True`` only when every resource the
      object owns reads back released from the cloud (the finalizer stays until then);
      it must succeed when repeated, and must not need a valid spec (``spec`` is None
      when it does not validate).
    """

    info: KindInfo
    # Optional: ``coalesce_seconds``, how long the controller waits before a pass that
    # another object's change asks of this kind (dependents), so a burst of changes
    # (a group's members) costs one pass; absent means 0. Or ``coalesce_for(key,
    # store)``: that wait for one dependent (a group's grows with its size).
    # Optional: ``watched_waits``, reasons of the Ready condition whose wait is for
    # something the cloud watch reports (and the pass reads from the watch's cache):
    # the controller stretches such a wait's unchanged polls, as a deletion's.

    async def reconcile(self, ctx: Context, obj: Obj, spec: Any) -> Result: ...
    async def finalize(self, ctx: Context, obj: Obj, spec: Any | None) -> Result: ...
    async def release(self, ctx: Context, obj: Obj, spec: Any | None) -> Result: ...
    def dependents(self, kind: str, body: Body, store: Store) -> list[Key]: ...


def parse_spec(model: type[BaseModel], spec: Body) -> BaseModel:
    return model.model_validate(spec)


def copy_body(value: Any) -> Any:
    """A deep copy of a Kubernetes body (JSON: dicts, lists, scalars), several times
    faster than ``copy.deepcopy``, which the controller paid for every event and pass on
    bodies whose status lists every member of a group. Anything else is deep-copied.

    A body of plain builtins (what a watch or the API server gives) makes a round trip
    through ``marshal``, in C: ~5x faster again than the walk below on a LoadBalancer
    whose status lists 300 members (a copy per event and per pass, so it is what grows
    with a group's size). marshal refuses anything but exact builtin types (a dict
    subclass, a datetime): those take the walk."""
    try:
        return marshal.loads(marshal.dumps(value))
    except ValueError:
        return _copy_walk(value)


def _copy_walk(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: copy_body(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_body(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return copy.deepcopy(value)

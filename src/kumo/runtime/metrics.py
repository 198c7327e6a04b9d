"""Prometheus metrics of the operator."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from kumo import __version__

RECONCILES = Counter(
    "kumo_reconciles_total",
    "Reconciles run (outcome: done, requeue, or error: the pass ended in an error)",
    ["kind", "outcome"],
)
RECONCILE_SECONDS = Histogram("kumo_reconcile_seconds", "Time per reconcile", ["kind"])
QUEUE_DEPTH = Gauge("kumo_queue_depth", "Objects waiting to be reconciled")
DRIFTED = Counter(
    "kumo_drift_detected_total", "Objects enqueued because their cloud resources changed", ["kind"]
)
NOTIFICATIONS = Counter(
    "kumo_cloud_notifications_total",
    "Cloud notifications about a watched project's resources (each pokes its watches)",
    ["service", "event_type"],
)
ORPHANS = Gauge(
    "kumo_orphaned_resources",
    "Cloud resources carrying the marker of an object the API server does not have "
    '(kept="true": the sweep as set up never deletes them: data, report mode)',
    ["kind", "kept"],
)
ORPHAN_SWEEPS = Counter(
    "kumo_orphan_sweeps_total", "Orphan sweeps that judged at least one project"
)
ORPHANS_DELETED = Counter(
    "kumo_orphans_deleted_total", "Orphaned cloud resources the sweep deleted", ["kind"]
)
ORPHAN_SWEEP_SUSPENDED = Gauge(
    "kumo_orphan_sweep_suspended",
    "1 while the sweep deletes nothing because too many owners look missing at once",
)
QUEUE_DUE = Gauge("kumo_queue_due", "Objects due for a reconcile now (the backlog)")
QUEUE_OLDEST_DUE = Gauge(
    "kumo_queue_oldest_due_seconds", "How long the longest-waiting due object has been due"
)
LEADER = Gauge("kumo_leader", "1 while this process leads (reconciles), else 0")
BUILD_INFO = Gauge("kumo_build_info", "Always 1; the running version", ["version"])
BUILD_INFO.labels(__version__).set(1)


class ObjectCounts(Collector):
    """``kumo_objects{kind,condition}``: the cached objects per kind whose Ready, Stalled
    or Reconciling condition is True, counted at each scrape (from ``source``: the
    controller's store)."""

    CONDITIONS = ("Ready", "Stalled", "Reconciling")

    def __init__(self) -> None:
        self.source: Callable[[], Iterable[tuple[str, Iterable[Mapping[str, Any]]]]] | None = None

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "kumo_objects",
            "Objects per kind whose condition (Ready, Stalled, Reconciling) is True",
            labels=["kind", "condition"],
        )
        for kind, bodies in self.source() if self.source is not None else ():
            counts = dict.fromkeys(self.CONDITIONS, 0)
            for body in bodies:
                for condition in (body.get("status") or {}).get("conditions") or ():
                    kind_of = condition.get("type")
                    if kind_of in counts and condition.get("status") == "True":
                        counts[kind_of] += 1
            for name, count in counts.items():
                family.add_metric([kind, name], count)
        yield family


OBJECTS = ObjectCounts()
REGISTRY.register(OBJECTS)

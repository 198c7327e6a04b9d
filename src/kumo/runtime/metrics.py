"""Prometheus metrics of the operator."""

from prometheus_client import Counter, Gauge, Histogram

RECONCILES = Counter("kumo_reconciles_total", "Reconciles run", ["kind", "outcome"])
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

"""Health monitors, free of I/O: which of a port's monitors Octavia runs for Kumo, and
what is said about the others.

Octavia runs one health monitor per pool, and the seed lists two per port: Kumo applies
each port's FIRST monitor and reports the rest (``ports[].unappliedMonitors`` in status,
and one ``MonitorsNotApplied`` warning when that list changes), never dropping them
silently. A monitor Kumo did not create that occupies the pool is left alone; then the
first is not applied either.
"""

from __future__ import annotations

from typing import Any

from kumo.api.loadbalancer import Monitor, Port
from kumo.engine.objects import Body
from kumo.ports.model import HealthMonitor, Pool, owner_of

URL_MONITORS = ("http", "https")


def monitor_label(monitor: Monitor) -> str:
    """``https:80/health/ready``: how an unapplied monitor is named in status and events."""
    return f"{monitor.protocol}:{monitor.port}{monitor.endpoint or ''}"


def monitor_port(port: Port) -> int | None:
    """Members carry the applied monitor's port only when it differs from the traffic port
    (Octavia health monitors have no port of their own)."""
    if not port.monitors or port.monitors[0].port == port.real_servers.port:
        return None
    return port.monitors[0].port


def monitor_matches(want: Monitor, monitor: HealthMonitor) -> bool:
    # Octavia types are the upper-cased spec protocols (HTTP, UDP-CONNECT, TLS-HELLO).
    if monitor.type.upper() != want.protocol.upper():
        return False
    if want.protocol in URL_MONITORS:  # Octavia defaults url_path to "/"
        return (monitor.url_path or "/") == (want.endpoint or "/")
    return True


def foreign_monitor(
    port: Port, pool: Pool | None, monitors: dict[str, HealthMonitor], uid: str
) -> bool:
    """A monitor Kumo did not create sits on the pool and differs from the spec's first:
    Kumo leaves it alone, so the spec's monitor is not applied either (``monitors``:
    the load balancer's, by ID)."""
    if pool is None or not port.monitors or not pool.health_monitor_id:
        return False
    current = monitors.get(pool.health_monitor_id)
    return (
        current is not None
        and owner_of(current.tags) != uid
        and not monitor_matches(port.monitors[0], current)
    )


def unapplied_monitors(
    port: Port,
    pool: Pool | None = None,
    monitors: dict[str, HealthMonitor] | None = None,
    uid: str = "",
) -> list[str]:
    """Monitors of ``port`` Octavia is not running for Kumo: all but the first (one
    monitor per pool), and the first too when a foreign monitor occupies the pool."""
    skipped = port.monitors[1:]
    if monitors is not None and foreign_monitor(port, pool, monitors, uid):
        skipped = port.monitors
    return [monitor_label(m) for m in skipped]


def _unapplied_by_port(ports: list[dict[str, Any]]) -> dict[int, list[str]]:
    return {p["port"]: list(p["unappliedMonitors"]) for p in ports if p.get("unappliedMonitors")}


def monitors_warning(old_status: Body, new_ports: list[dict[str, Any]]) -> str | None:
    """The warning to emit when the unapplied monitors changed (once, not every pass)."""
    new = _unapplied_by_port(new_ports)
    if not new or new == _unapplied_by_port(old_status.get("ports") or []):
        return None
    detail = "; ".join(f"port {port}: {', '.join(labels)}" for port, labels in new.items())
    return (
        "Octavia runs one health monitor per pool; Kumo applies the first monitor of "
        f"each port. Not applied: {detail}"
    )

"""Kumo's monitoring on the lab's real Prometheus (dev/prometheus.sh: Debian's package on
127.0.0.1, scraping the suite's operator every 2 s, the shipped rules with every ``for:``
set to 10 s).

* A scale event of 20 VMs: Kumo's own count of its requests (``kumo_cloud_requests_total``)
  per service against what the services' request logs say (bench/reqlog.py), then every
  panel of the shipped dashboard returns series from Prometheus.
* KumoObjectsStalled for real: a VM with an unknown flavor makes it pending, then firing;
  the flavor fixed, the VM becomes Ready and the alert resolves.
"""

from __future__ import annotations

import re
import urllib.request
import uuid
from typing import Any

from bench.lab import LOGS
from bench.reqlog import LogWindow
from tests.integration import prometheus
from tests.integration.helpers import VM_SPEC, apply, vm, wait_ready, wait_reason
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import KumoOperator, get_obj, wait_until
from tests.monitoring import ZERO, queries

#: Kumo's service (the catalog's type) and the request log of the lab's service that
#: only Kumo calls in a test's window: their counts must agree. (Neutron, Glance and
#: Keystone are called by Nova and the other services too: printed, not compared.)
COMPARED = {"compute": "nova", "load-balancer": "octavia", "dns": "designate"}
ALSO_PRINTED = {"network": "neutron", "image": "glance", "identity": "keystone"}
SCALE = 8


def requests_by_service(port: int) -> dict[str, float]:
    """``kumo_cloud_requests_total`` summed per service, read from the operator itself."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    out: dict[str, float] = {}
    for m in re.finditer(r"^kumo_cloud_requests_total\{(.*)\} (\S+)$", text, re.M):
        service = re.search(r'service="([^"]*)"', m[1])
        assert service
        out[service[1]] = out.get(service[1], 0) + float(m[2])
    return out


def scraped(op: KumoOperator) -> bool:
    return bool(prometheus.query(f'up{{job="kumo", instance="127.0.0.1:{op.port}"}} == 1'))


def group(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "VirtualMachineGroup",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "template": dict(VM_SPEC)},
    }


def test_a_scale_of_20_counts_as_the_services_logs_and_every_panel_has_series(
    namespace: str, kumo_operator: KumoOperator, demo_conn: Any
) -> None:
    op = kumo_operator
    wait_until("the lab's Prometheus scraping the suite's operator", lambda: scraped(op), 30)
    apply(namespace, group("fleet", 1))
    wait_ready("vmg", "fleet", namespace, timeout=180)

    before, window = requests_by_service(op.port), LogWindow(LOGS)
    kubectl("scale", "vmg", "fleet", "-n", namespace, f"--replicas={SCALE + 1}")
    wait_until(
        f"{SCALE} more VMs Ready",
        lambda: (
            (g := get_obj("vmg", "fleet", namespace))
            and (g.get("status") or {}).get("readyReplicas") == SCALE + 1
        ),
        300,
    )
    after, logged = requests_by_service(op.port), window.since(demo_conn.current_project_id)
    kumo = {s: int(after.get(s, 0) - before.get(s, 0)) for s in after}
    print(f"\nA scale event of {SCALE} VMs: requests by Kumo's metrics / by the services' logs")
    for service, log in {**COMPARED, **ALSO_PRINTED}.items():
        seen = logged.requests.get(log, 0)
        note = "" if service in COMPARED else "  (the log also has other services' calls)"
        print(f"  {service:14} {kumo.get(service, 0):6} / {log:9} {seen:6}{note}")
    print(f"  all of Kumo's: {sum(kumo.values())} {kumo}")
    assert kumo["compute"] >= SCALE, kumo  # a POST /servers each, at least
    for service, log in COMPARED.items():
        ours, theirs = kumo.get(service, 0), logged.requests.get(log, 0)
        # In-flight requests at the window's two edges (the watch lists all along).
        assert abs(ours - theirs) <= max(3, 0.03 * theirs), (service, ours, theirs)

    # Every panel's query returns series after the scale event (rates over 1m).
    empty: dict[str, str] = {}

    def all_answer() -> bool:
        empty.clear()
        for title, expr in queries():
            if not prometheus.query(expr):
                empty[title] = expr
        return not empty

    try:
        wait_until("every dashboard panel to have series", all_answer, 60)
    except Exception as error:
        raise AssertionError(f"panels without series: {empty}") from error
    # The panels about rare events fall back to 0; those that really had series:
    rare = {t: bool(prometheus.query(e.removesuffix(ZERO))) for t, e in queries() if ZERO in e}
    print(f"  rare-event panels with series of their own: {rare}")


def test_an_unknown_flavor_fires_kumo_objects_stalled_which_resolves_when_fixed(
    namespace: str, kumo_operator: KumoOperator
) -> None:
    op = kumo_operator
    alert = "KumoObjectsStalled"

    def state() -> str:
        found = [a for a in prometheus.alerts(alert) if a["labels"]["kind"] == "VirtualMachine"]
        return found[0]["state"] if found else "inactive"

    wait_until("the lab's Prometheus scraping the suite's operator", lambda: scraped(op), 30)
    wait_until(f"no {alert} left by earlier tests", lambda: state() == "inactive", 60)
    name = f"stalled-{uuid.uuid4().hex[:6]}"
    bad = vm(name)
    bad["spec"]["flavor"] = "no-such-flavor"
    apply(namespace, bad)
    wait_reason("vm", name, namespace, "FlavorNotFound")
    # Pending first (the rule's for: runs), then firing; the 2-s evaluation lets a
    # 0.2-s poll see both.
    wait_until(f"{alert} pending", lambda: state() == "pending", 60, interval=0.2)
    wait_until(f"{alert} firing", lambda: state() == "firing", 60, interval=0.2)
    (firing,) = [a for a in prometheus.alerts(alert) if a["labels"]["kind"] == "VirtualMachine"]
    assert firing["labels"]["severity"] == "warning"
    assert "VirtualMachine object(s) Stalled" in firing["annotations"]["summary"]

    kubectl(
        "patch", "vm", name, "-n", namespace, "--type=merge",
        "-p", '{"spec": {"flavor": "m1.tiny"}}',
    )  # fmt: skip
    wait_ready("vm", name, namespace, timeout=180)
    wait_until(f"{alert} resolved", lambda: state() == "inactive", 60)

"""deploy/monitoring/ as shipped: promtool checks the rules and runs a unit test for every
alert (tests/monitoring/rules-test.yaml), the plain rule file is not stale, every dashboard
query parses, and the ServiceMonitor selects the metrics Service. (The lab's Prometheus
runs them for real: tests/integration/test_monitoring.py.)"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.monitoring import (
    MONITORING,
    ROOT,
    RULE_FILE,
    RULES_TEST,
    alerts,
    panels,
    queries,
)

#: What issue 40 asks an alert for (besides KumoDown and KumoReconcileErrors).
REQUIRED = {
    "KumoObjectsStalled",
    "KumoCloudErrorRate",
    "KumoCloudRateLimited",
    "KumoOrphansFound",
    "KumoOrphanSweepSuspended",
    "KumoNoLeader",
    "KumoBacklogOld",
    "KumoWatchNotListing",
}


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("promtool")
    assert tool, "promtool is missing: bash dev/prometheus.sh install (Debian's prometheus)"
    return subprocess.run([tool, *args], capture_output=True, text=True, cwd=ROOT)


def test_the_rule_file_is_generated_from_the_prometheusrule() -> None:
    check = subprocess.run(
        [sys.executable, str(ROOT / "dev/monitoring/rules.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr


def test_promtool_checks_the_rules() -> None:
    out = promtool("check", "rules", str(RULE_FILE))
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in out.stdout


def test_promtool_unit_tests_pass() -> None:
    out = promtool("test", "rules", str(RULES_TEST))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


def test_every_alert_has_a_unit_test_that_fires_it_and_a_runbook() -> None:
    names = {rule["alert"] for rule in alerts()}
    assert names >= REQUIRED, REQUIRED - names
    fired = {
        case["alertname"]
        for test in yaml.safe_load(RULES_TEST.read_text())["tests"]
        for case in test.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    assert fired == names, names ^ fired
    operations = (ROOT / "docs/operations.md").read_text()
    for rule in alerts():
        assert rule["annotations"]["runbook"] == f"docs/operations.md#{rule['alert'].lower()}"
        assert f"### {rule['alert']}" in operations, f"docs/operations.md: no {rule['alert']}"
        assert rule["labels"]["severity"] in ("warning", "critical")


def test_every_dashboard_query_parses(tmp_path: Path) -> None:
    """promtool parses each panel's query as a recording rule's expression."""
    assert len(panels()) >= 15
    for panel in panels():
        assert panel["targets"] and panel["datasource"]["uid"] == "${datasource}", panel["title"]
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"kumo:dashboard:query{i}", "expr": expr}
                    for i, (_, expr) in enumerate(queries())
                ],
            }
        ]
    }
    path = tmp_path / "dashboard-rules.yaml"
    path.write_text(yaml.safe_dump(rules))
    out = promtool("check", "rules", str(path))
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_servicemonitor_selects_the_metrics_service_and_names_job_kumo() -> None:
    monitor = yaml.safe_load((MONITORING / "servicemonitor.yaml").read_text())
    service = yaml.safe_load((ROOT / "deploy/base/service.yaml").read_text())
    labels = service["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert labels[monitor["spec"]["jobLabel"]] == "kumo"  # the job the alerts name
    assert service["metadata"]["namespace"] in monitor["spec"]["namespaceSelector"]["matchNames"]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    kustomization = yaml.safe_load((MONITORING / "kustomization.yaml").read_text())
    assert set(kustomization["resources"]) == {"servicemonitor.yaml", "prometheusrule.yaml"}
    (dashboard,) = kustomization["configMapGenerator"]
    assert dashboard["files"] == ["kumo-dashboard.json"]


@pytest.mark.parametrize("path", sorted(MONITORING.glob("*.yaml")), ids=lambda p: p.name)
def test_manifests_parse(path: Path) -> None:
    assert yaml.safe_load(path.read_text())

"""Kumo's monitoring as shipped (deploy/monitoring/): the alerts' promtool tests
(rules-test.yaml) and what the unit and lab tests share: the dashboard's queries."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "deploy" / "monitoring"
DASHBOARD = MONITORING / "kumo-dashboard.json"
RULE = MONITORING / "prometheusrule.yaml"
RULE_FILE = MONITORING / "prometheus-rules.yaml"
RULES_TEST = Path(__file__).resolve().parent / "rules-test.yaml"
#: Grafana's variables in the queries, as a Prometheus query needs them.
VARIABLES = {"$__rate_interval": "1m", "${__rate_interval}": "1m"}
#: The fallback of the panels about rare events (errors, waits, drift, orphans): a 0
#: instead of "No data" while nothing happened.
ZERO = " or on () vector(0)"


def alerts() -> list[dict[str, Any]]:
    """The PrometheusRule's alerting rules."""
    spec = yaml.safe_load(RULE.read_text())["spec"]
    return [rule for group in spec["groups"] for rule in group["rules"] if "alert" in rule]


def panels() -> list[dict[str, Any]]:
    """The dashboard's panels with queries (rows aside)."""
    return [p for p in json.loads(DASHBOARD.read_text())["panels"] if p["type"] != "row"]


def queries() -> list[tuple[str, str]]:
    """(panel title, PromQL) for every target of every panel, variables filled in."""
    found = []
    for panel in panels():
        for target in panel["targets"]:
            expr = target["expr"]
            for name, value in VARIABLES.items():
                expr = expr.replace(name, value)
            assert not re.search(r"\$\w", expr), f"{panel['title']}: unknown variable in {expr}"
            found.append((panel["title"], expr))
    return found

"""Kumo's Prometheus rule file from its one source, the PrometheusRule.

    python dev/monitoring/rules.py                      # write deploy/monitoring/prometheus-rules.yaml
    python dev/monitoring/rules.py --check              # exit 1 when that file is stale
    python dev/monitoring/rules.py --lab-for 10s -o F   # the lab's variant (dev/prometheus.sh)

deploy/monitoring/prometheusrule.yaml (for the Prometheus Operator) is the source; the
plain rule file beside it is its ``spec`` for a Prometheus without the operator, and the
lab's is the same with every ``for:`` set to ``--lab-for`` so that an alert pends and
fires within a test (the expressions are the shipped ones, unchanged).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "deploy" / "monitoring" / "prometheusrule.yaml"
TARGET = ROOT / "deploy" / "monitoring" / "prometheus-rules.yaml"
HEADER = (
    "# Generated from deploy/monitoring/prometheusrule.yaml by dev/monitoring/rules.py\n"
    "# (make monitoring); do not edit. For a Prometheus without the Prometheus Operator:\n"
    "# name it in rule_files (docs/operations.md).\n"
)


def rule_file(lab_for: str | None = None) -> str:
    spec: dict[str, Any] = yaml.safe_load(SOURCE.read_text())["spec"]
    if lab_for is not None:
        for group in spec["groups"]:
            for rule in group["rules"]:
                if "for" in rule:
                    rule["for"] = lab_for
    body = yaml.safe_dump({"groups": spec["groups"]}, sort_keys=False, width=100)
    header = HEADER if lab_for is None else f"# The lab's variant: every for: is {lab_for}.\n"
    return header + body


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="fail when the file is stale")
    parser.add_argument("--lab-for", help="set every rule's for: to this (the lab)")
    parser.add_argument("-o", "--output", type=Path, default=TARGET)
    args = parser.parse_args()
    text = rule_file(args.lab_for)
    if args.check:
        if not TARGET.exists() or TARGET.read_text() != text:
            print(f"{TARGET.relative_to(ROOT)} is stale: run make monitoring", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

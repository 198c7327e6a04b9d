"""deploy/helm/kumo is generated from deploy/ (dev/helm/chart.py, `make helm`): this
fails when deploy/ (or `kumo crds` / `kumo rbac` behind it) changed and the chart was
not generated again. Helm itself renders the chart in tests/integration/test_helm.py."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def chart_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("helm_chart", REPO / "dev/helm/chart.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["helm_chart"] = module
    spec.loader.exec_module(module)
    return module


def test_the_chart_is_generated_from_deploy() -> None:
    chart = chart_module()
    want = chart.generate()
    have = chart.read(chart.CHART)
    stale = sorted(name for name in set(want) | set(have) if want.get(name) != have.get(name))
    assert not stale, f"deploy/helm/kumo is stale ({', '.join(stale)}): run `make helm`"


def test_every_template_but_the_namespace_follows_the_release_namespace() -> None:
    chart = chart_module()
    for name, text in chart.read(chart.CHART).items():
        if name.startswith("templates/"):
            assert "kumo-system" not in text, name

"""The `kumo` command's surface."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kumo.api.kinds import KINDS
from kumo.cli import build_parser, main


def test_crds_prints_every_kind(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["spec"]["names"]["kind"] for d in docs] == [info.kind for info in KINDS]


def test_run_options_have_production_defaults() -> None:
    args = build_parser().parse_args(["run", "--clouds-yaml", "c.yaml"])
    assert args.drift_seconds < 60, "out-of-band changes must be caught well under a minute"
    assert args.metrics_address == "127.0.0.1"
    assert args.cloud_concurrency > 0 and args.cloud_rate > 0


def test_argocd_cm_writes_the_patch_and_component_beside_the_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "health.lua").write_text("return {status = 'Healthy'}\n")
    assert main(["argocd-cm", "--component", str(tmp_path)]) == 0
    patch = yaml.safe_load((tmp_path / "argocd-cm.yaml").read_text())
    assert patch["metadata"]["name"] == "argocd-cm"
    assert len(patch["data"]) == len(KINDS)
    assert yaml.safe_load((tmp_path / "kustomization.yaml").read_text())["kind"] == "Component"
    assert main(["argocd-cm", "--component", str(tmp_path), "--stdout"]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == patch

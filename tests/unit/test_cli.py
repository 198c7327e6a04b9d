"""The `kumo` command's surface."""

from __future__ import annotations

import pytest
import yaml

from kumo.api.kinds import KINDS
from kumo.cli import build_parser, main
from kumo.cloud.tenancy import Rules
from kumo.runtime.operator import OperatorOptions


def test_crds_prints_every_kind(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["spec"]["names"]["kind"] for d in docs] == [info.kind for info in KINDS]


def test_run_options_have_production_defaults() -> None:
    args = build_parser().parse_args(["run", "--clouds-yaml", "c.yaml"])
    assert args.drift_seconds < 60, "out-of-band changes must be caught well under a minute"
    assert args.metrics_address == "127.0.0.1"
    assert args.cloud_concurrency > 0 and args.cloud_rate > 0


def test_tenancy_flags_reach_the_operator(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[OperatorOptions] = []
    monkeypatch.setattr("kumo.runtime.operator.run_operator", lambda o: seen.append(o) or 0)
    main(["run", "--allowed-auth-hosts", "Keystone.example, k2:5000", "--allow-endpoint-overrides"])
    main(["run"])
    assert [o.tenancy_rules for o in seen] == [
        Rules(allowed_auth_hosts=("k2:5000", "keystone.example"), allow_endpoint_overrides=True),
        Rules(),  # by default: any auth host, no endpoint override
    ]

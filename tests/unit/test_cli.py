"""The `kumo` command's surface."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml

from kumo import __version__, cli
from kumo.api.common import GROUP, INFRA_GROUP
from kumo.api.kinds import KINDS, of_group
from kumo.cli import build_parser, main
from kumo.cloud.tenancy import Rules
from kumo.runtime import commands
from kumo.runtime.operator import OperatorOptions


def test_crds_prints_every_kind(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["spec"]["names"]["kind"] for d in docs] == [
        info.kind for info in KINDS if info.group == GROUP
    ]


def test_crds_of_the_cluster_api_provider(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds", "--group", INFRA_GROUP]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["spec"]["names"]["kind"] for d in docs] == [i.kind for i in of_group(INFRA_GROUP)]
    assert {d["spec"]["group"] for d in docs} == {INFRA_GROUP}
    assert {d["metadata"]["labels"]["cluster.x-k8s.io/v1beta2"] for d in docs} == {"v1alpha1"}


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


def subcommands() -> dict[str, argparse.ArgumentParser]:
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


@pytest.mark.parametrize(
    "argv",
    [[], ["nope"], ["plan", "--bogus"], ["plan", "-o", "yaml"], ["run", "--workers", "many"]],
)
def test_a_usage_error_exits_64_not_2_which_means_changes(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == commands.EXIT_USAGE == cli.EXIT_USAGE == 64
    assert "usage: kumo" in capsys.readouterr().err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0
    assert capsys.readouterr().out == f"kumo {__version__}\n"


def option_blocks(text: str) -> list[str]:
    """The options part of a help text, one string per option (its flags and help)."""
    blocks: list[str] = []
    for line in text.splitlines():
        if line.startswith("  -"):
            blocks.append(line)
        elif blocks and line.startswith("    "):
            blocks[-1] += " " + line.strip()
    return blocks


def test_every_option_of_every_command_shows_its_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "10000")  # no wrapping inside a help text
    for name, parser in subcommands().items():
        blocks = option_blocks(parser.format_help())
        for action in parser._actions:
            if action.default is argparse.SUPPRESS:  # --help, --version
                continue
            flags = parser._get_formatter()._format_action_invocation(action)
            (block,) = [b for b in blocks if b.startswith(f"  {flags} ")]
            assert "(default" in block, f"kumo {name} {flags}: {block}"
    assert "(default: delete)" in subcommands()["run"].format_help(), "the destructive one"


def test_defaults_are_shown_as_a_user_writes_them() -> None:
    values: list[object] = [None, True, False, frozenset(), 20, "kumo"]
    assert [cli.shown_default(v) for v in values] == [
        "none",
        "on",
        "off",
        "none",
        "20",
        "kumo",
    ]
    assert cli.shown_default(frozenset({"volume", "share"})) == "share,volume"


def test_plan_and_orphans_have_no_silent_default_cloud() -> None:
    for name in ("plan", "orphans"):
        args = build_parser().parse_args([name])
        assert args.cloud is None and args.clouds_yaml is None, name
    assert build_parser().parse_args(["run"]).cloud == "kumo", "run keeps its shown default"


def test_a_missing_kubeconfig_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no ./clouds.yaml
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("OS_CLOUD", raising=False)
    monkeypatch.delenv("OS_CLIENT_CONFIG_FILE", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    assert main(["plan"]) == commands.EXIT_ERROR == 1
    err = capsys.readouterr().err
    assert (
        err
        == f"kumo plan: kubeconfig {tmp_path}/.kube/config cannot be read (no --kubeconfig, no $KUBECONFIG)\n"
    )
    assert main(["plan", "--kubeconfig", str(tmp_path / "absent")]) == 1
    assert (
        capsys.readouterr().err == f"kumo plan: kubeconfig {tmp_path / 'absent'} cannot be read\n"
    )
    (tmp_path / "broken").write_text("apiVersion: v1\nkind: Config\n")
    assert main(["orphans", "--kubeconfig", str(tmp_path / "broken"), "--cloud", "x"]) == 1
    err = capsys.readouterr().err
    assert (
        err.startswith("kumo orphans: cloud 'x' (--cloud) but no clouds.yaml")
        and err.count("\n") == 1
    )


def test_a_kubeconfig_kopf_cannot_use_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "kubeconfig").write_text("apiVersion: v1\nkind: Config\n")
    assert main(["plan", "--kubeconfig", str(tmp_path / "kubeconfig")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("kumo plan: the kubeconfig cannot be used: ") and err.count("\n") == 1


@pytest.mark.parametrize("code", [0, 1, 2])
def test_a_commands_exit_code_is_kumos(code: int) -> None:
    async def command(args: object) -> int:
        return code

    assert commands.run("plan", command, argparse.Namespace()) == code


def test_an_unexpected_failure_is_one_line_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    async def command(args: object) -> int:
        raise ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 6443)\nmore")

    assert commands.run("orphans", command, argparse.Namespace()) == 1
    assert capsys.readouterr().err == (
        "kumo orphans: ConnectionRefusedError: [Errno 111] Connect call failed ('127.0.0.1', 6443)\n"
    )


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

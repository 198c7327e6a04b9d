"""`kubectl kumo`'s arguments and exit codes (kumo.runtime.kubectl, kumo.cli)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kumo import cli
from kumo.runtime import kube, kubectl


def test_target_takes_any_name_kubectl_knows() -> None:
    info, name = kubectl.target("vmg/web")
    assert (info.kind, name) == ("VirtualMachineGroup", "web")
    assert kubectl.target("loadbalancers.kumo.dev/front")[0].kind == "LoadBalancer"
    with pytest.raises(kubectl.UsageError, match="KIND/NAME"):
        kubectl.target("vmg")
    with pytest.raises(kubectl.UsageError, match="not a kind of Kumo's"):
        kubectl.target("pod/x")


def test_an_unknown_kind_or_flag_exits_64(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.kubectl_main(["tree", "pod/x"]) == 64
    assert "kubectl kumo tree: 'pod' is not a kind" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        cli.kubectl_main(["tree"])
    assert exited.value.code == 64


def test_no_kubeconfig_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", "")  # restored after: --kubeconfig sets it
    code = cli.kubectl_main(["why", "vm/x", "--kubeconfig", str(tmp_path / "none")])
    assert code == 1
    err = capsys.readouterr().err
    assert err.startswith("kubectl kumo why: kubeconfig ") and err.count("\n") == 1


def test_the_namespace_is_the_contexts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config"
    cluster = "clusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:6443'}\n"
    user = "users:\n- name: u\n  user: {token: t}\n"
    config.write_text(
        cluster + user + "current-context: b\ncontexts:\n"
        "- name: a\n  context: {cluster: c, user: u, namespace: x}\n"
        "- name: b\n  context: {cluster: c, user: u, namespace: team}\n"
    )
    monkeypatch.setenv("KUBECONFIG", str(config))
    assert kube.current_namespace() == "team"
    config.write_text(
        cluster
        + user
        + "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c, user: u}\n"
    )
    assert kube.current_namespace() == "default"
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    assert kube.current_namespace() == "default"


def test_the_package_installs_the_plugin() -> None:
    import tomllib

    pyproject = Path(__file__).resolve().parents[3] / "pyproject.toml"
    scripts = tomllib.loads(pyproject.read_text())["project"]["scripts"]
    assert scripts["kubectl-kumo"] == "kumo.cli:kubectl_main"


def test_orphan_events_are_listed_with_their_advice() -> None:
    event = {
        "metadata": {"namespace": "team"},
        "lastTimestamp": "2026-11-29T06:00:00Z",
        "count": 3,
        "message": "server s-1 (x) carries the marker of object uid u: deleted after the grace."
        "\nTo keep it, remove its marker\nTo delete it: openstack server delete s-1",
    }
    text = kubectl.render_orphan_events([event], "text")
    assert text.startswith("2026-11-29T06:00:00Z team (x3):\n  server s-1")
    assert "\n  To delete it: openstack server delete s-1\n" in text
    assert "no OrphanFound events" in kubectl.render_orphan_events([], "text")
    (row,) = json.loads(kubectl.render_orphan_events([event], "json"))
    assert (row["namespace"], row["count"]) == ("team", 3)

"""`kubectl kumo tree` and `why` on the lab: kubectl finds the plugin on PATH, reads the
cluster with the lab's kubeconfig, and (``--cloud``) the cloud with kumo-demo's
clouds.yaml.

The plugin is run as kubectl runs it: ``kubectl kumo …`` with a ``kubectl-kumo`` on
PATH that is what pip's console script for ``kumo.cli:kubectl_main`` is (the suite must
not reinstall the shared virtualenv to get the real one; tests/unit/test_cli.py checks
that pyproject declares it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.integration.helpers import (
    apply,
    example,
    members_of,
    vm,
    wait_ready,
    wait_reason,
)
from tests.integration.kube_fixtures import KubeEnv

GROUP = "virtualmachinegroup-sample"
LB = "loadbalancer-sample"


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("plugin")
    script = folder / "kubectl-kumo"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nfrom kumo.cli import kubectl_main\n"
        "sys.exit(kubectl_main())\n"
    )
    script.chmod(0o755)
    return folder


def kumo(
    kube: KubeEnv, plugin: Path, *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """``kubectl kumo ARGS`` with the lab's kubeconfig."""
    env = {**os.environ, "PATH": f"{plugin}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(
        [str(kube.kubectl_path), "kumo", *args, "--kubeconfig", str(kube.kubeconfig)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_tree_of_a_group_with_its_load_balancer(
    namespace: str,
    kumo_operator: Any,
    demo_conn: Any,
    openstack_lab: str,
    kube_env: KubeEnv,
    plugin_path: Path,
) -> None:
    ns = namespace
    apply(ns, example("virtualmachinegroup.yaml"))
    apply(ns, example("loadbalancer.yaml"))
    group = wait_ready("vmg", GROUP, ns)
    lb = wait_ready("lb", LB, ns, timeout=240)
    members = {m["metadata"]["name"]: m["status"]["id"] for m in members_of(ns, GROUP)}
    assert len(members) == 2

    out = kumo(
        kube_env, plugin_path, "tree", f"vmg/{GROUP}", "-n", ns, "-o", "json",
        "--cloud", "kumo-demo", "--clouds-yaml", openstack_lab,
    ).stdout  # fmt: skip
    root = json.loads(out)
    assert (root["kind"], root["name"], root["ready"]) == ("VirtualMachineGroup", GROUP, "True")
    (server_group,) = [c for c in root["cloud"] if c["path"] == "serverGroupId"]
    assert server_group["id"] == group["status"]["serverGroupId"]
    assert server_group["cloud"] == "present: server_group"
    assert demo_conn.compute.get_server_group(server_group["id"])

    owned = {c["name"]: c for c in root["children"] if c["via"] == "owns"}
    assert {name: c["id"] for name, c in owned.items()} == members
    for child in owned.values():
        assert (child["ready"], child["cloudState"]) == ("True", "present: server")
        assert demo_conn.compute.get_server(child["id"]).status == "ACTIVE"

    (lb_node,) = [c for c in root["children"] if c["kind"] == "LoadBalancer"]
    assert lb_node["via"] == "used by: spec.ports[].realServers.virtualMachineGroupRef"
    assert (lb_node["id"], lb_node["cloudState"]) == (lb["status"]["id"], "present: loadbalancer")
    pools = {c["path"]: c["id"] for c in lb_node["cloud"] if c["path"].endswith("poolId")}
    assert pools == {f"ports[{p['port']}].poolId": p["poolId"] for p in lb["status"]["ports"]}

    # The text: one line per object, its Ready, reason and cloud ID.
    text = kumo(kube_env, plugin_path, "tree", f"vmg/{GROUP}", "-n", ns).stdout
    lines = text.splitlines()
    assert lines[0].split() == ["NAME", "READY", "REASON", "ID", "STATE"]
    assert lines[1].startswith(f"VirtualMachineGroup/{GROUP} ") and " True " in lines[1]
    for name, server in members.items():
        assert any(f"VirtualMachine/{name}" in line and server in line for line in lines)
    assert any(f"LoadBalancer/{LB}" in line and lb["status"]["id"] in line for line in lines)


def test_why_names_the_missing_network_until_it_exists(
    namespace: str, kumo_operator: Any, kube_env: KubeEnv, plugin_path: Path
) -> None:
    ns = namespace
    network = f"net-{uuid.uuid4().hex[:6]}"
    body = vm("waits")
    body["spec"]["networks"] = [network]
    apply(ns, body)
    wait_reason("vm", "waits", ns, "NetworkNotFound")

    proc = kumo(kube_env, plugin_path, "why", "vm/waits", "-n", ns)
    assert f"Blocked by: Network/{network} (missing)" in proc.stdout
    assert f"To do: create Network {network!r} in namespace {ns}" in proc.stdout
    answer = json.loads(
        kumo(kube_env, plugin_path, "why", "vm/waits", "-n", ns, "-o", "json").stdout
    )
    assert answer["blocker"]["ref"] == f"Network/{network}" and not answer["blocker"]["exists"]

    apply(
        ns,
        {
            "apiVersion": "kumo.dev/v1alpha1",
            "kind": "Network",
            "metadata": {"name": network},
            "spec": {"subnets": [{"cidr": "10.77.0.0/24"}]},
        },
    )
    wait_ready("vm", "waits", ns, timeout=240)
    proc = kumo(kube_env, plugin_path, "why", "vm/waits", "-n", ns)
    assert proc.stdout == "VirtualMachine/waits is Ready.\n"

    # Usage errors and errors exit as the kumo command's do.
    assert kumo(kube_env, plugin_path, "why", "pod/x", check=False).returncode == 64
    missing = kumo(kube_env, plugin_path, "why", "vm/nope", "-n", ns, check=False)
    assert missing.returncode == 1 and "not found" in missing.stderr

"""kstatus — the status library Flux, kpt and Argo CD's health checks build on
(sigs.k8s.io/cli-utils) — reads Kumo's objects right: InProgress while a group builds,
Current once it is Ready, Failed when an object is Stalled on something only its user
can fix. Checked with the real library (tests/kstatus, a small Go program) against
Kumo's objects on the lab."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests import gobuild
from tests.integration.helpers import apply, condition, vm, wait_gone
from tests.integration.kube_fixtures import KubeEnv, kubectl
from tests.integration.kumo_fixtures import get_obj, wait_until


@pytest.fixture(scope="module")
def kstatus_binary() -> str:
    return gobuild.build("kstatus")


def kstatus(binary: str, env: KubeEnv, namespace: str, obj: str) -> dict[str, Any]:
    proc = subprocess.run(
        [binary, "--kubeconfig", str(env.kubeconfig), "--namespace", namespace, obj],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def test_kstatus_in_progress_current_failed(
    kstatus_binary: str, crds: KubeEnv, namespace: str, kumo_operator: Any
) -> None:
    group = {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "VirtualMachineGroup",
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "haPolicy": "soft", "template": vm("x")["spec"]},
    }
    apply(namespace, group)
    # kstatus reads an object without status (Kumo has not seen it yet) as Current: judge
    # only once Kumo wrote status, else the first read could end the wait at once.
    wait_until(
        "Kumo's first status write on the group",
        lambda: ((get_obj("vmg", "web", namespace) or {}).get("status") or {}).get(
            "observedGeneration"
        ),
        60,
        0.1,
    )
    seen: list[str] = []

    def current() -> bool:
        result = kstatus(kstatus_binary, crds, namespace, "virtualmachinegroups/web")
        seen.append(result["status"])
        return result["status"] == "Current"

    wait_until("kstatus Current for the group", current, 300)
    assert "InProgress" in seen, f"never InProgress while building: {seen}"
    assert set(seen) <= {"InProgress", "Current"}, seen
    assert condition(get_obj("vmg", "web", namespace))["status"] == "True"

    bad = vm("bad")
    bad["spec"]["flavor"] = "no-such-flavor"
    apply(namespace, bad)
    failed = wait_until(
        "kstatus Failed for a VM with an unknown flavor",
        lambda: (
            (r := kstatus(kstatus_binary, crds, namespace, "virtualmachines/bad"))["status"]
            == "Failed"
            and r
        ),
        120,
    )
    assert "flavor" in failed["message"].lower(), failed

    kubectl("delete", "vmg/web", "vm/bad", "-n", namespace, "--wait=false")
    wait_gone("vmg", "web", namespace, 300)


def test_kstatus_never_reads_a_paused_object_in_progress(
    kstatus_binary: str, crds: KubeEnv, namespace: str, kumo_operator: Any
) -> None:
    """kstatus has no "suspended": a paused object that was Ready reads Current, one that
    was not (here: paused before its first pass) Failed, its message naming the pause
    (Stalled=True, reason Paused) — never InProgress for as long as the pause lasts."""
    ready = vm("paused-ready")
    apply(namespace, ready)
    wait_until(
        "the VM Ready",
        lambda: condition(get_obj("vm", "paused-ready", namespace)).get("status") == "True",
        240,
    )
    kubectl("annotate", "vm/paused-ready", "-n", namespace, "kumo.dev/paused=true")
    wait_until(
        "Paused on the Ready VM",
        lambda: condition(get_obj("vm", "paused-ready", namespace), "Paused").get("status"),
        60,
    )
    result = kstatus(kstatus_binary, crds, namespace, "virtualmachines/paused-ready")
    assert result["status"] == "Current", result

    new = vm("paused-new")
    new["metadata"]["annotations"] = {"kumo.dev/paused": "true"}
    apply(namespace, new)
    wait_until(
        "Paused on the new VM",
        lambda: condition(get_obj("vm", "paused-new", namespace), "Paused").get("status"),
        60,
    )
    result = kstatus(kstatus_binary, crds, namespace, "virtualmachines/paused-new")
    assert result["status"] == "Failed", result
    assert "kumo.dev/paused" in result["message"], result

    kubectl("annotate", "vm/paused-new", "-n", namespace, "kumo.dev/paused-")
    wait_until(
        "kstatus Current once unpaused and built",
        lambda: (
            kstatus(kstatus_binary, crds, namespace, "virtualmachines/paused-new")["status"]
            == "Current"
        ),
        240,
    )

    kubectl("delete", "vm/paused-new", "vm/paused-ready", "-n", namespace, "--wait=false")
    kubectl("annotate", "vm/paused-ready", "-n", namespace, "kumo.dev/paused-")
    wait_gone("vm", "paused-ready", namespace, 180)
    wait_gone("vm", "paused-new", namespace, 180)

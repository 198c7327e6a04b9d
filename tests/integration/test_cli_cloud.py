"""Issue 41, deliverable 4 on the real lab: the default cloud's Secret rotated under a
running operator, and `kumo plan` choosing the cloud as the openstack CLI does.

- A VM on the default cloud whose Secret holds a wrong password reports
  ``CredentialsInvalid``; the Secret is fixed; the same operator process (same PID, same
  Lease identity) makes the VM Ready in the right project — no restart.
- `kumo plan` takes ``$OS_CLIENT_CONFIG_FILE`` and ``$OS_CLOUD`` (and ./clouds.yaml),
  lists the clouds when none or a wrong one is named, reads ``-f -`` and builds a
  kustomization with the lab's kubectl; exit codes 0 / 2 / 1 / 64.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.helpers import (
    apply,
    condition,
    owned_servers,
    vm,
    wait_ready,
    wait_reason,
)
from tests.integration.kube_fixtures import KubeEnv, kubectl
from tests.integration.kumo_fixtures import (
    LEASE_NAMESPACE,
    REPO_ROOT,
    KumoOperator,
    get_obj,
    like,
    wait_until,
)
from tests.integration.test_security_groups import sg_manifest

DEFAULT_SECRET = "kumo-default-cloud"
CLOUD = "kumo-demo"
KUMO = str(REPO_ROOT / ".venv" / "bin" / "kumo")


def demo_entry(openstack_lab: str, password: str | None = None) -> str:
    """A clouds.yaml with only the kumo-demo entry (its password replaced if given)."""
    entry = yaml.safe_load(Path(openstack_lab).read_text())["clouds"][CLOUD]
    if password is not None:
        entry = {**entry, "auth": {**entry["auth"], "password": password}}
    return yaml.safe_dump({"clouds": {CLOUD: entry}})


def put_default_secret(data: dict[str, str]) -> None:
    """Both keys written in one update (no moment without the Secret, as a rotation)."""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": DEFAULT_SECRET, "namespace": LEASE_NAMESPACE},
        "type": "Opaque",
        "stringData": data,
    }
    kubectl("apply", "-f", "-", input=json.dumps(secret))


@pytest.fixture
def default_secret(kumo_operator: KumoOperator) -> Iterator[None]:
    """deploy/default-cloud's Secret, put back as it was afterwards (other tests, and a
    Deployment of the operator, read it)."""
    out = kubectl(
        "get", "secret", DEFAULT_SECRET, "-n", LEASE_NAMESPACE, "-o", "json", "--ignore-not-found"
    ).stdout
    saved = json.loads(out) if out.strip() else None
    yield
    kubectl("delete", "secret", DEFAULT_SECRET, "-n", LEASE_NAMESPACE, "--ignore-not-found")
    if saved is not None:
        meta = saved["metadata"]
        restored = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": meta["name"],
                "namespace": meta["namespace"],
                "labels": meta.get("labels") or {},
            },
            "type": saved.get("type", "Opaque"),
            "data": saved.get("data") or {},
        }
        kubectl("create", "-f", "-", input=json.dumps(restored))


def test_a_fixed_default_secret_is_used_without_a_restart(
    namespace: str,
    kumo_operator: KumoOperator,
    default_secret: None,
    openstack_lab: str,
    demo_conn: Any,
) -> None:
    put_default_secret(
        {"clouds.yaml": demo_entry(openstack_lab, "not-the-password"), "cloud": CLOUD}
    )
    kumo_operator.stop()
    rotating = like(kumo_operator, "operator-default-cloud.log")
    try:
        rotating.start("--credentials-secret", f"{LEASE_NAMESPACE}/{DEFAULT_SECRET}")
        rotating.wait_role("leader", 90)
        assert rotating.proc is not None
        pid, identity = rotating.proc.pid, rotating.health()["identity"]

        apply(namespace, vm("rotated"))
        refused = wait_reason("vm", "rotated", namespace, "CredentialsInvalid", 120)
        assert f"default Secret {LEASE_NAMESPACE}/{DEFAULT_SECRET}" in refused["message"]
        assert "not-the-password" not in refused["message"]

        put_default_secret({"clouds.yaml": demo_entry(openstack_lab), "cloud": CLOUD})
        # Read again within 30 s, then the VM is looked at at once and builds.
        ready = wait_ready("vm", "rotated", namespace, timeout=240)

        assert rotating.proc is not None and rotating.proc.poll() is None, "still running"
        assert rotating.proc.pid == pid
        assert rotating.health()["identity"] == identity, "the same process leads"
        uid = ready["metadata"]["uid"]
        assert [s.id for s in owned_servers(demo_conn, uid)] == [ready["status"]["id"]]
        wait_until(
            "the operator's log says the default cloud changed",
            lambda: "INFO kumo.defaultcloud the default cloud changed" in rotating.log(),
            30,
        )
    finally:
        rotating.stop()
        kumo_operator.start()
        kumo_operator.wait_role("leader", 90)


# -- kumo plan -----------------------------------------------------------------------------


def plan_env(kube: KubeEnv, home: Path, **extra: str) -> dict[str, str]:
    """A user's shell: the lab's cluster and kubectl, no OpenStack variables but
    ``extra``, and an empty home (no ~/.config/openstack)."""
    env = {k: v for k, v in kube.env.items() if not k.startswith("OS_")}
    if env.get("PYTHONPATH"):  # the Kumo under test (PYTHONPATH=src), from another cwd
        paths = env["PYTHONPATH"].split(os.pathsep)
        env["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in paths if p)
    return {**env, "HOME": str(home), "KUBECTL": str(kube.kubectl_path), **extra}


def kumo(
    *args: str, env: dict[str, str], cwd: Path, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KUMO, *args],
        env=env,
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def planned(done: subprocess.CompletedProcess[str], kind: str, name: str) -> dict[str, Any]:
    report = json.loads(done.stdout)
    assert report["exitCode"] == done.returncode
    (found,) = [o for o in report["objects"] if (o["kind"], o["name"]) == (kind, name)]
    return dict(found)


def test_plan_takes_the_cloud_as_the_openstack_cli_does(
    namespace: str, kumo_operator: KumoOperator, openstack_lab: str, tmp_path: Path
) -> None:
    kube = kumo_operator.kube
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    sg = sg_manifest("planned", [])
    stdin = yaml.safe_dump({**sg, "metadata": {"name": "planned", "namespace": namespace}})
    several = plan_env(kube, home, OS_CLIENT_CONFIG_FILE=openstack_lab)

    # $OS_CLIENT_CONFIG_FILE has several clouds: $OS_CLOUD chooses; -f - reads stdin.
    env = {**several, "OS_CLOUD": CLOUD}
    done = kumo("plan", "-f", "-", "-o", "json", env=env, cwd=work, stdin=stdin)
    assert done.returncode == 2, done.stderr
    group = planned(done, "SecurityGroup", "planned")
    assert group["new"] and ("create", "security group") in [
        (a["verb"], a["noun"]) for a in group["actions"]
    ], group

    # None chosen among several, or one the file lacks: exit 1, the clouds listed.
    done = kumo("plan", "-f", "-", env=several, cwd=work, stdin=stdin)
    assert done.returncode == 1 and done.stdout == "", done
    assert done.stderr.startswith(f"kumo plan: $OS_CLIENT_CONFIG_FILE {openstack_lab} has ")
    assert "choose one with --cloud or $OS_CLOUD" in done.stderr and CLOUD in done.stderr
    assert done.stderr.count("\n") == 1, "one line"
    done = kumo("plan", "-f", "-", env={**several, "OS_CLOUD": "nope"}, cwd=work, stdin=stdin)
    assert done.returncode == 1
    assert "has no cloud 'nope' ($OS_CLOUD); clouds: " in done.stderr and CLOUD in done.stderr

    # ./clouds.yaml with one cloud: neither variable needed. A kustomization is built.
    (work / "clouds.yaml").write_text(demo_entry(openstack_lab))
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "vm.yaml").write_text(yaml.safe_dump(vm("kustomized")))
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {"namespace": namespace, "resources": ["vm.yaml"], "nameSuffix": "-x"},
        )
    )
    bare = plan_env(kube, home)
    done = kumo("plan", "-f", str(overlay), "-o", "json", env=bare, cwd=work)
    assert done.returncode == 2, done.stderr
    built = planned(done, "VirtualMachine", "kustomized-x")  # kustomize's suffix: built
    assert built["namespace"] == namespace and built["new"]
    assert ("create", "server") in [(a["verb"], a["noun"]) for a in built["actions"]], built

    # Applied and Ready: the same manifest plans no changes (exit 0).
    apply(namespace, sg)
    wait_ready("sg", "planned", namespace, timeout=120)
    done = kumo("plan", "-f", "-", "-o", "json", env=bare, cwd=work, stdin=stdin)
    assert done.returncode == 0, done.stdout + done.stderr
    assert planned(done, "SecurityGroup", "planned")["actions"] == []
    assert condition(get_obj("sg", "planned", namespace))["status"] == "True"

    # A usage error is 64, not 2; no kubeconfig is one line and 1.
    done = kumo("plan", "--no-such-flag", env=bare, cwd=work)
    assert done.returncode == 64 and "unrecognized arguments: --no-such-flag" in done.stderr
    gone = {**bare, "KUBECONFIG": str(tmp_path / "absent")}
    done = kumo("plan", "-f", "-", env=gone, cwd=work, stdin=stdin)
    assert (done.returncode, done.stderr) == (
        1,
        f"kumo plan: kubeconfig {tmp_path / 'absent'} cannot be read\n",
    )

"""Capture Kumo objects from the lab in each state Argo CD's health script must judge, as
the JSON fixtures of tests/unit/test_argocd_health.py (tests/argocd/bodies/).

    flock /tmp/kumo-lab.lock env PYTHONPATH=src .venv/bin/python -m tests.argocd.capture

It runs as a pytest session (the integration suite's fixtures: a fresh namespace, this
checkout's Kumo leading) and writes ``<Kind>.<state>.json`` for the states of
:data:`STATES`: Ready, building (Reconciling), stalled (an unknown flavor), paused
(also paused while stalled) and being deleted (an extra finalizer of the capture's own
holds the object once Kumo is done, so the body keeps its status). Bodies
are kept as the API server returns them, without ``managedFields``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from kumo.ports import markers
from tests.argocd import BODIES, STATES
from tests.integration.helpers import apply, cluster_id, condition, vm, wait_gone
from tests.integration.kube_fixtures import *  # noqa: F403
from tests.integration.kube_fixtures import KubeEnv, kubectl
from tests.integration.kumo_fixtures import *  # noqa: F403
from tests.integration.kumo_fixtures import get_obj, wait_until
from tests.integration.openstack_fixtures import *  # noqa: F403

HOLD = "kumo.dev/argocd-capture"  # the capture's own finalizer (deleting state)


@pytest.fixture(scope="session", autouse=True)
def markers_of_the_lab_cluster(kube_env: KubeEnv) -> Iterator[None]:
    markers.set_cluster(cluster_id())
    yield


def save(kind: str, state: str, body: dict[str, Any]) -> None:
    assert state in STATES, state
    body = json.loads(json.dumps(body))
    body["metadata"].pop("managedFields", None)
    path = BODIES / f"{kind}.{state}.json"
    path.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n")
    print(f"captured {path.name}")


def capture(
    kind: str, state: str, resource: str, namespace: str, check: Callable[[dict], bool]
) -> dict[str, Any]:
    """Wait until ``check`` holds for the object ``resource`` (kind/name), then save it."""

    def seen() -> dict[str, Any] | None:
        obj = get_obj(*resource.split("/"), namespace)
        return obj if obj is not None and check(obj) else None

    body = wait_until(f"{resource} {state}", seen, 300, interval=0.1)
    save(kind, state, body)
    return body  # type: ignore[no-any-return]


def is_true(type_: str) -> Callable[[dict], bool]:
    return lambda obj: condition(obj, type_).get("status") == "True"


def annotate(namespace: str, resource: str, *pairs: str) -> None:
    kubectl("annotate", "--overwrite", resource, "-n", namespace, *pairs)


def deleting(kind: str, resource: str, namespace: str) -> None:
    """Delete ``resource`` held by the capture's finalizer; save it once Kumo's is gone."""
    kubectl("patch", resource, "-n", namespace, "--type=json", "-p",
            json.dumps([{"op": "add", "path": "/metadata/finalizers/-", "value": HOLD}]))  # fmt: skip
    kubectl("delete", resource, "-n", namespace, "--wait=false")
    capture(kind, "deleting", resource, namespace,
            lambda o: o["metadata"].get("finalizers") == [HOLD])  # fmt: skip
    kubectl("patch", resource, "-n", namespace, "--type=merge", "-p",
            json.dumps({"metadata": {"finalizers": None}}))  # fmt: skip
    wait_gone(*resource.split("/"), namespace, 120)


def test_capture_virtual_machines(namespace: str, kumo_operator: Any) -> None:
    apply(namespace, vm("web"))
    capture("VirtualMachine", "building", "vm/web", namespace, is_true("Reconciling"))
    capture("VirtualMachine", "ready", "vm/web", namespace, is_true("Ready"))
    annotate(namespace, "vm/web", "kumo.dev/paused=true")
    capture("VirtualMachine", "paused", "vm/web", namespace, is_true("Paused"))
    annotate(namespace, "vm/web", "kumo.dev/paused-")
    wait_until("unpaused", lambda: not condition(get_obj("vm", "web", namespace), "Paused"), 60)
    deleting("VirtualMachine", "vm/web", namespace)

    bad = vm("bad")
    bad["spec"]["flavor"] = "no-such-flavor"
    apply(namespace, bad)
    capture("VirtualMachine", "stalled", "vm/bad", namespace, is_true("Stalled"))
    annotate(namespace, "vm/bad", "kumo.dev/paused=true")
    capture("VirtualMachine", "paused-stalled", "vm/bad", namespace, is_true("Paused"))
    annotate(namespace, "vm/bad", "kumo.dev/paused-")  # a paused object's deletion waits


def test_capture_a_group(namespace: str, kumo_operator: Any) -> None:
    group = {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "VirtualMachineGroup",
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "haPolicy": "soft", "template": vm("x")["spec"]},
    }
    apply(namespace, group)
    capture("VirtualMachineGroup", "building", "vmg/web", namespace, is_true("Reconciling"))
    capture("VirtualMachineGroup", "ready", "vmg/web", namespace, is_true("Ready"))
    annotate(namespace, "vmg/web", "kumo.dev/paused=true")
    capture("VirtualMachineGroup", "paused", "vmg/web", namespace, is_true("Paused"))
    annotate(namespace, "vmg/web", "kumo.dev/paused-")
    wait_until("unpaused", lambda: not condition(get_obj("vmg", "web", namespace), "Paused"), 60)
    deleting("VirtualMachineGroup", "vmg/web", namespace)


def test_capture_key_pairs_and_security_groups(namespace: str, kumo_operator: Any) -> None:
    def key_pair(name: str, key: str) -> dict[str, Any]:
        spec = {"name": f"{namespace}-{name}", "publicKey": key}
        return {"apiVersion": "kumo.dev/v1alpha1", "kind": "KeyPair",
                "metadata": {"name": name}, "spec": spec}  # fmt: skip

    public = Ed25519PrivateKey.generate().public_key()  # its private half is thrown away
    key = public.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    apply(namespace, key_pair("deploy", key.decode()))
    capture("KeyPair", "ready", "kp/deploy", namespace, is_true("Ready"))
    annotate(namespace, "kp/deploy", "kumo.dev/paused=true")
    capture("KeyPair", "paused", "kp/deploy", namespace, is_true("Paused"))
    annotate(namespace, "kp/deploy", "kumo.dev/paused-")
    wait_until("unpaused", lambda: not condition(get_obj("kp", "deploy", namespace), "Paused"), 60)
    deleting("KeyPair", "kp/deploy", namespace)

    group = {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "SecurityGroup",
        "metadata": {"name": "web"},
        "spec": {"rules": [{"protocol": "tcp", "port": 443, "cidr": "0.0.0.0/0"}]},
    }
    apply(namespace, group)
    capture("SecurityGroup", "ready", "sg/web", namespace, is_true("Ready"))
    annotate(namespace, "sg/web", "kumo.dev/paused=true")
    capture("SecurityGroup", "paused", "sg/web", namespace, is_true("Paused"))
    annotate(namespace, "sg/web", "kumo.dev/paused-")


if __name__ == "__main__":
    BODIES.mkdir(exist_ok=True)
    sys.exit(pytest.main([__file__, "-q", "-s", "-p", "no:cacheprovider", *sys.argv[1:]]))

"""The local Kubernetes API server (dev/kube/up.sh) answers and behaves like a cluster."""

from __future__ import annotations

import json
import os
import uuid

from tests.integration.kube_fixtures import KubeEnv, delete_namespace, kubectl


def test_apiserver_answers(kube_env: KubeEnv) -> None:
    assert kubectl("get", "--raw", "/readyz").stdout.strip() == "ok"
    version = json.loads(kubectl("version", "-o", "json").stdout)
    server, client = version["serverVersion"], version["clientVersion"]
    # The lab runs the release it built (KUMO_KUBE_VERSION), kubectl of the same one,
    # and never one older than the oldest Kumo supports (docs/install.md).
    assert server["gitVersion"] == client["gitVersion"]
    assert (int(server["major"]), int(server["minor"].rstrip("+"))) >= (1, 29)
    want = os.environ.get("KUMO_KUBE_VERSION", "")
    if want.count(".") == 2 and not want.endswith(".x"):
        assert server["gitVersion"] == f"v{want.removeprefix('v')}"


def test_default_namespace_exists(kube_env: KubeEnv) -> None:
    ns = json.loads(kubectl("get", "namespace", "default", "-o", "json").stdout)
    assert ns["status"]["phase"] == "Active"


def test_namespace_create_and_delete(kube_env: KubeEnv) -> None:
    name = f"kumo-lab-{uuid.uuid4().hex[:8]}"
    kubectl("create", "namespace", name)
    try:
        assert (
            kubectl("get", "namespace", name, "-o", "jsonpath={.status.phase}").stdout == "Active"
        )
    finally:
        delete_namespace(name, timeout=60)
    assert kubectl("get", "namespace", name, "--ignore-not-found").stdout.strip() == ""

"""One namespace, one project: a namespace's own credentials Secret sends its objects to
its own project, which another team's namespace cannot see; quota errors are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.integration.helpers import apply, condition, members_of, owned_servers, wait_ready
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import get_obj, wait_until


def give_namespace_project(namespace: str, clouds_yaml: str, cloud: str) -> None:
    """A Secret with only that project's clouds.yaml entry (never the admin's)."""
    entry = yaml.safe_load(Path(clouds_yaml).read_text())["clouds"][cloud]
    kubectl(
        "create",
        "secret",
        "generic",
        "kumo-cloud-credentials",
        "-n",
        namespace,
        f"--from-literal=clouds.yaml={yaml.safe_dump({'clouds': {cloud: entry}})}",
        f"--from-literal=cloud={cloud}",
    )


def test_namespace_credentials_select_the_project(
    namespace: str, kumo_operator: Any, openstack_lab: str, demo_conn: Any, other_conn: Any
) -> None:
    give_namespace_project(namespace, openstack_lab, "kumo-other")
    apply(
        namespace,
        {
            "apiVersion": "kumo.dev/v1alpha1",
            "kind": "VirtualMachine",
            "metadata": {"name": "team-b"},
            "spec": {"image": "centos79", "flavor": "m1.tiny"},
        },
    )
    ready = wait_ready("vm", "team-b", namespace)
    uid = ready["metadata"]["uid"]
    assert [s.id for s in owned_servers(other_conn, uid)] == [ready["status"]["id"]]
    assert owned_servers(demo_conn, uid) == [], "kumo-demo must not see kumo-other's server"


def test_quota_exceeded_is_reported(namespace: str, kumo_operator: Any, openstack_lab: str) -> None:
    """kumo-other keeps Nova's default quota of 10 instances."""
    give_namespace_project(namespace, openstack_lab, "kumo-other")
    apply(
        namespace,
        {
            "apiVersion": "kumo.dev/v1alpha1",
            "kind": "VirtualMachineGroup",
            "metadata": {"name": "greedy"},
            "spec": {
                "replicas": 12,
                "haPolicy": "none",
                "template": {"image": "centos79", "flavor": "m1.tiny"},
            },
        },
    )

    def quota_hit() -> list[dict[str, Any]]:
        return [
            condition(m)
            for m in members_of(namespace, "greedy")
            if condition(m).get("reason") == "QuotaExceeded"
        ]

    failed = wait_until("members over quota report QuotaExceeded", quota_hit, 240)
    assert "quota" in failed[0]["message"].lower()
    group = get_obj("vmg", "greedy", namespace)
    assert group["status"]["readyReplicas"] <= 10

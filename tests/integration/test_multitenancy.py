"""One namespace, one project: a namespace's own credentials Secret sends its objects to
its own project, which another team's namespace cannot see; quota errors are real; a
namespace's clouds.yaml cannot make the operator read its own files. On the shared
default cloud, importing a resource Kumo did not make needs the namespace's label."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from openstack import exceptions as os_exc

from tests.integration.helpers import (
    VM_SPEC,
    apply,
    condition,
    members_of,
    owned_servers,
    vm,
    wait_gone,
    wait_ready,
    wait_reason,
)
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import get_obj, wait_until
from tests.integration.test_keypairs import holds, key_pair, new_key, nova_keypair, uid_of


def give_namespace_project(namespace: str, clouds_yaml: str, cloud: str, **extra: Any) -> None:
    """A Secret with only that project's clouds.yaml entry (never the admin's), with
    ``extra`` keys added to it; a second call replaces the first's in one write."""
    entry = {**yaml.safe_load(Path(clouds_yaml).read_text())["clouds"][cloud], **extra}
    secret = kubectl(
        "create",
        "secret",
        "generic",
        "kumo-cloud-credentials",
        "-n",
        namespace,
        f"--from-literal=clouds.yaml={yaml.safe_dump({'clouds': {cloud: entry}})}",
        f"--from-literal=cloud={cloud}",
        "--dry-run=client",
        "-o",
        "yaml",
    ).stdout
    kubectl("apply", "-n", namespace, "-f", "-", input=secret)


def test_namespace_credentials_select_the_project(
    namespace: str, kumo_operator: Any, openstack_lab: str, demo_conn: Any, other_conn: Any
) -> None:
    give_namespace_project(namespace, openstack_lab, "kumo-other")
    apply(namespace, vm("team-b"))
    ready = wait_ready("vm", "team-b", namespace)
    uid = ready["metadata"]["uid"]
    assert [s.id for s in owned_servers(other_conn, uid)] == [ready["status"]["id"]]
    assert owned_servers(demo_conn, uid) == [], "kumo-demo must not see kumo-other's server"


#: kumo-other's instance quota while a quota test runs: the checks need the quota full,
#: not many servers (Nova's default of 10 cost a dozen builds per test).
SMALL_QUOTA = 3


@pytest.fixture
def small_instance_quota(admin_conn: Any) -> Iterator[int]:
    """kumo-other's instance quota set to SMALL_QUOTA for the test, and back afterwards."""
    project = admin_conn.identity.find_project("kumo-other", domain_id="default")
    before = admin_conn.compute.get_quota_set(project.id).instances
    admin_conn.compute.update_quota_set(project.id, instances=SMALL_QUOTA)
    try:
        yield SMALL_QUOTA
    finally:
        admin_conn.compute.update_quota_set(project.id, instances=before)


def test_quota_exceeded_is_reported(
    namespace: str, kumo_operator: Any, openstack_lab: str, small_instance_quota: int
) -> None:
    """kumo-other's instance quota is small_instance_quota; the group asks for two more."""
    give_namespace_project(namespace, openstack_lab, "kumo-other")
    apply(
        namespace,
        {
            "apiVersion": "kumo.dev/v1alpha1",
            "kind": "VirtualMachineGroup",
            "metadata": {"name": "greedy"},
            "spec": {
                "replicas": small_instance_quota + 2,
                "haPolicy": "none",
                "template": dict(VM_SPEC),
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
    assert group["status"]["readyReplicas"] <= small_instance_quota


def test_a_vm_over_quota_builds_soon_after_the_quota_frees(
    namespace: str,
    kumo_operator: Any,
    openstack_lab: str,
    other_conn: Any,
    small_instance_quota: int,
) -> None:
    """A quota is freed by deletions the cloud finishes on its own time, so Kumo asks
    again after ~5 s, then less often — not after the minute a bad spec waits. A group
    fills kumo-other's (small) quota; a VM waits on QuotaExceeded; scaling the group down
    by one frees one place, and the VM must have its server well before a minute."""
    wait_until(
        "kumo-other empty (earlier tests' deletes finished)",
        lambda: not list(other_conn.compute.servers()),
        120,
    )
    give_namespace_project(namespace, openstack_lab, "kumo-other")
    group = {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "VirtualMachineGroup",
        "metadata": {"name": "filler"},
        "spec": {
            "replicas": small_instance_quota,
            "haPolicy": "none",
            "template": dict(VM_SPEC),
        },
    }
    apply(namespace, group)
    wait_ready("vmg", "filler", namespace, timeout=240)
    apply(namespace, vm("waiter"))
    wait_reason("vm", "waiter", namespace, "QuotaExceeded", timeout=60)
    refused_at = time.monotonic()
    group["spec"]["replicas"] = small_instance_quota - 1
    apply(namespace, group)
    wait_ready("vm", "waiter", namespace, timeout=120)
    waited = time.monotonic() - refused_at
    # The old fixed hold retried a quota error after 60 s; the recheck after 5, 15, 35 s.
    assert waited < 50, f"the VM waited {waited:.0f}s after the quota freed"


def test_a_clouds_yaml_naming_the_operators_token_file_is_refused(
    namespace: str, kumo_operator: Any, openstack_lab: str, demo_conn: Any, other_conn: Any
) -> None:
    """The Pod's ServiceAccount token as a namespace's `cacert`: the operator would read
    (or send) its own credential for the namespace. Refused before any connection."""
    token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token"
    give_namespace_project(namespace, openstack_lab, "kumo-other", cacert=token_file)
    apply(namespace, vm("token-thief"))
    refused = wait_reason("vm", "token-thief", namespace, "CredentialsInvalid", timeout=60)
    named = f"Secret {namespace}/kumo-cloud-credentials: cloud 'kumo-other' sets 'cacert'"
    assert named in refused["message"]
    assert token_file not in refused["message"], "the namespace's value is never repeated"
    obj = get_obj("vm", "token-thief", namespace)
    assert "id" not in obj["status"]
    # Deleting it needs a cloud to look in (a server might have been made before the
    # Secret changed): it goes once the Secret is fixed, having found nothing.
    kubectl("delete", "vm", "token-thief", "-n", namespace, "--wait=false")
    give_namespace_project(namespace, openstack_lab, "kumo-other")
    wait_gone("vm", "token-thief", namespace, timeout=150)
    assert owned_servers(other_conn, obj["metadata"]["uid"]) == []
    for conn in (other_conn, demo_conn):  # neither its project nor the default's
        assert [s.name for s in conn.compute.servers() if "token-thief" in s.name] == []


def test_an_import_on_the_default_cloud_waits_for_the_namespace_s_permission(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    """The default cloud's project is shared by every namespace without a Secret of its
    own: importing a resource Kumo did not make needs the namespace's label. Refused,
    the keypair is untouched and the message says how to allow it; labelled, the
    namespace's objects are looked at again within seconds (not at the minute a
    permanent error waits) and the import goes through."""
    name = f"{namespace}-hand"
    key = new_key("made-by-hand")
    demo_conn.compute.create_keypair(name=name, public_key=key)
    try:
        apply(namespace, key_pair("hand", publicKey=key, name=name, **{"import": {"name": name}}))
        cond = wait_reason("kp", "hand", namespace, "ImportNotAllowed", timeout=60)
        assert (
            f"kubectl label namespace {namespace} kumo.dev/import-unmarked=true"
            in (cond["message"])
        )
        assert nova_keypair(demo_conn, name).public_key == key, "untouched"

        kubectl("label", "namespace", namespace, "kumo.dev/import-unmarked=true")
        wait_ready("kp", "hand", namespace, timeout=40)  # the refusal's own retry: 60 s
        assert holds(demo_conn, name, key, uid_of("kp", "hand", namespace))
    finally:
        with contextlib.suppress(os_exc.NotFoundException):
            if get_obj("kp", "hand", namespace) is None:
                demo_conn.compute.delete_keypair(name)


def test_a_namespace_with_its_own_project_imports_without_the_label(
    namespace: str, kumo_operator: Any, openstack_lab: str, other_conn: Any
) -> None:
    give_namespace_project(namespace, openstack_lab, "kumo-other")
    name = f"{namespace}-theirs"
    key = new_key("made-by-hand")
    other_conn.compute.create_keypair(name=name, public_key=key)
    try:
        apply(namespace, key_pair("own", publicKey=key, name=name, **{"import": {"name": name}}))
        wait_ready("kp", "own", namespace, timeout=60)
        assert holds(other_conn, name, key, uid_of("kp", "own", namespace))
    finally:
        with contextlib.suppress(os_exc.NotFoundException):
            if get_obj("kp", "own", namespace) is None:
                other_conn.compute.delete_keypair(name)

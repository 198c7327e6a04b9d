"""KeyPair on the real kube-apiserver and the lab's Nova: a keypair from an inline key and
from a Secret or ConfigMap key, a VM booted with it, a keypair deleted by hand made again,
a new key replacing it (the server kept), import, Orphan, and deletion leaving nothing."""

from __future__ import annotations

import base64
import contextlib
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from openstack import exceptions as os_exc

from tests.integration.helpers import (
    allow_unmarked_imports,
    apply,
    cluster_id,
    condition,
    vm,
    wait_gone,
    wait_ready,
    wait_reason,
)
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import get_obj, wait_until

#: Drift is --drift-seconds 3 in the suite's operator: a keypair deleted by hand is back
#: well within this (one listing, one pass).
DRIFT_TIMEOUT = 30


def new_key(comment: str = "") -> str:
    """A fresh OpenSSH ed25519 public key (its private half is thrown away)."""
    public = Ed25519PrivateKey.generate().public_key()
    line = public.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return f"{line.decode()} {comment}".strip()


def key_pair(name: str, /, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "KeyPair",
        "metadata": {"name": name},
        "spec": spec,
    }


def nova_keypair(conn: Any, name: str) -> Any | None:
    try:
        return conn.compute.get_keypair(name)
    except os_exc.NotFoundException:
        return None


def holds(conn: Any, name: str, key: str, uid: str) -> bool:
    """Nova's keypair ``name`` is ``key`` (type and data) with Kumo's marker for ``uid``."""
    found = nova_keypair(conn, name)
    if found is None:
        return False
    words = found.public_key.split()
    return words[:2] == key.split()[:2] and words[-1] == f"kumo-owner={uid}@{cluster_id()}"


def uid_of(kind: str, name: str, namespace: str) -> str:
    obj = get_obj(kind, name, namespace)
    assert obj is not None
    return str(obj["metadata"]["uid"])


def test_keypair_lifecycle_with_a_vm(namespace: str, kumo_operator: Any, demo_conn: Any) -> None:
    nova_name = f"{namespace}-deploy"
    key = new_key("ops@example")

    # A VM naming the KeyPair before it exists waits for it (its Nova name is not "deploy").
    apply(namespace, {**vm("web"), "spec": {**vm("web")["spec"], "keyName": "deploy"}})
    apply(namespace, key_pair("deploy", publicKey=key, deletionPolicy="Delete"))
    obj = wait_ready("kp", "deploy", namespace, timeout=60)
    uid = obj["metadata"]["uid"]
    st = obj["status"]
    assert (st["id"], st["keyName"], st["keyType"]) == (nova_name, nova_name, "ssh-ed25519")
    found = nova_keypair(demo_conn, nova_name)
    assert found is not None
    marker = f"kumo-owner={uid}@{cluster_id()}"
    assert found.public_key == f"{key} {marker}", "stored as sent: the marker last"
    assert found.fingerprint == st["fingerprint"]

    # The VM boots with the KeyPair's Nova keypair.
    server_id = wait_ready("vm", "web", namespace, timeout=180)["status"]["id"]
    assert demo_conn.compute.get_server(server_id).key_name == nova_name

    # Deleted by hand: made again from the spec within one drift interval.
    demo_conn.compute.delete_keypair(nova_name)
    wait_until("keypair made again", lambda: holds(demo_conn, nova_name, key, uid), DRIFT_TIMEOUT)

    # A new key replaces the keypair under the same name; the server keeps its key.
    new = new_key("rotated")
    apply(namespace, key_pair("deploy", publicKey=new))
    wait_until("keypair replaced", lambda: holds(demo_conn, nova_name, new, uid), DRIFT_TIMEOUT)
    wait_until(
        "status shows the new key",
        lambda: (
            (get_obj("kp", "deploy", namespace) or {}).get("status", {}).get("fingerprint")
            == nova_keypair(demo_conn, nova_name).fingerprint
        ),
        DRIFT_TIMEOUT,
    )
    server = demo_conn.compute.get_server(server_id)
    assert (server.status, server.key_name) == ("ACTIVE", nova_name), "not replaced"
    assert condition(get_obj("vm", "web", namespace)).get("status") == "True"

    # Deleting the KeyPair deletes the keypair (the server booted with it stays).
    kubectl("delete", "kp", "deploy", "-n", namespace, "--wait=false")
    wait_gone("kp", "deploy", namespace, timeout=60)
    assert nova_keypair(demo_conn, nova_name) is None
    assert not owned_keypairs(demo_conn, uid)
    assert demo_conn.compute.get_server(server_id).status == "ACTIVE"


def owned_keypairs(conn: Any, uid: str) -> list[str]:
    return [k.name for k in conn.compute.keypairs() if f"kumo-owner={uid}" in k.public_key]


def test_keypair_from_a_secret_and_a_config_map(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    # Secrets are opt-in per namespace (the same ClusterRole as boot scripts).
    kubectl(
        "create", "rolebinding", "kumo-boot-secrets", "-n", namespace,
        "--clusterrole=kumo-boot-secrets", "--serviceaccount=kumo-system:kumo",
    )  # fmt: skip
    secret_key = new_key("from-a-secret")
    apply(
        namespace,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "ssh"},
            "data": {"ops.pub": base64.b64encode(f"{secret_key}\n".encode()).decode()},
        },
    )
    apply(
        namespace,
        key_pair(
            "from-secret",
            name=f"{namespace} ops",  # spec.name: a space is fine, a dot is not
            publicKeyFrom={"secretRef": {"name": "ssh", "key": "ops.pub"}},
        ),
    )
    wait_ready("kp", "from-secret", namespace, timeout=60)
    uid = uid_of("kp", "from-secret", namespace)
    assert holds(demo_conn, f"{namespace} ops", secret_key, uid)

    # A ConfigMap: read by name, and again every 10 s by the leader (never listed or
    # watched), so a changed key replaces the keypair well before the 60 s resync.
    first = new_key()

    def config_map(key: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "keys"},
            "data": {"deploy.pub": key},
        }

    apply(namespace, config_map(first))
    apply(
        namespace,
        key_pair("from-cm", publicKeyFrom={"configMapRef": {"name": "keys", "key": "deploy.pub"}}),
    )
    wait_ready("kp", "from-cm", namespace, timeout=60)
    cm_uid = uid_of("kp", "from-cm", namespace)
    assert holds(demo_conn, f"{namespace}-from-cm", first, cm_uid)
    second = new_key()
    apply(namespace, config_map(second))
    wait_until(
        "keypair follows the ConfigMap",
        lambda: holds(demo_conn, f"{namespace}-from-cm", second, cm_uid),
        DRIFT_TIMEOUT,
    )

    # A key that is not one: the condition names the field, nothing is replaced.
    apply(namespace, config_map("not a key"))
    cond = wait_reason("kp", "from-cm", namespace, "InvalidPublicKey", timeout=DRIFT_TIMEOUT)
    assert cond["message"].startswith("spec.publicKeyFrom.configMapRef: starts with 'not'")
    assert holds(demo_conn, f"{namespace}-from-cm", second, cm_uid)

    kubectl("delete", "kp", "--all", "-n", namespace, "--wait=false")
    wait_gone("kp", "from-secret", namespace, timeout=60)
    wait_gone("kp", "from-cm", namespace, timeout=60)
    assert not owned_keypairs(demo_conn, uid) and not owned_keypairs(demo_conn, cm_uid)


def test_keypair_import_and_orphan(namespace: str, kumo_operator: Any, demo_conn: Any) -> None:
    allow_unmarked_imports(namespace)
    name = f"{namespace}-legacy"
    key = new_key("made-by-hand")
    demo_conn.compute.create_keypair(name=name, public_key=key)
    try:
        # Another key: ImportMismatch naming the field, the keypair untouched.
        spec = {"name": name, "import": {"name": name}, "deletionPolicy": "Orphan"}
        apply(namespace, key_pair("legacy", publicKey=new_key(), **spec))
        cond = wait_reason("kp", "legacy", namespace, "ImportMismatch", timeout=60)
        assert cond["message"].startswith("spec.publicKey: keypair")
        assert nova_keypair(demo_conn, name).public_key == key

        # The same key: taken over (made again with the marker, same name and key).
        apply(namespace, key_pair("legacy", publicKey=key, **spec))
        wait_ready("kp", "legacy", namespace, timeout=60)
        uid = uid_of("kp", "legacy", namespace)
        assert holds(demo_conn, name, key, uid)

        # A keypair of that name that is not Kumo's is never taken without import.
        other = f"{namespace}-theirs"
        demo_conn.compute.create_keypair(name=other, public_key=new_key())
        apply(namespace, key_pair("theirs", publicKey=new_key()))
        cond = wait_reason("kp", "theirs", namespace, "KeyPairExists", timeout=60)
        assert cond["message"].startswith(f"spec.name: keypair '{other}' already exists")

        # Orphan: the keypair stays, released (the orphan mark instead of the marker).
        kubectl("delete", "kp", "legacy", "-n", namespace, "--wait=false")
        wait_gone("kp", "legacy", namespace, timeout=60)
        left = nova_keypair(demo_conn, name)
        assert left is not None
        assert left.public_key.split()[:2] == key.split()[:2]
        assert left.public_key.split()[-1] == f"kumo-orphan={uid}"
        kubectl("delete", "kp", "theirs", "-n", namespace, "--wait=false")
        wait_gone("kp", "theirs", namespace, timeout=60)
        assert nova_keypair(demo_conn, other) is not None, "a foreign keypair is never deleted"
    finally:
        for leftover in (name, f"{namespace}-theirs"):
            with contextlib.suppress(os_exc.NotFoundException):
                demo_conn.compute.delete_keypair(leftover)

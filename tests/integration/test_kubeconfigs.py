"""Kubeconfigs kubectl accepts work for Kumo on the lab (issue 41): a client certificate
embedded as data (kubeadm's admin.conf, kind, k3s) and an ``exec`` credential plugin
whose bound ServiceAccount token is invalidated while Kumo runs: `kumo plan` reads,
`kumo run` reconciles, and its writes go on after one fresh login."""

from __future__ import annotations

import base64
import contextlib
import datetime
import json
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.integration.helpers import apply, wait_gone, wait_ready
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import (
    LEASE_NAMESPACE,
    REPO_ROOT,
    STATE,
    KumoOperator,
    get_obj,
    wait_until,
)
from tests.integration.test_keypairs import key_pair, new_key

#: Kumo's ServiceAccount as the API server names it: a certificate with this name gets
#: exactly the RBAC deploy/ grants the ServiceAccount.
KUMO_USER = "system:serviceaccount:kumo-system:kumo"


def _admin() -> dict[str, Any]:
    return yaml.safe_load((STATE / "kubeconfig").read_text())  # type: ignore[no-any-return]


def _kubeconfig(path: Path, user: dict[str, Any]) -> Path:
    """The lab's cluster (CA embedded) with ``user``'s credentials."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "lab", "cluster": _admin()["clusters"][0]["cluster"]}],
        "users": [{"name": "kumo", "user": user}],
        "contexts": [{"name": "kumo", "context": {"cluster": "lab", "user": "kumo"}}],
        "current-context": "kumo",
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def _client_certificate() -> dict[str, str]:
    """A client certificate for Kumo's ServiceAccount's name, signed by the lab's CA,
    as kubeconfig ``-data`` fields."""
    pki = STATE / "kube" / "pki"
    ca = x509.load_pem_x509_certificate((pki / "ca.crt").read_bytes())
    ca_key = serialization.load_pem_private_key((pki / "ca.key").read_bytes(), None)
    assert isinstance(ca_key, rsa.RSAPrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(
            x509.Name(
                [
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:serviceaccounts"),
                    x509.NameAttribute(NameOID.COMMON_NAME, KUMO_USER),
                ]
            )
        )
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=2))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return {
        "client-certificate-data": base64.b64encode(pem).decode(),
        "client-key-data": base64.b64encode(key_pem).decode(),
    }


def _plan(operator: KumoOperator, kubeconfig: Path, namespace: str, manifest: Path) -> list[str]:
    """`kumo plan` with only ``kubeconfig``: the kinds/names it plans."""
    args = [str(REPO_ROOT / ".venv" / "bin" / "kumo"), "plan", "-n", namespace, "-o", "json"]
    args += ["--clouds-yaml", operator.clouds_yaml, "--cloud", operator.cloud, "-f", str(manifest)]
    env = {**operator.kube.env, "KUBECONFIG": str(kubeconfig)}
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode in (0, 2), done.stderr + done.stdout
    return [f"{o['kind']}/{o['name']}" for o in json.loads(done.stdout)["objects"]]


@contextlib.contextmanager
def _running_with(
    kumo_operator: KumoOperator, kubeconfig: Path, log: str
) -> Iterator[KumoOperator]:
    """A `kumo run` with only ``kubeconfig``'s credentials, leading in place of the
    session's operator (restored after)."""
    kumo_operator.stop()  # graceful: hands the lease over
    operator = KumoOperator(
        kumo_operator.kube, kumo_operator.clouds_yaml, kumo_operator.cloud, log, kubeconfig
    )
    try:
        operator.start()
        operator.wait_role("leader", 90)
        yield operator
    finally:
        operator.stop()
        kumo_operator.start()
        kumo_operator.wait_role("leader", 90)


def _keypair_round(namespace: str, tmp_path: Path) -> Path:
    manifest = tmp_path / "keypair.yaml"
    manifest.write_text(yaml.safe_dump(key_pair("deploy", publicKey=new_key("kubeconfig"))))
    return manifest


def test_an_embedded_client_certificate(
    namespace: str, kumo_operator: KumoOperator, tmp_path: Path
) -> None:
    kubeconfig = _kubeconfig(tmp_path / "cert.kubeconfig", _client_certificate())
    manifest = _keypair_round(namespace, tmp_path)
    assert _plan(kumo_operator, kubeconfig, namespace, manifest) == ["KeyPair/deploy"]
    with _running_with(kumo_operator, kubeconfig, "operator-cert-kubeconfig.log"):
        apply(namespace, manifest)
        wait_ready("kp", "deploy", namespace, timeout=90)
        kubectl("delete", "kp", "deploy", "-n", namespace, "--wait=false")
        wait_gone("kp", "deploy", namespace, timeout=90)  # the finalizer's removal: a write


PLUGIN = """\
import json, os, pathlib, subprocess, sys

state = pathlib.Path(sys.argv[1])
kubectl = [os.environ["KUMO_TEST_KUBECTL"], "--kubeconfig", os.environ["KUMO_TEST_ADMIN"]]
kubectl += ["-n", "kumo-system"]
bound = state / "bound"
name = bound.read_text().strip() if bound.exists() else ""
if not name or subprocess.run(kubectl + ["get", "secret", name], capture_output=True).returncode:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {
        "generateName": "kumo-exec-bound-", "labels": {"kumo.dev/test": "exec-plugin"}}}
    name = subprocess.run(kubectl + ["create", "-f", "-", "-o", "jsonpath={.metadata.name}"],
        input=json.dumps(secret), capture_output=True, text=True, check=True).stdout.strip()
    bound.write_text(name)
token = subprocess.run(kubectl + ["create", "token", "kumo", "--bound-object-kind", "Secret",
    "--bound-object-name", name, "--duration", "1h"],
    capture_output=True, text=True, check=True).stdout.strip()
with (state / "issued").open("a") as f:
    f.write(name + " " + token + "\\n")
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
    "status": {"token": token}}))
"""


def _refused(token: str) -> bool:
    """Whether the API server refuses ``token`` (401)."""
    cluster = _admin()["clusters"][0]["cluster"]
    context = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
    )
    request = urllib.request.Request(
        f"{cluster['server']}/api/v1/namespaces/{LEASE_NAMESPACE}",
        headers={"Authorization": f"Bearer {token}"},
    )
    try:
        urllib.request.urlopen(request, context=context, timeout=10).close()
    except urllib.error.HTTPError as error:
        return error.code == 401
    return False


def test_an_exec_plugin_whose_bound_token_is_invalidated(
    namespace: str, kumo_operator: KumoOperator, tmp_path: Path
) -> None:
    """The plugin hands out a token bound to a Secret; the Secret is deleted (every token
    bound to it is refused from then on) and the plugin's next token is bound to a new
    one. Kumo's next write is refused once, logs in afresh and goes through."""
    (tmp_path / "plugin.py").write_text(PLUGIN)
    kubeconfig = _kubeconfig(
        tmp_path / "exec.kubeconfig",
        {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1",
                "command": sys.executable,
                "args": [str(tmp_path / "plugin.py"), str(tmp_path)],
                "env": [
                    {"name": "KUMO_TEST_KUBECTL", "value": str(kumo_operator.kube.kubectl_path)},
                    {"name": "KUMO_TEST_ADMIN", "value": str(kumo_operator.kube.kubeconfig)},
                ],
                "interactiveMode": "Never",
            }
        },
    )

    def issued() -> list[tuple[str, str]]:
        lines = (tmp_path / "issued").read_text().splitlines()
        return [(line.split()[0], line.split()[1]) for line in lines]

    manifest = _keypair_round(namespace, tmp_path)
    try:
        assert _plan(kumo_operator, kubeconfig, namespace, manifest) == ["KeyPair/deploy"]
        with _running_with(kumo_operator, kubeconfig, "operator-exec-kubeconfig.log") as kumo:
            apply(namespace, manifest)
            before = wait_ready("kp", "deploy", namespace, timeout=90)
            first_secret, first_token = issued()[-1]

            kubectl("delete", "secret", first_secret, "-n", LEASE_NAMESPACE)
            wait_until("the bound token refused", lambda: _refused(first_token), 30)

            # A new key: Kumo replaces the keypair and writes its status (a write that
            # needs a fresh login), and keeps its Lease (renewals: writes too).
            apply(namespace, key_pair("deploy", publicKey=new_key("rotated")))
            generation = get_obj("kp", "deploy", namespace)["metadata"]["generation"]  # type: ignore[index]

            def rewritten() -> dict[str, Any] | None:
                obj = get_obj("kp", "deploy", namespace) or {}
                status = obj.get("status") or {}
                new = status.get("fingerprint") != before["status"]["fingerprint"]
                return obj if new and status.get("observedGeneration") == generation else None

            wait_until("the status written after the token was invalidated", rewritten, 60)
            assert {secret for secret, _ in issued()} - {first_secret}, "a new token was issued"
            assert kumo.health().get("role") == "leader", "the Lease renewals went on"
            assert "refused the credentials (401), logging in again" in kumo.log()
            kubectl("delete", "kp", "deploy", "-n", namespace, "--wait=false")
            wait_gone("kp", "deploy", namespace, timeout=90)
    finally:
        kubectl(
            "delete",
            "secret",
            "-n",
            LEASE_NAMESPACE,
            "-l",
            "kumo.dev/test=exec-plugin",
            check=False,
        )

"""Every kubeconfig kubectl accepts works for Kumo's own client (runtime/kube.py, issue
41): embedded certificate data, exec credential plugins, and credentials that are never
kept for good (renewed on expiry and after one 401, then the request retried)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import json
import ssl
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import kopf
import pytest
import yaml
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kumo.engine.errors import TransientError
from kumo.runtime import kube
from kumo.runtime.kube import KubeClient

Handler = Callable[[web.Request], Awaitable[web.Response]]
NOW = datetime.datetime.now(datetime.UTC)


def _issue(
    name: str, issuer: tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None, **ext: bool
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    signer_cert, signer_key = issuer if issuer else (None, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(signer_cert.subject if signer_cert else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW - datetime.timedelta(minutes=5))
        .not_valid_after(NOW + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
    )
    if ext.get("server"):
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False
        )
    return builder.sign(signer_key, hashes.SHA256()), key


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@contextlib.asynccontextmanager
async def _server(handle: Handler, context: ssl.SSLContext | None = None) -> AsyncIterator[str]:
    """A local API server answering every request with ``handle``; yields its URL."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context).start()
    port = runner.addresses[0][1]
    try:
        yield f"https://localhost:{port}" if context else f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def _kubeconfig(path: Path, server: str, cluster: dict[str, Any], user: dict[str, Any]) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server, **cluster}}],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


@pytest.fixture
def no_service_account(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kopf, "login_with_service_account", lambda **_: None)


def test_embedded_certificate_data_authenticates_over_tls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_service_account: None
) -> None:
    """kubeadm's admin.conf, kind, k3s: CA, client certificate and key embedded as
    ``-data``. The server checks the client certificate against its CA (mutual TLS)."""
    ca = _issue("test-ca", None)
    server_cert, server_key = _issue("localhost", ca, server=True)
    client_cert, client_key = _issue("system:serviceaccount:kumo-system:kumo", ca)
    (tmp_path / "server.pem").write_bytes(_pem(server_cert) + _key_pem(server_key))
    (tmp_path / "ca.pem").write_bytes(_pem(ca[0]))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=tmp_path / "ca.pem")
    context.load_cert_chain(tmp_path / "server.pem")
    context.verify_mode = ssl.CERT_REQUIRED

    async def handle(request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        subject = dict(pair[0] for pair in (peer or {}).get("subject", ()))
        return web.json_response({"metadata": {"uid": subject.get("commonName", "")}})

    async def scenario() -> Any:
        async with _server(handle, context) as url:
            path = _kubeconfig(
                tmp_path / "config",
                url,
                {"certificate-authority-data": _b64(_pem(ca[0]))},
                {
                    "client-certificate-data": _b64(_pem(client_cert)),
                    "client-key-data": _b64(_key_pem(client_key)),
                },
            )
            monkeypatch.setenv("KUBECONFIG", str(path))
            client = KubeClient.from_environment("host_1_abc")
            try:
                return await client.get_namespace("kube-system")
            finally:
                await client.close()

    body = asyncio.run(scenario())
    assert body == {"metadata": {"uid": "system:serviceaccount:kumo-system:kumo"}}


def _exec_plugin(tmp_path: Path, expires: str | None) -> dict[str, Any]:
    """An exec plugin that hands out ``tok-1``, ``tok-2``, … (one per run) and records
    the KUBERNETES_EXEC_INFO kubectl gives it."""
    script = tmp_path / "plugin.py"
    status = {"expirationTimestamp": expires} if expires else {}
    script.write_text(
        "import json, os, pathlib, sys\n"
        f"state = pathlib.Path({str(tmp_path)!r})\n"
        "runs = state / 'runs'\n"
        "n = len(runs.read_text().splitlines()) + 1 if runs.exists() else 1\n"
        "with runs.open('a') as f: f.write(os.environ['KUBERNETES_EXEC_INFO'] + '\\n')\n"
        "status = dict(token=f'tok-{n}', **json.loads(sys.argv[1]))\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1',"
        " 'kind': 'ExecCredential', 'status': status}))\n"
    )
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(script), json.dumps(status)],
            "interactiveMode": "Never",
        }
    }


def test_an_exec_plugins_credential_is_read_with_its_expiry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_service_account: None
) -> None:
    user = _exec_plugin(tmp_path, "2031-01-02T03:04:05Z")
    path = _kubeconfig(tmp_path / "config", "https://127.0.0.1:6443", {}, user)
    monkeypatch.setenv("KUBECONFIG", str(path))
    info = asyncio.run(kube.login(kopf.OperatorSettings(), "host_1_abc"))
    assert info is not None
    assert info.as_http_headers()["Authorization"] == "Bearer tok-1"
    assert info.expiration == datetime.datetime(2031, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    sent = json.loads((tmp_path / "runs").read_text())
    assert (sent["kind"], sent["apiVersion"]) == (
        "ExecCredential",
        "client.authentication.k8s.io/v1",
    )


def test_a_failing_exec_plugin_is_an_error_not_anonymous(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_service_account: None
) -> None:
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "false"}}
    path = _kubeconfig(tmp_path / "config", "https://127.0.0.1:6443", {}, user)
    monkeypatch.setenv("KUBECONFIG", str(path))
    with pytest.raises(Exception, match="exec: process returned 1"):
        asyncio.run(kube.login(kopf.OperatorSettings()))


def test_a_401_logs_in_afresh_once_and_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_service_account: None
) -> None:
    """The exec plugin's token was revoked: the next one is fetched and the write goes
    on. Concurrent requests refused together log in once."""
    user = _exec_plugin(tmp_path, None)
    seen: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        token = request.headers.get("Authorization", "")
        seen.append(token)
        if token != "Bearer tok-2":
            return web.json_response({"kind": "Status", "code": 401}, status=401)
        return web.json_response({"metadata": {"uid": "u"}})

    async def scenario() -> list[Any]:
        async with _server(handle) as url:
            monkeypatch.setenv("KUBECONFIG", str(_kubeconfig(tmp_path / "c", url, {}, user)))
            client = KubeClient.from_environment()
            try:
                return await asyncio.gather(*(client.get_namespace("ns") for _ in range(5)))
            finally:
                await client.close()

    assert asyncio.run(scenario()) == [{"metadata": {"uid": "u"}}] * 5
    assert len((tmp_path / "runs").read_text().splitlines()) == 2, "one login, one renewal"
    assert seen.count("Bearer tok-1") == 5 and seen.count("Bearer tok-2") == 5


def test_a_401_after_the_fresh_login_is_transient() -> None:
    """Still refused after one renewal: the engine retries later (with a new login
    again), instead of giving the object up as before."""
    logins: list[int] = []

    async def login() -> kopf.ConnectionInfo:
        logins.append(1)
        return kopf.ConnectionInfo(server=url, token=f"t{len(logins)}")

    async def handle(request: web.Request) -> web.Response:
        return web.json_response({"kind": "Status", "code": 401}, status=401)

    async def scenario() -> None:
        nonlocal url
        async with _server(handle) as url:
            client = KubeClient(None, login=login)
            try:
                with pytest.raises(TransientError) as refused:
                    await client.get_namespace("ns")
                assert refused.value.reason == "KubernetesUnauthorized"
            finally:
                await client.close()

    url = ""
    asyncio.run(scenario())
    assert len(logins) == 2, "the first login, then exactly one renewal"


@pytest.mark.parametrize(
    "stale",
    [
        {"expiration": NOW - datetime.timedelta(seconds=1)},  # an exec credential's
        {"reread_at": NOW - datetime.timedelta(seconds=1)},  # the in-cluster token file
    ],
)
def test_stale_credentials_are_renewed_before_the_request(stale: dict[str, Any]) -> None:
    seen: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization", ""))
        return web.json_response({})

    async def scenario() -> None:
        async with _server(handle) as url:

            async def login() -> kopf.ConnectionInfo:
                return kube.IdentifiedConnectionInfo(server=url, token="fresh")

            old = kube.IdentifiedConnectionInfo(server=url, token="old", **stale)
            client = KubeClient(old, login=login)
            try:
                await client.get_namespace("ns")
                await client.get_namespace("ns")
            finally:
                await client.close()

    asyncio.run(scenario())
    assert seen == ["Bearer fresh", "Bearer fresh"]


def test_in_a_pod_the_token_file_is_reread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kubelet rewrites the projected token: each login reads the file anew, and a
    Pod's credentials say when to read it again."""
    token = tmp_path / "token"
    token.write_text("first\n")
    path = "/var/run/secrets/kubernetes.io/serviceaccount/token"
    real_exists, real_open = kube.os.path.exists, open
    monkeypatch.setattr("os.path.exists", lambda p: p == path or real_exists(p))
    monkeypatch.setattr(
        "builtins.open", lambda p, *a, **kw: real_open(token if p == path else p, *a, **kw)
    )
    first = asyncio.run(kube.login(kopf.OperatorSettings()))
    token.write_text("second\n")
    second = asyncio.run(kube.login(kopf.OperatorSettings()))
    assert first is not None and second is not None
    assert (first.token, second.token) == ("first", "second")
    assert first.reread_at is not None
    assert first.reread_at - datetime.datetime.now(datetime.UTC) <= kube.TOKEN_REREAD


def test_no_kubeconfig_is_no_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_service_account: None
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    with pytest.raises(RuntimeError, match="no Kubernetes credentials"):
        KubeClient.from_environment()


def _refusal(login: kube.Login) -> TransientError:
    """What the first request of a client whose login fails raises."""

    async def scenario() -> TransientError:
        client = KubeClient(None, login=login)
        try:
            with pytest.raises(TransientError) as failed:
                await client.get_namespace("ns")
            return failed.value
        finally:
            await client.close()

    return asyncio.run(scenario())


def test_a_failing_renewal_is_transient_and_quotes_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An exec plugin failing mid-run: the write is retried later; what the plugin
    printed reaches the log only, never an object's status."""

    async def login() -> kopf.ConnectionInfo:
        raise RuntimeError("exec: process returned 1. token=hunter2 expired")

    refused = _refusal(login)
    assert refused.reason == "KubernetesLoginFailed" and "hunter2" not in str(refused)
    assert "hunter2" in caplog.text


def test_a_hanging_login_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """An exec plugin that never answers must not stall every write for ever."""
    monkeypatch.setattr(kube, "LOGIN_TIMEOUT", 0.05)

    async def login() -> kopf.ConnectionInfo:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    assert _refusal(login).reason == "KubernetesLoginFailed"

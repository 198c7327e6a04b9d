"""In a Pod, Kumo reaches the API server KUBERNETES_SERVICE_HOST/PORT name (as client-go
does), not kopf's assumed DNS name, which host-network Pods cannot resolve."""

from __future__ import annotations

import asyncio
from pathlib import Path

import kopf
import pytest

from kumo import __version__
from kumo.runtime import kube


@pytest.fixture
def service_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "token").write_text("t0ken\n")
    (tmp_path / "namespace").write_text("kumo-system")
    real_exists = kube.os.path.exists
    mapping = {
        "/var/run/secrets/kubernetes.io/serviceaccount/token": tmp_path / "token",
        "/var/run/secrets/kubernetes.io/serviceaccount/namespace": tmp_path / "namespace",
    }
    monkeypatch.setattr(
        "os.path.exists", lambda p: p in mapping or (p not in mapping and real_exists(p))
    )
    real_open = open
    monkeypatch.setattr("builtins.open", lambda p, *a, **kw: real_open(mapping.get(p, p), *a, **kw))
    return tmp_path


def test_in_cluster_address_comes_from_the_service_environment(
    service_account: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    info = asyncio.run(kube.login(kopf.OperatorSettings()))
    assert info is not None
    assert (info.server, info.token, info.default_namespace) == (
        "https://127.0.0.1:6443",
        "t0ken",
        "kumo-system",
    )


def test_ipv6_service_address_is_bracketed(
    service_account: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    info = asyncio.run(kube.login(kopf.OperatorSettings()))
    assert info is not None and info.server == "https://[fd00::1]:443"


def test_without_the_environment_kopfs_default_stays(
    service_account: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    info = asyncio.run(kube.login(kopf.OperatorSettings()))
    assert info is not None and info.server == "https://kubernetes.default.svc"


def test_kopfs_requests_name_the_process_in_their_user_agent(
    service_account: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kopf keeps the User-Agent the login's headers carry (else ``kopf/<version>``, the
    same for every operator): the API server's audit log then tells which operator wrote."""
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    info = asyncio.run(kube.login(kopf.OperatorSettings(), "kumo-0_7_ab12cd"))
    assert info is not None
    assert info.as_http_headers() == {
        "Authorization": "Bearer t0ken",
        "User-Agent": f"kumo/{__version__} (kumo-0_7_ab12cd)",
    }
    assert info.server == "https://127.0.0.1:6443", "the credentials are kept as they were"
    anonymous = asyncio.run(kube.login(kopf.OperatorSettings()))
    assert anonymous is not None
    assert anonymous.as_http_headers()["User-Agent"] == f"kumo/{__version__}"

"""What a namespace's clouds.yaml may ask of the operator: no file on it, only allowed
auth hosts, no endpoint override unless allowed; a CA comes as the Secret's key
``cacert``. The operator's own default cloud is not held to it."""

from __future__ import annotations

import asyncio
import gc
import os
import stat
from typing import Any

import pytest
import requests_mock as rm

from kumo.cloud import credentials, tenancy
from kumo.cloud.credentials import NAMESPACE_SECRET, CloudRegistry, CloudSource
from kumo.cloud.tenancy import Rules
from kumo.engine.errors import ReconcileError, TerminalError
from tests.unit.cloud import rest
from tests.unit.cloud.test_credentials import Clock, Connector, FakeCloud, Secrets, clouds_yaml

TOKEN_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/token"
PEM = "-----BEGIN CERTIFICATE-----\nMIIBkTCB+wIJAKHHIG...\n-----END CERTIFICATE-----\n"
ORIGIN = f"Secret team-a/{NAMESPACE_SECRET}"


def entry(**extra: Any) -> dict[str, Any]:
    auth = {"auth_url": "https://keystone.example.com:5000/v3", "username": "demo"}
    return {"auth": {**auth, **extra.pop("auth", {})}, "region_name": "tokyo1", **extra}


# -- the rules, on a cloud entry ------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "key"),
    [
        (top, key)
        for key in (
            "cacert",
            "cert",
            "key",
            "client_cert",
            "client_key",
            "client-cert",  # the SDK reads - and _ alike
            "token_file",
            "ca_path",
            "identity_cacert",
            "compute_cert",
        )
        for top in (True, False)
    ],
)
def test_a_key_naming_a_file_is_refused_where_the_sdk_reads_it(where: bool, key: str) -> None:
    cloud = entry(**{key: TOKEN_FILE}) if where else entry(auth={key: TOKEN_FILE})
    why = tenancy.refusal(cloud, Rules())
    path = key if where else f"auth.{key}"
    assert why is not None and f"sets {path!r}" in why
    assert TOKEN_FILE not in why, "the value is the namespace's, never quoted"


@pytest.mark.parametrize(("value", "refused"), [(TOKEN_FILE, True), (True, False), (False, False)])
def test_verify_may_be_a_bool_never_a_path(value: Any, refused: bool) -> None:
    why = tenancy.refusal(entry(verify=value), Rules())
    assert (why is not None) == refused
    if refused:
        assert why is not None and "'verify'" in why


def test_a_plain_entry_passes() -> None:
    assert tenancy.refusal(entry(insecure=False, interface="public"), Rules()) is None


@pytest.mark.parametrize(
    "cloud",
    [
        entry(compute_endpoint_override="http://10.0.0.1:8774/v2.1"),
        entry(endpoint_override="http://10.0.0.1"),
        entry(auth={"endpoint": "http://10.0.0.1"}),
    ],
)
def test_endpoint_overrides_are_refused_unless_allowed(cloud: dict[str, Any]) -> None:
    why = tenancy.refusal(cloud, Rules())
    assert why is not None and "--allow-endpoint-overrides" in why
    assert tenancy.refusal(cloud, Rules(allow_endpoint_overrides=True)) is None


def test_allowed_auth_hosts() -> None:
    rules = Rules.from_flags("Keystone.Example.com, other:35357", False)
    assert rules.allowed_auth_hosts == ("keystone.example.com", "other:35357")
    assert tenancy.refusal(entry(), rules) is None
    port_only = entry(auth={"auth_url": "http://other:35357/v3"})
    assert tenancy.refusal(port_only, rules) is None
    elsewhere = entry(auth={"auth_url": "https://169.254.169.254/latest"})
    assert tenancy.refusal(elsewhere, rules) == (
        "sets 'auth.auth_url' to host '169.254.169.254', not one of --allowed-auth-hosts"
    )
    wrong_port = entry(auth={"auth_url": "http://other:80/v3"})
    assert tenancy.refusal(wrong_port, rules) is not None
    # Another URL the auth plugin calls (an OIDC discovery endpoint) is held to it too.
    oidc = entry(auth={"discovery_endpoint": "https://evil.example/.well-known"})
    why = tenancy.refusal(oidc, rules)
    assert why is not None and "'evil.example'" in why
    no_url = {"auth": {"username": "demo"}}
    assert tenancy.refusal(no_url, rules) is not None
    assert tenancy.refusal(no_url, Rules()) is None, "without the flag any host goes"


# -- wired where a namespace's Secret becomes a connection ----------------------------


def registry(secrets: Secrets, **kwargs: Any) -> tuple[CloudRegistry, Connector]:
    connector = Connector()
    clouds = CloudRegistry(
        kwargs.pop("default", None),
        secrets,
        connector=connector,
        cloud_factory=FakeCloud,
        clock=Clock(),
        **kwargs,
    )
    return clouds, connector


def refused(clouds: CloudRegistry) -> ReconcileError:
    with pytest.raises(ReconcileError) as caught:
        asyncio.run(clouds.for_namespace("team-a"))
    return caught.value


def test_a_secret_naming_the_token_file_is_credentials_invalid_and_connects_nothing() -> None:
    secrets = Secrets(team_a={"clouds.yaml": clouds_yaml(cacert=TOKEN_FILE)})
    clouds, connector = registry(secrets)
    error = refused(clouds)
    assert (type(error), error.reason) == (TerminalError, "CredentialsInvalid")
    assert error.message.startswith(f"{ORIGIN}: cloud 'kumo' sets 'cacert'")
    assert connector.built == [], "nothing may reach the cloud"


def test_the_operators_flags_reach_the_namespaces_secrets() -> None:
    secrets = Secrets(team_a={"clouds.yaml": clouds_yaml()})  # auth_url keystone.invalid
    clouds, connector = registry(secrets, rules=Rules(allowed_auth_hosts=("keystone.example",)))
    error = refused(clouds)
    assert error.reason == "CredentialsInvalid" and "'keystone.invalid'" in error.message
    assert connector.built == []
    open_clouds, _ = registry(secrets)
    assert asyncio.run(open_clouds.for_namespace("team-a")) is not None


def test_the_default_cloud_is_the_operators_own_and_not_checked() -> None:
    default = CloudSource(
        clouds_yaml(cacert="/etc/kumo/ca.pem"), "kumo", "--clouds-yaml", rules=None
    )
    clouds, connector = registry(Secrets(), default=default)
    assert asyncio.run(clouds.for_namespace("team-a")) is not None
    assert connector.built == [default]


def test_a_namespace_never_shares_the_default_clouds_unchecked_connection() -> None:
    text = clouds_yaml()
    default = CloudSource(text, "kumo", "--clouds-yaml", rules=None)
    namespaced = CloudSource(text, "kumo", ORIGIN)
    assert default.fingerprint != namespaced.fingerprint


def test_a_secrets_cacert_must_be_pem() -> None:
    secrets = Secrets(team_a={"clouds.yaml": clouds_yaml(), "cacert": TOKEN_FILE})
    error = refused(registry(secrets)[0])
    assert error.reason == "CredentialsInvalid" and "'cacert' holds no PEM" in error.message


def test_a_secrets_cacert_becomes_a_private_file_the_connection_verifies_with(
    requests_mock: rm.Mocker,
) -> None:
    rest.stub_keystone(requests_mock)
    source = CloudSource(rest.CLOUDS_YAML, "kumo", ORIGIN, cacert=PEM)
    conn = credentials.connect(source)
    path = conn.session.verify
    try:
        assert isinstance(path, str) and path != PEM
        with open(path) as handle:
            assert handle.read() == PEM
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    finally:
        conn.close()
    del conn
    gc.collect()
    assert not os.path.exists(os.path.dirname(path)), "removed with its connection"


def test_a_failed_connect_leaves_no_cacert_behind(
    requests_mock: rm.Mocker, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    rest.stub_keystone(
        requests_mock, status_code=401, json=rest.recorded("keystone_unauthorized.json")
    )
    with pytest.raises(ReconcileError):
        credentials.connect(CloudSource(rest.CLOUDS_YAML, "kumo", ORIGIN, cacert=PEM))
    assert list(tmp_path.iterdir()) == []

"""Credentials faults stay in their namespace and never leak a secret; connections are
built off the event loop and dropped when no namespace uses them any more."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import keystoneauth1.exceptions as ka_exc
import openstack.config
import pytest
import requests
import requests_mock as rm
import yaml

from kumo.cloud import credentials
from kumo.cloud.adapter import OpenStackCloud
from kumo.cloud.credentials import NAMESPACE_SECRET, CloudRegistry, CloudSource
from kumo.engine.errors import ReconcileError, TerminalError, TransientError
from tests.unit.cloud import rest

PASSWORD = "hunter2-do-not-log"
ORIGIN = f"Secret team-a/{NAMESPACE_SECRET}"


def clouds_yaml(name: str = "kumo", **extra: Any) -> str:
    entry = {
        "auth": {
            "auth_url": "http://keystone.invalid:5000/v3",
            "username": "demo",
            "password": PASSWORD,
            "project_name": "demo",
            "user_domain_name": "Default",
            "project_domain_name": "Default",
        },
        "region_name": "tokyo1",
        **extra,
    }
    return yaml.safe_dump({"clouds": {name: entry}})


class Secrets:
    """A fake secret reader: namespace → Secret data (None: no Secret)."""

    def __init__(self, **by_namespace: dict[str, str] | None) -> None:
        self.data = dict(by_namespace)
        self.reads = 0
        self.fail: Exception | None = None

    async def __call__(self, namespace: str, name: str) -> dict[str, str] | None:
        assert name == NAMESPACE_SECRET
        self.reads += 1
        if self.fail is not None:
            raise self.fail
        return self.data.get(namespace.replace("-", "_"))


class FakeCloud:
    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.closed = False

    async def close(self) -> None:
        self.closed = True


class Connector:
    """Stands in for credentials.connect: records the thread, returns a token object."""

    def __init__(self) -> None:
        self.built: list[CloudSource] = []
        self.threads: set[int] = set()

    def __call__(self, source: CloudSource) -> Any:
        credentials.cloud_entry(source)  # the same checks as the real one
        self.threads.add(threading.get_ident())
        self.built.append(source)
        return f"conn-{len(self.built)}"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def registry(
    secrets: Secrets, default: CloudSource | None = None, clock: Clock | None = None
) -> tuple[CloudRegistry, Connector]:
    connector = Connector()
    clouds = CloudRegistry(
        default,
        secrets,
        connector=connector,
        cloud_factory=FakeCloud,
        clock=clock or Clock(),
    )
    return clouds, connector


def fails(clouds: CloudRegistry, namespace: str = "team-a") -> ReconcileError:
    with pytest.raises(ReconcileError) as caught:
        asyncio.run(clouds.for_namespace(namespace))
    return caught.value


BAD = {
    "not-yaml": f"clouds: {{kumo: {{auth: {{password: {PASSWORD}\n  - [",
    "not-a-mapping": f"- {PASSWORD}\n- two\n",
    "clouds-not-a-mapping": yaml.safe_dump({"clouds": [PASSWORD]}),
    "lacks-the-cloud": clouds_yaml("other"),
    "entry-not-a-mapping": yaml.safe_dump({"clouds": {"kumo": PASSWORD}}),
    "profile": clouds_yaml(profile="https://evil.example.invalid"),
    "legacy-cloud-profile": clouds_yaml(cloud="rackspace"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_clouds_yaml_is_credentials_invalid_naming_the_secret(case: str) -> None:
    clouds, connector = registry(Secrets(team_a={"clouds.yaml": BAD[case]}))
    error = fails(clouds)
    assert isinstance(error, TerminalError)
    assert error.reason == "CredentialsInvalid"
    assert ORIGIN in error.message
    assert PASSWORD not in error.message
    assert connector.built == []


def test_a_secret_without_clouds_yaml_is_invalid_not_the_default() -> None:
    default = CloudSource(clouds_yaml(), "kumo", "--clouds-yaml")
    clouds, _ = registry(Secrets(team_a={"clouds.yml": clouds_yaml()}), default)
    error = fails(clouds)
    assert error.reason == "CredentialsInvalid"
    assert "no key 'clouds.yaml'" in error.message


def test_profile_is_refused_by_the_real_connect_without_any_network() -> None:
    source = CloudSource(clouds_yaml(profile="https://evil.example.invalid"), "kumo", ORIGIN)
    with pytest.raises(TerminalError) as caught:
        credentials.connect(source)
    assert "profile" in caught.value.message


@pytest.mark.parametrize(
    ("raised", "kind"),
    [
        (ka_exc.ConnectFailure(f"Unable to connect to http://demo:{PASSWORD}@x"), TransientError),
        (ka_exc.ConnectTimeout(f"timed out {PASSWORD}"), TransientError),
        (ka_exc.Unauthorized(f"bad password {PASSWORD}"), TerminalError),
        (ka_exc.DiscoveryFailure(f"no keystone at {PASSWORD}"), TerminalError),
        (ka_exc.SSLError(f"certificate {PASSWORD}"), TerminalError),
        (ka_exc.InternalServerError(f"oops {PASSWORD}"), TransientError),
    ],
)
def test_authentication_faults_are_classified_without_leaking(
    monkeypatch: pytest.MonkeyPatch, raised: Exception, kind: type
) -> None:
    def authorize(conn: Any) -> None:
        raise raised

    monkeypatch.setattr(credentials, "_authorize", authorize)
    with pytest.raises(ReconcileError) as caught:
        credentials.connect(CloudSource(clouds_yaml(), "kumo", ORIGIN))
    assert type(caught.value) is kind
    assert caught.value.reason == "CredentialsInvalid"
    assert ORIGIN in caught.value.message
    assert PASSWORD not in caught.value.message


def test_connect_reads_no_operator_side_files_and_sets_a_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The SDK's default secure.yaml/vendor files/environment would merge the operator's
    own settings into a tenant's cloud of the same name."""
    real = openstack.config.OpenStackConfig
    seen: dict[str, Any] = {}

    def spy(**kwargs: Any) -> Any:
        seen.update(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(openstack.config, "OpenStackConfig", spy)
    monkeypatch.setattr(credentials, "_authorize", lambda conn: None)
    conn = credentials.connect(CloudSource(clouds_yaml(), "kumo", ORIGIN))
    assert (seen["secure_files"], seen["vendor_files"], seen["load_envvars"]) == ([], [], False)
    assert conn.session.timeout == credentials.DEFAULT_API_TIMEOUT
    assert conn.config.config["auth"]["password"] == PASSWORD
    conn.close()


def test_one_namespace_fault_does_not_touch_another() -> None:
    clouds, _ = registry(
        Secrets(team_a={"clouds.yaml": BAD["profile"]}, team_b={"clouds.yaml": clouds_yaml()})
    )
    assert fails(clouds, "team-a").reason == "CredentialsInvalid"
    assert isinstance(asyncio.run(clouds.for_namespace("team-b")), FakeCloud)


def test_a_reader_raising_anything_becomes_a_reconcile_error() -> None:
    secrets = Secrets()
    secrets.fail = RuntimeError(f"connection reset {PASSWORD}")
    clouds, _ = registry(secrets)
    error = fails(clouds)
    assert isinstance(error, TransientError)
    assert PASSWORD not in error.message


def test_connect_runs_off_the_event_loop_once_per_content() -> None:
    clouds, connector = registry(
        Secrets(team_a={"clouds.yaml": clouds_yaml()}, team_b={"clouds.yaml": clouds_yaml()})
    )

    async def scenario() -> list[Any]:
        return await asyncio.gather(
            clouds.for_namespace("team-a"),
            clouds.for_namespace("team-a"),
            clouds.for_namespace("team-b"),
        )

    first, second, third = asyncio.run(scenario())
    assert first is second is third, "same content, one cloud"
    assert len(connector.built) == 1
    assert threading.get_ident() not in connector.threads


def test_a_changed_secret_rebuilds_and_closes_the_unused_connection() -> None:
    clock = Clock()
    secrets = Secrets(team_a={"clouds.yaml": clouds_yaml()}, team_b={"clouds.yaml": clouds_yaml()})
    clouds, connector = registry(secrets, clock=clock)
    old = asyncio.run(clouds.for_namespace("team-a"))
    asyncio.run(clouds.for_namespace("team-b"))
    secrets.data["team_a"] = {"clouds.yaml": clouds_yaml(region_name="osaka1")}
    clock.now += credentials.SECRET_TTL + 1
    new = asyncio.run(clouds.for_namespace("team-a"))
    assert new is not old and len(connector.built) == 2
    assert not old.closed, "team-b still uses it"
    secrets.data["team_b"] = {"clouds.yaml": clouds_yaml(region_name="osaka1")}
    assert asyncio.run(clouds.for_namespace("team-b")) is new
    assert old.closed


def test_a_deleted_secret_falls_back_to_the_default_or_no_credentials() -> None:
    clock = Clock()
    secrets = Secrets(team_a={"clouds.yaml": clouds_yaml(region_name="osaka1")})
    default = CloudSource(clouds_yaml(), "kumo", "--clouds-yaml")
    clouds, _ = registry(secrets, default, clock)
    own = asyncio.run(clouds.for_namespace("team-a"))
    del secrets.data["team_a"]
    clock.now += credentials.SECRET_TTL + 1
    fallback = asyncio.run(clouds.for_namespace("team-a"))
    assert fallback is not own and own.closed

    bare, _ = registry(Secrets(team_a={"clouds.yaml": clouds_yaml()}), None, clock)
    mine = asyncio.run(bare.for_namespace("team-a"))
    bare._read_secret = Secrets()  # the Secret is gone
    clock.now += credentials.SECRET_TTL + 1
    assert fails(bare).reason == "NoCloudCredentials"
    assert mine.closed


def test_which_namespaces_use_the_default_cloud() -> None:
    """Only a namespace without a Secret of its own shares the default cloud (where
    imports of unmarked resources need permission, runtime/imports.py); a Secret
    deleted later puts it back on the default."""
    clock = Clock()
    secrets = Secrets(team_a={"clouds.yaml": clouds_yaml(region_name="osaka1")})
    default = CloudSource(clouds_yaml(), "kumo", "--clouds-yaml")
    clouds, _ = registry(secrets, default, clock)
    asyncio.run(clouds.for_namespace("team-a"))
    asyncio.run(clouds.for_namespace("team-b"))
    assert not clouds.uses_default("team-a")
    assert clouds.uses_default("team-b")
    del secrets.data["team_a"]
    clock.now += credentials.SECRET_TTL + 1
    asyncio.run(clouds.for_namespace("team-a"))
    assert clouds.uses_default("team-a")


def test_a_failed_connect_is_not_retried_at_every_reconcile() -> None:
    clock = Clock()
    calls = []

    def refuse(source: CloudSource) -> Any:
        calls.append(source)
        raise TransientError("CredentialsInvalid", "cannot reach auth_url")

    clouds = CloudRegistry(
        None, Secrets(team_a={"clouds.yaml": clouds_yaml()}), connector=refuse, clock=clock
    )
    for _ in range(3):
        assert fails(clouds).reason == "CredentialsInvalid"
    assert len(calls) == 1
    clock.now += credentials.CONNECT_RETRY_SECONDS + 1
    fails(clouds)
    assert len(calls) == 2


def test_a_failed_secret_read_keeps_the_last_good_credentials() -> None:
    clock = Clock()
    secrets = Secrets(team_a={"clouds.yaml": clouds_yaml()})
    clouds, _ = registry(secrets, clock=clock)
    cloud = asyncio.run(clouds.for_namespace("team-a"))
    secrets.fail = TransientError("KubernetesConflict", "GET secret: 503")
    clock.now += credentials.SECRET_TTL + 1
    assert asyncio.run(clouds.for_namespace("team-a")) is cloud


# -- the real connect against recorded Keystone responses ------------------------------


def test_connect_gets_a_project_scoped_token_at_once(requests_mock: rm.Mocker) -> None:
    rest.stub_keystone(requests_mock)
    conn = credentials.connect(rest.SOURCE)
    try:
        token = requests_mock.request_history[-1]
        assert (token.method, token.url) == ("POST", f"{rest.KEYSTONE}/auth/tokens")
        assert token.json()["auth"] == {
            "identity": {
                "methods": ["password"],
                "password": {
                    "user": {
                        "name": "kumo-demo",
                        "password": rest.PASSWORD,
                        "domain": {"name": "Default"},
                    }
                },
            },
            "scope": {"project": {"name": "kumo-demo", "domain": {"name": "Default"}}},
        }
        assert conn.current_project_id == "9f2c4e1a7b3d4f6e8a0c2b4d6f8e0a1c"
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("answer", "kind", "words"),
    [
        (
            {"status_code": 401, "json": rest.recorded("keystone_unauthorized.json")},
            TerminalError,
            "authentication failed (HTTP 401, Unauthorized)",
        ),
        (
            {"status_code": 503, "text": rest.recorded("service_unavailable.html")},
            TransientError,
            "auth_url answered HTTP 503",
        ),
        (
            {"exc": requests.exceptions.ConnectionError(f"refused {rest.PASSWORD}")},
            TransientError,
            "cannot reach auth_url",
        ),
    ],
)
def test_keystone_answers_become_namespace_errors_without_secrets(
    requests_mock: rm.Mocker, answer: dict[str, Any], kind: type, words: str
) -> None:
    rest.stub_keystone(requests_mock, **answer)
    with pytest.raises(ReconcileError) as caught:
        credentials.connect(rest.SOURCE)
    error = caught.value
    assert (type(error), error.reason) == (kind, "CredentialsInvalid")
    assert error.message.startswith(rest.SOURCE.origin)
    assert words in error.message
    assert rest.PASSWORD not in error.message


def test_a_namespace_secret_becomes_a_working_cloud(requests_mock: rm.Mocker) -> None:
    """Registry → real connect → OpenStackCloud → a Nova call, all on recorded answers."""
    rest.stub_keystone(requests_mock)
    rest.stub_discovery(requests_mock)
    requests_mock.get(f"{rest.NOVA}/servers/detail", json={"servers": []})
    clouds = CloudRegistry(None, Secrets(team_a={"clouds.yaml": rest.CLOUDS_YAML}))

    async def scenario() -> list[Any]:
        cloud = await clouds.for_namespace("team-a")
        assert isinstance(cloud, OpenStackCloud)
        try:
            return (await cloud.list_servers_since(None))[0]
        finally:
            await cloud.close()

    assert asyncio.run(scenario()) == []
    assert requests_mock.last_request.headers["X-Auth-Token"] == "gAAAAAB-token"


def test_no_such_cloud_names_the_clouds_there_are() -> None:
    both = {name: yaml.safe_load(clouds_yaml(name))["clouds"][name] for name in ("prod", "lab")}
    source = CloudSource(yaml.safe_dump({"clouds": both}, sort_keys=False), "kumo")
    with pytest.raises(TerminalError) as caught:
        credentials.cloud_entry(source)
    assert caught.value.message.endswith("clouds.yaml has no cloud 'kumo' (clouds: prod, lab)")
    assert PASSWORD not in caught.value.message

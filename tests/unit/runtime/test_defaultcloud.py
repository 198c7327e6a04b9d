"""The operator's default cloud is read again while it runs: a fixed password reaches
the objects that failed on the old one without a restart, and at once."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from kumo.api.kinds import VIRTUAL_MACHINE
from kumo.cloud.credentials import NAMESPACE_SECRET, CloudRegistry, CloudSource
from kumo.engine.errors import ReconcileError, TerminalError
from kumo.engine.objects import Key
from kumo.runtime import defaultcloud
from kumo.runtime.controller import Controller
from tests.unit.fakes import make_body

PASSWORD = "hunter2-do-not-log"


def clouds_yaml(password: str, name: str = "kumo") -> str:
    auth = {"auth_url": "http://keystone.invalid:5000/v3", "password": password}
    return yaml.safe_dump({"clouds": {name: {"auth": auth}}})


WRONG = CloudSource(clouds_yaml("wrong"), "kumo", "default Secret kumo-system/kumo-default-cloud")
FIXED = CloudSource(clouds_yaml(PASSWORD), "kumo", "default Secret kumo-system/kumo-default-cloud")


class Keystone:
    """Stands in for credentials.connect: only the right password authenticates."""

    def __init__(self) -> None:
        self.tries: list[CloudSource] = []

    def __call__(self, source: CloudSource) -> Any:
        self.tries.append(source)
        if PASSWORD not in source.clouds_yaml:
            raise TerminalError("CredentialsInvalid", f"{source.origin}: authentication failed")
        return f"conn-{len(self.tries)}"


class Secrets:
    """Namespace Secrets: ``team-own`` has its own cloud, nobody else."""

    async def __call__(self, namespace: str, name: str) -> dict[str, str] | None:
        assert name == NAMESPACE_SECRET
        own = {"clouds.yaml": clouds_yaml(PASSWORD, "own"), "cloud": "own"}
        return own if namespace == "team-own" else None


class Reader:
    """The default cloud's Secret as the follower reads it."""

    def __init__(self, source: CloudSource | None) -> None:
        self.source = source
        self.fail: Exception | None = None

    async def __call__(self) -> CloudSource | None:
        if self.fail is not None:
            raise self.fail
        return self.source


def registry(default: CloudSource | None) -> tuple[CloudRegistry, Keystone]:
    keystone = Keystone()
    clouds = CloudRegistry(default, Secrets(), connector=keystone, cloud_factory=lambda c: c)
    return clouds, keystone


def test_a_fixed_default_secret_reaches_the_namespaces_that_failed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clouds, keystone = registry(WRONG)
    reader = Reader(WRONG)
    changed: list[bool] = []
    follower = defaultcloud.DefaultCloudFollower(
        reader, clouds, lambda: changed.append(True), given="kumo-system/kumo-default-cloud"
    )

    async def scenario() -> Any:
        with pytest.raises(ReconcileError) as caught:
            await clouds.for_namespace("team-a")
        assert caught.value.reason == "CredentialsInvalid"
        assert not await follower.check(), "the same Secret: nothing changed"
        reader.source = FIXED
        with caplog.at_level(logging.INFO, logger="kumo.defaultcloud"):
            assert await follower.check()
        assert not await follower.check(), "handed over once"
        return await clouds.for_namespace("team-a")

    assert asyncio.run(scenario()) == "conn-2", "the new password, not the held failure"
    assert changed == [True]
    assert [s.clouds_yaml for s in keystone.tries] == [WRONG.clouds_yaml, FIXED.clouds_yaml]
    (line,) = [r for r in caplog.records if r.name == "kumo.defaultcloud"]
    assert line.levelno == logging.INFO
    assert line.getMessage() == (
        "the default cloud changed: now cloud 'kumo' of default Secret "
        "kumo-system/kumo-default-cloud"
    )
    assert PASSWORD not in caplog.text


def test_an_emptied_secret_means_no_default_cloud() -> None:
    clouds, _ = registry(FIXED)
    reader = Reader(None)
    follower = defaultcloud.DefaultCloudFollower(reader, clouds, lambda: None, given="ns/s")
    assert asyncio.run(follower.check())
    assert clouds.default is None
    with pytest.raises(ReconcileError, match="no default cloud"):
        asyncio.run(clouds.for_namespace("team-a"))


def test_a_failed_read_keeps_the_cloud_in_use_and_warns_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clouds, _ = registry(FIXED)
    reader = Reader(WRONG)
    reader.fail = TimeoutError()
    follower = defaultcloud.DefaultCloudFollower(reader, clouds, lambda: None)
    with caplog.at_level(logging.WARNING, logger="kumo.defaultcloud"):
        assert not asyncio.run(follower.check())
        assert not asyncio.run(follower.check())
    assert clouds.default is FIXED
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1
    reader.fail = None
    assert asyncio.run(follower.check()) and clouds.default is WRONG


def test_only_namespaces_without_their_own_secret_use_the_default() -> None:
    clouds, _ = registry(FIXED)
    asyncio.run(clouds.for_namespace("team-own"))
    asyncio.run(clouds.for_namespace("team-a"))
    assert clouds.uses_default("team-a") and clouds.uses_default("never-seen")
    assert not clouds.uses_default("team-own")


def test_the_controller_enqueues_every_object_of_the_selected_namespaces() -> None:
    ctl = Controller([], None, None)
    ctl.actuators = {"VirtualMachine": None}  # type: ignore[dict-item]
    for namespace in ("team-a", "team-own"):
        for name in ("a", "b"):
            body = make_body(VIRTUAL_MACHINE, name, {}, namespace=namespace)
            ctl.store.put("VirtualMachine", body)
    ctl.enqueue_namespaces(lambda namespace: namespace != "team-own")
    assert set(ctl.queue._due) == {
        Key("VirtualMachine", "team-a", "a"),
        Key("VirtualMachine", "team-a", "b"),
    }


def test_read_takes_the_secret_first_then_the_file(tmp_path: Path) -> None:
    async def secret(namespace: str, name: str) -> dict[str, str] | None:
        assert (namespace, name) == ("kumo-system", "kumo-default-cloud")
        return {"clouds.yaml": clouds_yaml(PASSWORD, "prod"), "cloud": "prod"}

    async def empty(namespace: str, name: str) -> dict[str, str] | None:
        return {}

    file = tmp_path / "clouds.yaml"
    file.write_text(clouds_yaml(PASSWORD))
    given = "kumo-system/kumo-default-cloud"
    source = asyncio.run(defaultcloud.read(given, str(file), "kumo", secret))
    assert source is not None and (source.cloud, source.origin) == (
        "prod",
        f"default Secret {given}",
    )
    assert asyncio.run(defaultcloud.read(given, None, "kumo", empty)) is None
    from_file = asyncio.run(defaultcloud.read(None, str(file), "kumo", empty))
    assert from_file is not None and from_file.clouds_yaml == file.read_text()
    assert asyncio.run(defaultcloud.read(None, None, "kumo", empty)) is None

"""Which cloud a namespace may use.

A namespace with a Secret named ``kumo-cloud-credentials`` (keys ``clouds.yaml`` and
optionally ``cloud``) uses exactly that project; other namespaces use the operator's
default (a clouds.yaml file or Secret), unless the operator was started without one.
Objects only ever get the cloud of their own namespace, so one team's namespace
cannot reach another team's project. Credentials are never logged.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import openstack.config
import openstack.connection

from kumo.cloud.adapter import OpenStackCloud
from kumo.engine.errors import TerminalError

NAMESPACE_SECRET = "kumo-cloud-credentials"
SECRET_TTL = 30.0

SecretReader = Callable[[str, str], Awaitable[dict[str, str] | None]]


@dataclass(frozen=True)
class CloudSource:
    clouds_yaml: str
    cloud: str

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(f"{self.cloud}\0{self.clouds_yaml}".encode()).hexdigest()


def connect(source: CloudSource) -> openstack.connection.Connection:
    """Build a connection from clouds.yaml text without reading the environment."""
    with tempfile.TemporaryDirectory(prefix="kumo-") as tmp:
        path = os.path.join(tmp, "clouds.yaml")
        with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as handle:
            handle.write(source.clouds_yaml)
        config = openstack.config.OpenStackConfig(
            config_files=[path], vendor_files=[], load_envvars=False
        )
        try:
            region = config.get_one(cloud=source.cloud)
        except Exception as error:
            raise TerminalError(
                "BadCloudCredentials", f"cloud {source.cloud!r}: {type(error).__name__}"
            ) from None
    return openstack.connection.Connection(config=region)


class CloudRegistry:
    def __init__(
        self,
        default: CloudSource | None,
        read_secret: SecretReader,
        *,
        concurrency: int = 8,
        rate: float = 20.0,
    ) -> None:
        self.default = default
        self._read_secret = read_secret
        self._concurrency = concurrency
        self._rate = rate
        self._clouds: dict[str, OpenStackCloud] = {}
        self._namespace_sources: dict[str, tuple[float, CloudSource | None]] = {}

    async def source_for(self, namespace: str) -> CloudSource:
        cached = self._namespace_sources.get(namespace)
        if cached is None or time.monotonic() - cached[0] > SECRET_TTL:
            data = await self._read_secret(namespace, NAMESPACE_SECRET)
            source = None
            if data and "clouds.yaml" in data:
                source = CloudSource(data["clouds.yaml"], data.get("cloud", "kumo"))
            cached = (time.monotonic(), source)
            self._namespace_sources[namespace] = cached
        source = cached[1] or self.default
        if source is None:
            raise TerminalError(
                "NoCloudCredentials",
                f"no Secret {NAMESPACE_SECRET!r} in namespace {namespace!r} and no default cloud",
            )
        return source

    async def for_namespace(self, namespace: str) -> OpenStackCloud:
        source = await self.source_for(namespace)
        cloud = self._clouds.get(source.fingerprint)
        if cloud is None:
            cloud = OpenStackCloud(connect(source), concurrency=self._concurrency, rate=self._rate)
            self._clouds[source.fingerprint] = cloud
        return cloud

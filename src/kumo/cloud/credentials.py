"""Which cloud a namespace may use, and building it safely.

A namespace with a Secret named ``kumo-cloud-credentials`` (keys ``clouds.yaml`` and
optionally ``cloud``) uses exactly that project; other namespaces use the operator's
default (a clouds.yaml file or Secret), unless the operator was started without one.
Objects only ever get the cloud of their own namespace, so one team's namespace
cannot reach another team's project.

A namespace's credentials are the namespace's input, not the operator's: whatever is
wrong with them (not YAML, no such cloud, a vendor ``profile`` the SDK would fetch
over the network, an auth_url that does not answer, a rejected password) becomes a
``CredentialsInvalid`` error on that namespace's objects and nothing else. Messages
name the Secret and the problem, never a value from it. Credentials are never logged.
What a namespace's cloud may ask of the operator (no files, allowed auth hosts, no
endpoint overrides) is :mod:`kumo.cloud.tenancy`'s; the operator's default cloud is its
own and is not held to it.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import tempfile
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import keystoneauth1.exceptions as ka_exc
import openstack.config
import openstack.connection
import yaml

from kumo.cloud import telemetry, tenancy
from kumo.cloud.budget import MAX_QUEUED_BUILDS
from kumo.cloud.watch import SKEW_SECONDS
from kumo.engine.errors import ReconcileError, TerminalError, TransientError

if TYPE_CHECKING:  # the adapter imports every service; built lazily, once credentials work
    from kumo.cloud.adapter import OpenStackCloud

log = logging.getLogger("kumo.credentials")

NAMESPACE_SECRET = "kumo-cloud-credentials"
#: How long a namespace's Secret is trusted before it is read again.
SECRET_TTL = 30.0
#: How long a failed connect (bad password, auth_url down) is reported before retrying.
CONNECT_RETRY_SECONDS = 30.0
#: Per-request timeout when clouds.yaml sets none: a black-holed auth_url must not hold
#: a worker thread for ever.
DEFAULT_API_TIMEOUT = 60.0
#: Keys of a cloud entry that make the SDK load a vendor profile, possibly over the
#: network (``https://…/.well-known/openstack/api``); ``cloud`` is its old spelling.
REFUSED_KEYS = ("profile", "cloud")
REASON = "CredentialsInvalid"

SecretReader = Callable[[str, str], Awaitable[dict[str, str] | None]]


@dataclass(frozen=True)
class CloudSource:
    clouds_yaml: str
    cloud: str
    #: Where the credentials come from, for messages: "Secret ns/name", "--clouds-yaml".
    origin: str = field(default="the default cloud", compare=False)
    #: A PEM CA bundle (the Secret's key ``cacert``), written to a file of Kumo's own.
    cacert: str | None = None
    #: The tenancy rules the entry must pass; None for the operator's own default cloud
    #: only (a namespace's Secret always carries the operator's rules).
    rules: tenancy.Rules | None = field(default_factory=tenancy.Rules)

    @property
    def fingerprint(self) -> str:
        # The rules too: a namespace's entry is never served the default cloud's
        # connection, which was built without them.
        text = f"{self.cloud}\0{self.clouds_yaml}\0{self.cacert}\0{self.rules}"
        return hashlib.sha256(text.encode()).hexdigest()


def _fingerprint(source: CloudSource | None) -> str | None:
    return source.fingerprint if source is not None else None


def _invalid(source: CloudSource, problem: str) -> TerminalError:
    return TerminalError(REASON, f"{source.origin}: {problem}")


def cloud_entry(source: CloudSource) -> dict[str, Any]:
    """The checked clouds.yaml entry of ``source.cloud``; TerminalError otherwise.

    Parser errors are not quoted: they show the offending line, which may hold a password.
    """
    try:
        doc = yaml.safe_load(source.clouds_yaml)
    except yaml.YAMLError:
        raise _invalid(source, "clouds.yaml is not valid YAML") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("clouds"), dict):
        raise _invalid(source, "clouds.yaml is not a mapping with a 'clouds' mapping")
    entry = doc["clouds"].get(source.cloud)
    if entry is None:  # cloud names are no secret: say which there are
        found = ", ".join(map(str, doc["clouds"])) or "none"
        raise _invalid(source, f"clouds.yaml has no cloud {source.cloud!r} (clouds: {found})")
    if not isinstance(entry, dict):
        raise _invalid(source, f"cloud {source.cloud!r} in clouds.yaml is not a mapping")
    for key in REFUSED_KEYS:
        if key in entry:
            raise _invalid(
                source,
                f"cloud {source.cloud!r} sets {key!r}: vendor profiles are refused "
                "(the SDK would load them over the network); give auth and region instead",
            )
    if source.rules is not None:
        why = tenancy.refusal(entry, source.rules)
        if why is not None:
            raise _invalid(source, f"cloud {source.cloud!r} {why}")
    if source.cacert is not None:
        why = tenancy.cacert_refusal(source.cacert)
        if why is not None:
            raise _invalid(source, why)
    return entry


def _authorize(conn: openstack.connection.Connection) -> None:
    """Get a token now, so bad credentials show up as such and not on the first call."""
    conn.session.get_token()


def _auth_error(source: CloudSource, error: Exception) -> ReconcileError:
    """Classify an authentication failure by type and status only (their text may
    quote the auth_url, which can carry a password)."""
    name = type(error).__name__
    if isinstance(error, ka_exc.SSLError):
        return _invalid(source, f"TLS to auth_url failed ({name})")
    if isinstance(error, ka_exc.ConnectionError | ka_exc.RetriableConnectionFailure):
        return TransientError(REASON, f"{source.origin}: cannot reach auth_url ({name})")
    status = getattr(error, "http_status", None)
    if isinstance(error, ka_exc.HttpError) and status is not None and status >= 500:
        return TransientError(REASON, f"{source.origin}: auth_url answered HTTP {status}")
    if isinstance(error, ka_exc.ClientException):
        detail = f"HTTP {status}, {name}" if status else name
        return _invalid(source, f"authentication failed ({detail})")
    return TransientError(REASON, f"{source.origin}: authentication failed ({name})")


def connect(source: CloudSource) -> openstack.connection.Connection:
    """Build and authenticate a connection from clouds.yaml text. Blocking: run it in a
    thread. Reads nothing but ``source``: no environment, no operator-side clouds.yaml,
    secure.yaml or vendor files (they could add the operator's secrets to a tenant's
    cloud of the same name), no remote profile."""
    entry = dict(cloud_entry(source))
    if "api_timeout" not in entry and "timeout" not in entry:
        entry["api_timeout"] = DEFAULT_API_TIMEOUT
    cacert = None if source.cacert is None else tenancy.write_cacert(source.cacert)
    if cacert is not None:
        entry["cacert"] = cacert
    try:
        conn = _connection(source, entry)
    except BaseException:
        if cacert is not None:
            tenancy.remove_cacert(cacert)
        raise
    if cacert is not None:  # TLS reads it at every new connection: kept while conn is
        weakref.finalize(conn, tenancy.remove_cacert, cacert)
    return conn


def _connection(source: CloudSource, entry: dict[str, Any]) -> openstack.connection.Connection:
    with tempfile.TemporaryDirectory(prefix="kumo-") as tmp:
        path = os.path.join(tmp, "clouds.yaml")
        with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as handle:
            yaml.safe_dump({"clouds": {source.cloud: entry}}, handle)
        try:
            config = openstack.config.OpenStackConfig(
                config_files=[path], vendor_files=[], secure_files=[], load_envvars=False
            )
            region = config.get_one(cloud=source.cloud)
        except Exception as error:
            raise _invalid(
                source, f"cloud {source.cloud!r} is incomplete ({type(error).__name__})"
            ) from None
    conn = openstack.connection.Connection(config=region)
    telemetry.instrument(conn)  # before the token: it is a request too
    try:
        _authorize(conn)
    except Exception as error:
        conn.close()
        raise _auth_error(source, error) from None
    return conn


class CloudRegistry:
    """One cloud adapter per distinct credentials, shared by the namespaces using them."""

    def __init__(
        self,
        default: CloudSource | None,
        read_secret: SecretReader,
        *,
        concurrency: int = 16,
        rate: float = 20.0,
        watch_seconds: float = 10.0,
        relist_seconds: float = 600.0,
        skew_seconds: float = SKEW_SECONDS,
        max_queued_builds: int = MAX_QUEUED_BUILDS,
        rules: tenancy.Rules | None = None,
        connector: Callable[[CloudSource], openstack.connection.Connection] = connect,
        cloud_factory: Callable[[openstack.connection.Connection], OpenStackCloud] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.default = default
        self._read_secret = read_secret
        self._connect = connector
        self._factory = cloud_factory or self._adapter
        self._concurrency = concurrency
        self._rate = rate
        self._watch = {
            "watch_seconds": watch_seconds,
            "relist_seconds": relist_seconds,
            "skew_seconds": skew_seconds,
        }
        self._max_queued_builds = max_queued_builds
        self._rules = rules or tenancy.Rules()  # namespaces' clouds, never the default
        self._clock = clock
        self._clouds: dict[str, OpenStackCloud] = {}  # fingerprint → adapter
        self._used_by: dict[str, str] = {}  # namespace → fingerprint of its adapter
        self._namespace_sources: dict[str, tuple[float, CloudSource | None]] = {}
        self._failures: dict[str, tuple[float, ReconcileError]] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def _adapter(self, conn: openstack.connection.Connection) -> OpenStackCloud:
        from kumo.cloud.adapter import OpenStackCloud

        return OpenStackCloud(
            conn,
            concurrency=self._concurrency,
            rate=self._rate,
            max_queued_builds=self._max_queued_builds,
            **self._watch,
        )

    def set_default(self, source: CloudSource | None) -> bool:
        """Use ``source`` as the default cloud from now on (a rotated Secret, an edited
        file); True when it differs from the one in use. Namespaces on the old default
        take the new one at their next pass; the old connection is closed once no
        namespace uses it, and a failed connect of the old content does not hold the new."""
        if _fingerprint(source) == _fingerprint(self.default):
            return False
        self.default = source
        return True

    def uses_default(self, namespace: str) -> bool:
        """Does ``namespace`` use the default cloud (no Secret of its own when last read)?"""
        cached = self._namespace_sources.get(namespace)
        return cached is None or cached[1] is None

    async def source_for(self, namespace: str) -> CloudSource:
        cached = self._namespace_sources.get(namespace)
        if cached is None or self._clock() - cached[0] > SECRET_TTL:
            cached = (self._clock(), await self._read_source(namespace, cached))
            self._namespace_sources[namespace] = cached
        source = cached[1] or self.default
        if source is None:
            raise TerminalError(
                "NoCloudCredentials",
                f"no Secret {NAMESPACE_SECRET!r} in namespace {namespace!r} and no default cloud",
            )
        return source

    async def _read_source(
        self, namespace: str, cached: tuple[float, CloudSource | None] | None
    ) -> CloudSource | None:
        origin = f"Secret {namespace}/{NAMESPACE_SECRET}"
        try:
            data = await self._read_secret(namespace, NAMESPACE_SECRET)
        except Exception as error:
            if cached is not None:  # an API hiccup: keep what worked until the next read
                log.warning(
                    "%s could not be read (%s); keeping the last one", origin, type(error).__name__
                )
                return cached[1]
            raise TransientError(
                "CredentialsUnavailable", f"{origin} could not be read ({type(error).__name__})"
            ) from None
        if data is None:
            return None
        if "clouds.yaml" not in data:  # a Secret that is there but wrong is not "no Secret"
            raise TerminalError(REASON, f"{origin}: no key 'clouds.yaml'")
        return CloudSource(
            data["clouds.yaml"],
            data.get("cloud", "kumo"),
            origin,
            cacert=data.get(tenancy.CACERT_KEY),
            rules=self._rules,
        )

    async def for_namespace(self, namespace: str) -> OpenStackCloud:
        """The namespace's cloud; any failure is a ReconcileError for this namespace only."""
        try:
            source = await self.source_for(namespace)
            cloud = await self._cloud(source)
        except ReconcileError:
            await self._use(namespace, None)
            raise
        except Exception as error:
            log.exception("credentials of namespace %s failed unexpectedly", namespace)
            await self._use(namespace, None)
            raise TransientError(
                REASON, f"credentials of namespace {namespace!r}: {type(error).__name__}"
            ) from None
        await self._use(namespace, source.fingerprint)
        return cloud

    async def for_source(self, source: CloudSource) -> OpenStackCloud:
        """The cloud of ``source`` itself (a command naming one cloud, `kumo orphans`)."""
        return await self._cloud(source)

    async def _cloud(self, source: CloudSource) -> OpenStackCloud:
        key = source.fingerprint
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:  # one connect per content, however many reconciles ask
            cloud = self._clouds.get(key)
            if cloud is not None:
                return cloud
            failed = self._failures.get(key)
            if failed is not None and self._clock() - failed[0] < CONNECT_RETRY_SECONDS:
                raise failed[1]
            cloud_entry(source)  # cheap checks first, on the loop
            try:
                conn = await asyncio.to_thread(self._connect, source)
            except ReconcileError as error:
                self._failures[key] = (self._clock(), error)
                log.warning("%s", error.message)
                raise
            self._failures.pop(key, None)
            cloud = self._clouds[key] = self._factory(conn)
            return cloud

    async def close_all(self) -> None:
        """Close every connection (a short-lived process, such as `kumo plan`, ends)."""
        clouds, self._clouds = list(self._clouds.values()), {}
        self._used_by.clear()
        for cloud in clouds:
            close = getattr(cloud, "close", None)
            if close is not None:
                await close()

    async def _use(self, namespace: str, key: str | None) -> None:
        """Record which cloud ``namespace`` uses; close one no namespace uses any more."""
        old = self._used_by.pop(namespace, None)
        if key is not None:
            self._used_by[namespace] = key
        if old is None or old == key or old in self._used_by.values():
            return
        cloud = self._clouds.pop(old, None)
        self._locks.pop(old, None)
        close = getattr(cloud, "close", None)
        if close is not None:
            try:
                await close()
            except Exception as error:  # closing is best effort
                log.debug("closing an unused cloud failed: %s", type(error).__name__)

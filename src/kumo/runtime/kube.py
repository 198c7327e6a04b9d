"""A small async Kubernetes client (aiohttp) for the calls the engine and kinds make.

kopf owns the watch streams; this client does the writes (status, finalizers,
members, events) and the odd read (ConfigMaps; the credentials Secret and Secrets an
initScript.secretRef names).

Credentials: one :func:`login` serves both clients, kopf's (its ``@kopf.on.login``
handler, runtime/operator.py) and this one. In a Pod it reads the ServiceAccount's
projected token; elsewhere it reads the kubeconfig as kubectl does, with
kubernetes_asyncio's reader: ``$KUBECONFIG`` (several files merged) or
``~/.kube/config``, certificates and keys as paths or embedded ``-data``, ``token`` and
``tokenFile``, ``exec`` credential plugins (EKS, GKE, AKS, kubelogin), basic auth,
``proxy-url``. Credentials are never kept for good: this client logs in again when they
expire (an exec plugin's ``expirationTimestamp``), in a Pod every minute (the kubelet
rewrites the projected token before it expires, as client-go re-reads it), and once
after a 401, then retries the request; kopf does the same on its own 401s and expiry.

Both clients, this one and kopf's, name the process in their User-Agent
(:func:`user_agent`: ``kumo/<version> (<identity>)``, the identity its leader Lease
would carry). The API server's audit log records the User-Agent of every request, so
which of two operators wrote something is visible there: the integration suite checks
that a standby wrote nothing (tests/integration/test_leader_election.py).
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import logging
import os
import ssl
import tempfile
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import kopf
from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config.kube_config import KubeConfigLoader, KubeConfigMerger

from kumo import __version__
from kumo.api.kinds import KindInfo
from kumo.engine.conditions import now_rfc3339
from kumo.engine.errors import ObjectGone, TerminalError, TransientError
from kumo.engine.objects import Body, External, Obj
from kumo.engine.text import EVENT_LIMIT, public_text
from kumo.runtime.leader import LeaseRecord

log = logging.getLogger("kumo.kube")

MERGE = "application/merge-patch+json"
#: How long this client uses a ServiceAccount token read from its file (client-go's
#: period): the kubelet rewrites a projected token well before the old one expires.
TOKEN_REREAD = timedelta(minutes=1)
#: Credentials this close to their expiration are renewed before a request, not after
#: the API server refused them.
EXPIRY_SKEW = timedelta(seconds=10)
#: How long a login may take (an exec plugin that hangs): requests wait for it, so it
#: is bounded; long enough for a person to finish an interactive one (`kumo plan`).
LOGIN_TIMEOUT = 120.0

#: What gives fresh credentials: :func:`login` (None when there are none).
Login = Callable[[], Awaitable[kopf.ConnectionInfo | None]]


def user_agent(identity: str | None = None) -> str:
    """The User-Agent of Kumo's requests: ``kumo/<version>``, with the process's
    identity (as in its leader Lease) in parentheses when it has one."""
    return f"kumo/{__version__} ({identity})" if identity else f"kumo/{__version__}"


@dataclasses.dataclass(frozen=True, kw_only=True)
class IdentifiedConnectionInfo(kopf.ConnectionInfo):
    """kopf's connection info plus a User-Agent: kopf keeps the one its headers carry
    (else it sends ``kopf/<version>``, the same for every operator)."""

    user_agent: str = dataclasses.field(default_factory=user_agent)
    #: When this client reads the credentials again although they did not expire (the
    #: ServiceAccount token file, which the kubelet rewrites); None: on expiry or a 401.
    reread_at: datetime | None = None

    def as_http_headers(self) -> dict[str, str]:
        return {**super().as_http_headers(), "User-Agent": self.user_agent}


async def login(
    settings: kopf.OperatorSettings, identity: str | None = None
) -> IdentifiedConnectionInfo | None:
    """Credentials in a Pod (its ServiceAccount), else from the kubeconfig; requests
    made with them carry :func:`user_agent` of ``identity``. Each call reads them
    afresh: a rotated token, a new exec plugin credential.

    In a Pod, the API server is the one ``KUBERNETES_SERVICE_HOST``/``_PORT`` name, as
    client-go's in-cluster configuration takes it: kopf's own helper assumes the DNS
    name ``kubernetes.default.svc`` on port 443, which a host-network Pod or a cluster
    without cluster DNS cannot resolve."""
    reread_at = None
    info = kopf.login_with_service_account(settings=settings)
    if info is not None:
        host = os.environ.get("KUBERNETES_SERVICE_HOST")
        port = os.environ.get("KUBERNETES_SERVICE_PORT")
        if host and port:
            host = f"[{host}]" if ":" in host else host
            info = dataclasses.replace(info, server=f"https://{host}:{port}")
        reread_at = datetime.now(UTC) + TOKEN_REREAD
    else:
        info = await login_with_kubeconfig(settings)
    if info is None:
        return None
    fields = {f.name: getattr(info, f.name) for f in dataclasses.fields(info)}
    return IdentifiedConnectionInfo(**fields, user_agent=user_agent(identity), reread_at=reread_at)


def kubeconfig_loader() -> KubeConfigLoader | None:
    """The kubeconfig's current context as kubectl would take it (``$KUBECONFIG``, its
    files merged, else ``~/.kube/config``); None when there is no file. Reading it runs
    nothing (an exec plugin runs at :func:`login_with_kubeconfig`) and raises on a
    kubeconfig kubectl would refuse (no current context, a context naming no cluster)."""
    paths = os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    merged = KubeConfigMerger(paths)
    if merged.config is None:
        return None
    return KubeConfigLoader(config_dict=merged.config, config_base_path=None)


def current_namespace() -> str:
    """The namespace kubectl would use: the current context's, else ``default`` (also
    when there is no kubeconfig, or one kubectl would refuse: the command then fails at
    login with the reason)."""
    try:
        loader = kubeconfig_loader()
    except Exception:  # kubernetes_asyncio raises ConfigException, KeyError, TypeError
        return "default"
    context = ((loader.current_context or {}).get("context") or {}) if loader else {}
    return str(context.get("namespace") or "default")


async def login_with_kubeconfig(settings: kopf.OperatorSettings) -> kopf.ConnectionInfo | None:
    """The kubeconfig's credentials now: an exec plugin is run, a ``tokenFile`` read.
    Embedded certificate data is written by kubernetes_asyncio to private temporary
    files (mode 0600, removed at exit), which both clients load."""
    loader = kubeconfig_loader()
    if loader is None:
        return None
    config = Configuration()
    await loader.load_and_set(config)
    scheme, _, token = (config.api_key.get("BearerToken") or "").partition(" ")
    if not config.host:
        raise ValueError("the kubeconfig's cluster has no server")
    context = (loader.current_context or {}).get("context") or {}
    expiry = getattr(loader, "exec_plugin_expiry", None)  # an exec plugin's, if it said
    return kopf.ConnectionInfo(
        server=config.host,
        ca_path=config.ssl_ca_cert or None,
        insecure=True if not config.verify_ssl else None,
        certificate_path=config.cert_file or None,
        private_key_path=config.key_file or None,
        scheme=scheme or None,
        token=token or None,
        default_namespace=context.get("namespace") or None,
        proxy_url=config.proxy or None,
        trust_env=settings.networking.trust_env,
        expiration=expiry if isinstance(expiry, datetime) else None,
    )


class KubeClient:
    """Kumo's requests to the API server. With ``login`` (as :meth:`from_environment`
    gives), credentials are renewed as the module's docstring says; with ``info``
    alone they are used as they are (tests)."""

    def __init__(
        self,
        info: kopf.ConnectionInfo | None,
        identity: str | None = None,
        *,
        login: Login | None = None,
    ) -> None:
        if info is None and login is None:
            raise ValueError("KubeClient needs credentials or a login")
        self._info = info
        self._login = login
        self._user_agent = user_agent(identity)
        self._session: aiohttp.ClientSession | None = None
        self._session_key: tuple[Any, ...] = ()
        self._retired: list[aiohttp.ClientSession] = []
        self._renewing = asyncio.Lock()

    @classmethod
    def from_environment(cls, identity: str | None = None) -> KubeClient:
        """A client with the credentials :func:`login` finds, naming ``identity``. The
        kubeconfig is read here (a broken one fails now); an exec plugin runs at the
        first request."""
        settings = kopf.OperatorSettings()
        if kopf.login_with_service_account(settings=settings) is None and (
            kubeconfig_loader() is None
        ):
            raise RuntimeError("no Kubernetes credentials: set KUBECONFIG or run in a cluster")

        async def fresh() -> kopf.ConnectionInfo | None:
            return await login(settings, identity)

        return cls(None, identity, login=fresh)

    async def _credentials(self) -> kopf.ConnectionInfo:
        info = self._info
        if info is None or (self._login is not None and _stale(info)):
            return await self._renew(info)
        return info

    async def _renew(self, seen: kopf.ConnectionInfo | None) -> kopf.ConnectionInfo:
        """Log in afresh, unless another request did since it used ``seen``."""
        async with self._renewing:
            if self._info is seen and self._login is not None:
                try:
                    fresh = await asyncio.wait_for(self._login(), LOGIN_TIMEOUT)
                except Exception as error:  # an exec plugin failing or hanging, no kubeconfig
                    # Its text may quote the plugin's output: the log only, not the status.
                    log.warning("logging in to the API server failed: %s", error)
                    raise TransientError(
                        "KubernetesLoginFailed",
                        f"logging in to the API server failed ({type(error).__name__}): "
                        "the log has its message",
                    ) from error
                if fresh is None:
                    raise TransientError(
                        "KubernetesCredentials", "no Kubernetes credentials (kubeconfig gone?)"
                    )
                self._info = fresh
            assert self._info is not None
            return self._info

    def _session_for(self, info: kopf.ConnectionInfo) -> aiohttp.ClientSession:
        """One session per server and TLS identity: a new token reuses it; a new client
        certificate (an exec plugin's) gets its own (the old one closes with the client)."""
        key = (
            info.server,
            info.insecure,
            info.ca_path,
            info.ca_data,
            info.certificate_path,
            info.certificate_data,
            info.private_key_path,
            info.private_key_data,
        )
        if self._session is None or key != self._session_key:
            if self._session is not None:
                self._retired.append(self._session)
            self._session = aiohttp.ClientSession(
                base_url=info.server.rstrip("/") + "/",
                connector=aiohttp.TCPConnector(ssl=_ssl(info)),
                trust_env=info.trust_env,
            )
            self._session_key = key
        return self._session

    async def _send(
        self, info: kopf.ConnectionInfo, method: str, path: str, body: Any, content_type: str
    ) -> tuple[int, Any]:
        headers = {**info.as_http_headers(), "User-Agent": self._user_agent}
        if body is not None:
            headers["Content-Type"] = content_type
        session = self._session_for(info)
        async with session.request(
            method, path.lstrip("/"), json=body, headers=headers, proxy=info.proxy_url
        ) as r:
            if r.status in (401, 404):
                return r.status, None
            return r.status, await r.json(content_type=None)

    async def _request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        info = await self._credentials()
        status, payload = await self._send(info, method, path, body, content_type)
        if status == 401 and self._login is not None:
            # The token expired, rotated or was revoked: log in afresh, try once more.
            log.info(
                "%s %s: the API server refused the credentials (401), logging in again",
                method,
                path,
            )
            info = await self._renew(info)
            status, payload = await self._send(info, method, path, body, content_type)
        if status == 404:
            return None
        if status == 401:  # still refused: the next attempt logs in again
            raise TransientError("KubernetesUnauthorized", f"{method} {path}: Unauthorized")
        if status >= 400:
            message = (
                payload.get("message", str(payload)) if isinstance(payload, dict) else str(payload)
            )
            if status in (409, 429) or status >= 500:
                raise TransientError("KubernetesConflict", f"{method} {path}: {message}")
            if status == 403:  # RBAC: the deployed ClusterRole does not allow it
                raise TerminalError("KubernetesForbidden", f"{method} {path}: {message}")
            raise TerminalError("KubernetesRejected", f"{method} {path}: {message}")
        return payload

    async def close(self) -> None:
        for session in [*self._retired, self._session]:
            if session is not None:
                await session.close()
        self._session, self._retired = None, []

    # -- custom objects ------------------------------------------------------------------

    @staticmethod
    def _path(info: KindInfo, namespace: str | None, name: str | None = None) -> str:
        """A kind's collection in one namespace (or, with None, in all), or one object."""
        where = f"namespaces/{namespace}/" if namespace else ""
        base = f"/apis/{info.api_version}/{where}{info.plural}"
        return f"{base}/{name}" if name else base

    async def patch_status(self, obj: Obj, status: Body) -> Body:
        path = self._path(obj.info, obj.namespace, obj.name) + "/status"
        result = await self._request("PATCH", path, {"status": status}, MERGE)
        return _written(result, obj.info, obj.namespace, obj.name)

    async def set_finalizers(self, obj: Obj, finalizers: list[str]) -> Body:
        patch = {
            "metadata": {
                "finalizers": finalizers,
                "resourceVersion": obj.meta.get("resourceVersion"),
            }
        }
        result = await self._request(
            "PATCH", self._path(obj.info, obj.namespace, obj.name), patch, MERGE
        )
        return _written(result, obj.info, obj.namespace, obj.name)

    async def create(self, info: KindInfo, namespace: str, body: Body) -> Body:
        result = await self._request("POST", self._path(info, namespace), body)
        return _written(result, info, namespace, body["metadata"].get("name", ""))

    async def patch(self, info: KindInfo, namespace: str, name: str, patch: Body) -> Body:
        result = await self._request("PATCH", self._path(info, namespace, name), patch, MERGE)
        return _written(result, info, namespace, name)

    async def delete(self, info: KindInfo, namespace: str, name: str) -> None:
        """404 is what a delete wants: the object is gone either way."""
        await self._request("DELETE", self._path(info, namespace, name))

    async def get(self, info: KindInfo, namespace: str, name: str) -> Body | None:
        return await self._request("GET", self._path(info, namespace, name))  # type: ignore[no-any-return]

    async def list(self, info: KindInfo, namespace: str | None = None) -> list[Body]:
        """Every object of a kind (in one namespace or all), each with kind and apiVersion."""
        path = self._path(info, namespace)
        items: list[Body] = []
        token = ""
        while True:
            page = await self._request(
                "GET", f"{path}?limit=500{'&continue=' + token if token else ''}"
            )
            for item in (page or {}).get("items", []):
                items.append({"apiVersion": info.api_version, "kind": info.kind, **item})
            token = ((page or {}).get("metadata") or {}).get("continue") or ""
            if not token:
                return items

    async def get_external(self, ref: External, namespace: str, name: str) -> Body | None:
        """An object of another API by name (a Cluster API Cluster or Machine): a get
        only, so RBAC grants ``get`` on it and nothing more."""
        path = f"/apis/{ref.group}/{ref.version}/namespaces/{namespace}/{ref.plural}/{name}"
        return await self._request("GET", path)  # type: ignore[no-any-return]

    # -- core objects --------------------------------------------------------------------

    async def get_namespace(self, name: str) -> Body | None:
        """A Namespace (the cluster's identity is ``kube-system``'s UID: runtime/cluster.py)."""
        return await self._request("GET", f"/api/v1/namespaces/{name}")  # type: ignore[no-any-return]

    async def get_config_map(self, namespace: str, name: str) -> Body | None:
        return await self._request("GET", f"/api/v1/namespaces/{namespace}/configmaps/{name}")  # type: ignore[no-any-return]

    async def get_secret(self, namespace: str, name: str) -> Body | None:
        """A Secret as the API returns it (data base64-encoded). Never log it."""
        return await self._request("GET", f"/api/v1/namespaces/{namespace}/secrets/{name}")  # type: ignore[no-any-return]

    async def get_secret_data(self, namespace: str, name: str) -> dict[str, str] | None:
        """A Secret's data, decoded. Values are credentials: never log them."""
        secret = await self.get_secret(namespace, name)
        if secret is None:
            return None
        return {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}

    async def post_event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        involved = {
            "apiVersion": obj.info.api_version,
            "kind": obj.info.kind,
            "name": obj.name,
            "namespace": obj.namespace,
            "uid": obj.uid,
        }
        await self._post_event(obj.namespace, obj.name, involved, type_, reason, message)

    async def post_namespace_event(
        self, namespace: str, type_: str, reason: str, message: str
    ) -> None:
        """An event about the namespace itself (the orphan sweep's: the owner is gone)."""
        # The API server refuses an event whose namespace differs from its involved
        # object's; a Namespace has none, so it is given its own (kubectl get events -n).
        involved = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "name": namespace,
            "namespace": namespace,
        }
        await self._post_event(namespace, namespace, involved, type_, reason, message)

    async def _post_event(
        self,
        namespace: str,
        name: str,
        involved: Body,
        type_: str,
        reason: str,
        message: str,
    ) -> None:
        now = now_rfc3339()
        event = {
            "metadata": {"generateName": f"{name}.", "namespace": namespace},
            "involvedObject": involved,
            "type": type_,
            "reason": reason,
            "message": public_text(message, EVENT_LIMIT),  # every event Kumo posts passes here
            "source": {"component": "kumo"},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "reportingComponent": "kumo",
        }
        await self._request("POST", f"/api/v1/namespaces/{namespace}/events", event)


class KubeLeaseAPI:
    """One Lease (coordination.k8s.io/v1) read and written for leader election."""

    def __init__(self, kube: KubeClient, namespace: str, name: str) -> None:
        self._kube = kube
        self.namespace = namespace
        self.name = name
        self._path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"

    async def get_lease(self) -> LeaseRecord | None:
        body = await self._kube._request("GET", f"{self._path}/{self.name}")
        return _lease_record(body) if body is not None else None

    async def create_lease(self, record: LeaseRecord) -> LeaseRecord:
        body = await self._kube._request("POST", self._path, self._body(record))
        if body is None:
            raise TransientError("LeaseNamespaceMissing", f"namespace {self.namespace} not found")
        return _lease_record(body)

    async def update_lease(self, record: LeaseRecord) -> LeaseRecord:
        body = await self._kube._request("PUT", f"{self._path}/{self.name}", self._body(record))
        if body is None:
            raise TransientError("LeaseGone", f"lease {self.namespace}/{self.name} was deleted")
        return _lease_record(body)

    def _body(self, record: LeaseRecord) -> Body:
        meta: Body = {"name": self.name, "namespace": self.namespace}
        if record.resource_version:  # optimistic concurrency: 409 if someone wrote meanwhile
            meta["resourceVersion"] = record.resource_version
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": meta,
            "spec": {
                "holderIdentity": record.holder,
                "leaseDurationSeconds": record.lease_seconds,
                "acquireTime": record.acquire_time,
                "renewTime": record.renew_time,
                "leaseTransitions": record.transitions,
            },
        }


def _lease_record(body: Body) -> LeaseRecord:
    spec = body.get("spec") or {}
    return LeaseRecord(
        holder=spec.get("holderIdentity") or "",
        lease_seconds=int(spec.get("leaseDurationSeconds") or 0),
        acquire_time=spec.get("acquireTime"),
        renew_time=spec.get("renewTime"),
        transitions=int(spec.get("leaseTransitions") or 0),
        resource_version=body.get("metadata", {}).get("resourceVersion"),
    )


def _written(result: Any, info: KindInfo, namespace: str, name: str) -> Body:
    """The body a write returned; a 404 (``_request`` gives None) is never success."""
    if result is None:
        raise ObjectGone(info.kind, namespace, name)
    return result  # type: ignore[no-any-return]


def _stale(info: kopf.ConnectionInfo) -> bool:
    """Whether credentials are to be read again before a request."""
    now = datetime.now(UTC)
    expiration = info.expiration
    if expiration is not None:
        expiration = expiration if expiration.tzinfo else expiration.replace(tzinfo=UTC)
        if now >= expiration - EXPIRY_SKEW:
            return True
    reread_at = getattr(info, "reread_at", None)
    return reread_at is not None and now >= reread_at


def _ssl(info: kopf.ConnectionInfo) -> ssl.SSLContext | bool:
    if info.insecure:
        return False
    context = ssl.create_default_context(
        cafile=str(info.ca_path) if info.ca_path else None,
        cadata=_text(info.ca_data) if info.ca_data else None,
    )
    if info.certificate_path and info.private_key_path:
        context.load_cert_chain(str(info.certificate_path), str(info.private_key_path))
    elif info.certificate_data and info.private_key_data:
        # ssl loads a client certificate from files only: private ones, gone at once.
        with tempfile.TemporaryDirectory() as private:
            cert, key = Path(private, "cert.pem"), Path(private, "key.pem")
            cert.write_text(_text(info.certificate_data))
            key.write_text(_text(info.private_key_data))
            context.load_cert_chain(str(cert), str(key))
    return context


def _text(value: str | bytes) -> str:
    """PEM text from kopf's ``*_data``, which keeps kubeconfig's base64 encoding."""
    text = value.decode() if isinstance(value, bytes) else value
    if "-----BEGIN" in text:
        return text
    return base64.b64decode(text).decode()

"""Per-service metrics of the cloud calls: requests, latency, errors, waits, listings.

Every HTTP request openstacksdk and keystoneauth make goes through the connection's one
``requests.Session``; :func:`instrument` hangs a response hook on it, so each request (a
retry, a page of a listing, the token itself) is counted once, whatever Kumo call made
it. Its labels are bounded:

* ``service``: the catalog's service type whose endpoint the URL is under (aliases
  folded: ``volumev3`` is ``block-storage``), ``identity`` for the token before there is
  a catalog, else ``other``;
* ``operation``: the method and a URL template (:func:`operation`): the version and the
  project are dropped, every path segment that is not an OpenStack word is ``{id}``, the
  query is never read. A service has at most :data:`MAX_OPERATIONS` of them; any more
  are ``other``;
* ``status_class``: ``2xx`` … ``5xx``.

``elapsed`` is requests' own: from sending the request to parsing the response's
headers (the body's download is not in it).

The same path carries the pass's global request ID (:mod:`kumo.engine.trace`): a
wrapper of the session's ``send`` (:class:`Sender`) adds ``X-OpenStack-Request-ID``
to every request made while a pass is current, and the hook hands each response's own
``x-openstack-request-id`` to that pass. Both read the context of the calling thread:
the cloud adapter runs each call with a copy of its pass's context (cloud/base.py).

Failures are counted by the classifier's category (cloud/errors.py) where ``_call``
classifies them, and the waits they cause (409 busy, 413/429 rate limits) beside them;
Kumo's own token bucket counts its waits as ``service="any"`` (it is per cloud).
"""

from __future__ import annotations

import re
import threading
from typing import Any
from urllib.parse import urlsplit

from prometheus_client import Counter, Histogram

from kumo.engine import trace

REQUESTS = Counter(
    "kumo_cloud_requests_total",
    "HTTP requests to the cloud's APIs",
    ["service", "operation", "status_class"],
)
REQUEST_SECONDS = Histogram(
    "kumo_cloud_request_seconds",
    "Time from sending a cloud API request to its response's headers",
    ["service", "operation"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
ERRORS = Counter(
    "kumo_cloud_errors_total",
    "Failed cloud calls by the classifier's category (cloud/errors.py)",
    ["service", "category"],
)
WAITS = Counter(
    "kumo_cloud_waits_total",
    "Waits the cloud asked for (busy: 409; rate_limited: 413/429) or Kumo's own rate "
    'limiter imposed (throttled, service="any")',
    ["service", "reason"],
)
WATCH_LISTINGS = Counter(
    "kumo_watch_listings_total",
    "Listings of the cloud watch (cloud/watch.py)",
    ["service", "resource", "outcome"],
)
WATCH_LISTING_SECONDS = Histogram(
    "kumo_watch_listing_seconds",
    "Time per listing of the cloud watch, all its pages",
    ["service", "resource"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
)

#: The header oslo.middleware's request_id filter takes a global request ID from (which
#: services log it: docs/operations.md, "Logs and request IDs").
REQUEST_ID_HEADER = "X-OpenStack-Request-ID"
#: The headers a service answers with its own request ID in (Nova sends both).
RESPONSE_ID_HEADERS = ("x-openstack-request-id", "x-compute-request-id")

#: Operations per service at most; any more are counted as ``other``.
MAX_OPERATIONS = 64
OTHER = "other"

#: Path segments kept as they are; any other segment is an ID or a name: ``{id}``.
_WORDS = """
    servers detail action flavors images os-keypairs os-server-groups os-interface
    os-volume_attachments os-availability-zone os-quota-sets os-simple-tenant-usage
    metadata tags limits extensions ips os-security-groups diagnostics
    networks subnets ports routers floatingips security-groups security-group-rules
    add_router_interface remove_router_interface quotas availability_zones subnetpools
    lbaas loadbalancers listeners pools members healthmonitors l7policies rules status
    stats failover amphorae octavia providers flavorprofiles
    zones recordsets tasks transfer_requests imports exports
    shares share-networks share-types access-rules share-access-rules export_locations
    volumes types snapshots backups attachments qos-specs
    auth tokens projects users domains catalog system schemas file
"""
WORDS = frozenset(_WORDS.split())
_VERSION = re.compile(r"^v\d+(\.\d+)?$")
_ALIASES = {
    "volume": "block-storage",
    "volumev2": "block-storage",
    "volumev3": "block-storage",
    "block-store": "block-storage",
    "share": "shared-file-system",
    "sharev2": "shared-file-system",
    "load-balancer": "load-balancer",
    "identity": "identity",
}


def operation(method: str, url: str) -> str:
    """``GET /servers/{id}`` for ``GET https://nova/v2.1/servers/8f1…?x=1``: the template
    of a request (see the module's docstring)."""
    path = urlsplit(url).path
    if path.endswith(".json"):  # Neutron's old suffix
        path = path[: -len(".json")]
    parts: list[str] = []
    for segment in path.split("/"):
        if not segment or _VERSION.match(segment):
            continue
        if segment in WORDS:
            parts.append(segment)
        elif parts:  # a leading ID is the project's (Cinder, Manila): dropped
            parts.append("{id}")
    return f"{method.upper()} /{'/'.join(parts)}"


def status_class(status: int) -> str:
    return f"{status // 100}xx" if 100 <= status < 600 else OTHER


#: The operations seen per service (for the cap).
_SEEN: dict[str, set[str]] = {}
_LOCK = threading.Lock()


class Recorder:
    """Turns one connection's responses into the metrics: the URL's service by the
    catalog, its operation, capped per service (shared by every connection: the cap
    is the process's)."""

    def __init__(self, session: Any) -> None:
        #: keystoneauth's Session: its auth plugin holds the catalog once authenticated.
        self.session = session
        self._catalog_of: object = None
        self._prefixes: list[tuple[str, str]] = []

    def hook(self, response: Any, *args: Any, **kwargs: Any) -> None:
        """requests' response hook; never raises (a metric must not fail a call)."""
        try:
            request = response.request
            service = self.service(request.url)
            name = self.operation(service, request.method, request.url)
            REQUESTS.labels(service, name, status_class(response.status_code)).inc()
            REQUEST_SECONDS.labels(service, name).observe(response.elapsed.total_seconds())
        except Exception:  # pragma: no cover - defensive
            pass
        opened = trace.current()
        if opened is not None:
            opened.saw(response_request_id(response))

    def operation(self, service: str, method: str, url: str) -> str:
        name = operation(method, url)
        seen = _SEEN.get(service)
        if seen is not None and name in seen:
            return name
        with _LOCK:
            seen = _SEEN.setdefault(service, set())
            if name in seen:
                return name
            if len(seen) >= MAX_OPERATIONS:
                return OTHER
            seen.add(name)
            return name

    def service(self, url: str) -> str:
        """The service type whose endpoint is the longest prefix of ``url``."""
        self._refresh()
        for prefix, service in self._prefixes:
            if url.startswith(prefix):
                return service
        if "/auth/tokens" in url or not self._prefixes:
            return "identity"
        return OTHER

    def service_of(self, error: BaseException) -> str:
        """The service an SDK error's response came from, if it has one."""
        response = getattr(error, "response", None)
        url = getattr(getattr(response, "request", None), "url", None)
        return self.service(url) if isinstance(url, str) else "unknown"

    def _refresh(self) -> None:
        """Read the catalog again when the token changed (never authenticates: the hook
        may run inside the token request itself)."""
        auth_ref = getattr(getattr(self.session, "auth", None), "auth_ref", None)
        if auth_ref is None or auth_ref is self._catalog_of:
            return
        prefixes = []
        try:
            for entry in auth_ref.service_catalog.normalize_catalog():
                service = _ALIASES.get(entry["type"], entry["type"])
                for endpoint in entry.get("endpoints", []):
                    url = endpoint.get("url")
                    if url:
                        prefixes.append((url.rstrip("/"), service))
        except Exception:  # pragma: no cover - an odd catalog: keep the old table
            return
        prefixes.sort(key=lambda p: len(p[0]), reverse=True)
        self._prefixes = prefixes
        self._catalog_of = auth_ref


def response_request_id(response: Any) -> str | None:
    """The service's own ID of the request ``response`` answers, if it says one."""
    headers = getattr(response, "headers", None) or {}
    for name in RESPONSE_ID_HEADERS:
        value = headers.get(name)
        if value:
            return str(value)
    return None


class Sender:
    """Stands in for a ``requests.Session``'s ``send``: adds the current pass's global
    request ID to each request that carries none yet (a caller's own is kept)."""

    def __init__(self, send: Any) -> None:
        self.send = send

    def __call__(self, request: Any, **kwargs: Any) -> Any:
        opened = trace.current()
        if opened is not None and REQUEST_ID_HEADER not in request.headers:
            request.headers[REQUEST_ID_HEADER] = opened.request_id
        return self.send(request, **kwargs)


def instrument(conn: Any) -> Recorder:
    """Count every HTTP request of this openstacksdk connection, and tag it with the
    current pass's global request ID (idempotent)."""
    session = getattr(conn, "session", None)
    http: Any = getattr(session, "session", None)
    hooks = getattr(http, "hooks", {}).setdefault("response", [])
    if not isinstance(hooks, list):  # not a requests.Session (a test's stand-in)
        return Recorder(session)
    send = getattr(http, "send", None)
    if send is not None and not isinstance(send, Sender):
        http.send = Sender(send)
    for hook in hooks:
        recorder = getattr(hook, "__self__", None)
        if isinstance(recorder, Recorder):
            return recorder
    recorder = Recorder(session)
    hooks.append(recorder.hook)
    return recorder

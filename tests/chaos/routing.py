"""Point an operator's cloud at the fault proxy: a clouds.yaml entry with per-service
endpoint overrides.

Why overrides and not a proxied catalog: Keystone's catalog is shared by every user of
the lab, while ``<service>_endpoint_override`` (openstacksdk's per-cloud setting,
e.g. ``compute_endpoint_override``; the service type's dashes become underscores) changes
only the connections built from this one entry. Keystone itself stays direct, so
authentication is never faulted.

An override is used as the service's base URL as it is, so it must carry the version
path the SDK would otherwise find: the lab's Nova is ``/v2.1`` in the catalog, and for
Neutron and Octavia the SDK appends ``v2.0`` to the catalog URL itself — which it skips
when an override is given. :func:`override_url` keeps the path of the endpoint the SDK
actually uses (``proxy.get_endpoint()`` on a direct connection) and adds those version
paths if the endpoint lacks them — except for Octavia, whose override must be its root.
(Checked against the lab: compute /v2.1, network /v2.0, image /v2 with
``image_api_version: 2``, dns /v2 and load-balancer's root all route.)
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

#: Service type → the openstacksdk Connection attribute of its proxy. Everything Kumo
#: calls besides Keystone.
SERVICES: dict[str, str] = {
    "compute": "compute",
    "network": "network",
    "image": "image",
    "load-balancer": "load_balancer",
    "dns": "dns",
}
#: Services the SDK knows in several major versions: with an override and no version
#: it runs discovery on the override URL, which Glance answers only at its root. Saying
#: the version (``image_api_version``) makes the SDK trust the override as it is.
API_VERSION = {"image": "2"}
#: Version paths an override must carry when the endpoint has none.
DEFAULT_VERSION = {"compute": "v2.1", "network": "v2.0"}
#: Services whose override must be the bare root: the SDK's Octavia proxy fails on a
#: versioned override (it reads the version document at /v2 as a root document) and
#: finds /v2 itself from the root's.
ROOT_ONLY = {"load-balancer"}
VERSIONED = re.compile(r"/v\d+(\.\d+)?/?$")


def override_key(service_type: str) -> str:
    return f"{service_type.replace('-', '_')}_endpoint_override"


def override_url(service_type: str, endpoint: str, proxy_base: str) -> str:
    """``endpoint`` with scheme and host:port of ``proxy_base``, path kept (plus the
    version path the SDK would add, when missing)."""
    parts = urlsplit(endpoint)
    proxy = urlsplit(proxy_base)
    path = "" if service_type in ROOT_ONLY else parts.path.rstrip("/")
    version = DEFAULT_VERSION.get(service_type)
    if version and not VERSIONED.search(path):
        path = f"{path}/{version}"
    return urlunsplit((proxy.scheme, proxy.netloc, path, parts.query, ""))


def upstream_of(endpoint: str) -> str:
    """``http://host:port`` of an endpoint: what one proxy listener forwards to."""
    parts = urlsplit(endpoint)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def service_endpoints(conn: Any) -> dict[str, str]:
    """Service type → the base URL a direct connection really uses (versioned)."""
    found: dict[str, str] = {}
    for service_type, attr in SERVICES.items():
        endpoint = getattr(conn, attr).get_endpoint()
        if not endpoint:
            raise RuntimeError(f"no {service_type} endpoint in the catalog")
        found[service_type] = str(endpoint)
    return found


def proxied_entry(
    entry: Mapping[str, Any], endpoints: Mapping[str, str], proxies: Mapping[str, str]
) -> dict[str, Any]:
    """A copy of a clouds.yaml entry whose services go through ``proxies``
    (service type → ``http://127.0.0.1:PORT``); auth is left as it is."""
    proxied = copy.deepcopy(dict(entry))
    for service_type, endpoint in endpoints.items():
        proxied[override_key(service_type)] = override_url(
            service_type, endpoint, proxies[service_type]
        )
        if service_type in API_VERSION:
            proxied[f"{service_type.replace('-', '_')}_api_version"] = API_VERSION[service_type]
    return proxied

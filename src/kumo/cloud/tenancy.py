"""What a namespace's clouds.yaml may ask of the operator, and its CA file.

A namespace's ``kumo-cloud-credentials`` Secret is the namespace's input, read by a
process that holds the operator's own files: its ServiceAccount token, the default
cloud's credentials and CA. So a namespace's cloud entry may not name a file (it would
be read, or sent as a client certificate, by the operator), may reach only the auth
hosts the operator allows (``--allowed-auth-hosts``) and may not override the catalog's
endpoints unless the operator allows it (``--allow-endpoint-overrides``). A CA comes as
the Secret's own key ``cacert``: Kumo writes it to a file of its own.

The operator's default cloud (``--clouds-yaml``, ``--credentials-secret``) is the
operator's own and is not checked. :mod:`kumo.cloud.credentials` calls :func:`refusal`
on every namespace's entry before anything connects, and :func:`write_cacert` when it
builds a connection.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

#: Keys that name a file the SDK would read (a CA, a client certificate and its key).
FILE_KEYS = frozenset({"cacert", "cert", "key", "client_cert", "client_key"})
FILE_SUFFIXES = ("_file", "_path", "_cacert", "_cert")
#: The Secret's key holding a PEM CA for a namespace's cloud.
CACERT_KEY = "cacert"
_REMEDY = f"give a CA as the Secret's key {CACERT_KEY!r}"


@dataclass(frozen=True)
class Rules:
    """The operator's rules for namespaces' clouds (its `run` flags)."""

    #: Hosts (or host:port) a namespace's auth_url may name, sorted; empty: any host.
    allowed_auth_hosts: tuple[str, ...] = ()
    allow_endpoint_overrides: bool = False

    @classmethod
    def from_flags(cls, allowed_auth_hosts: str, allow_endpoint_overrides: bool) -> Rules:
        """From ``--allowed-auth-hosts a,b`` and ``--allow-endpoint-overrides``."""
        hosts = {h.strip().lower() for h in allowed_auth_hosts.split(",") if h.strip()}
        return cls(tuple(sorted(hosts)), allow_endpoint_overrides)


def refusal(entry: Mapping[str, Any], rules: Rules) -> str | None:
    """Why a namespace's cloud entry is refused (naming the key or the host), or None.

    Keys are read as the SDK reads them: at the top level and under ``auth`` (it looks
    for auth options in both), ``-`` and ``_`` alike.
    """
    for path, key, value in _keys(entry):
        if key in FILE_KEYS or key.endswith(FILE_SUFFIXES):
            return f"sets {path!r}: it may not name a file on the operator ({_REMEDY})"
        if key == "verify" and not isinstance(value, bool):
            return f"sets {path!r} to a path: it may only be true or false ({_REMEDY})"
        if _endpoint_override(key) and not rules.allow_endpoint_overrides:
            return (
                f"sets {path!r}: endpoint overrides are refused "
                "(the operator runs without --allow-endpoint-overrides)"
            )
    if rules.allowed_auth_hosts:
        return _host_refusal(entry, rules.allowed_auth_hosts)
    return None


def _keys(entry: Mapping[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """(path as written, normalised key, value) of the entry's and its auth's keys."""
    auth = entry.get("auth")
    for prefix, mapping in (("", entry), ("auth.", auth if isinstance(auth, Mapping) else {})):
        for key, value in mapping.items():
            yield f"{prefix}{key}", str(key).replace("-", "_").lower(), value


def _endpoint_override(key: str) -> bool:
    """``<service>_endpoint_override``, and ``endpoint`` (the token_endpoint and
    none auth plugins' fixed endpoint)."""
    return key in ("endpoint_override", "endpoint") or key.endswith("_endpoint_override")


def _host_refusal(entry: Mapping[str, Any], allowed: tuple[str, ...]) -> str | None:
    """auth_url and every other URL the auth plugin would call (an OIDC plugin's
    endpoints) must name an allowed host; endpoint overrides have their own flag."""
    keys = list(_keys(entry))
    if not any(key == "auth_url" for _, key, _ in keys):
        return "sets no auth_url: with --allowed-auth-hosts it must name an allowed host"
    for path, key, value in keys:
        if key != "auth_url" and (_endpoint_override(key) or not _looks_like_url(value)):
            continue
        host = _host(value)
        if host is None or not ({host, _host_port(value)} & set(allowed)):
            return f"sets {path!r} to host {host or '?'!r}, not one of --allowed-auth-hosts"
    return None


def _looks_like_url(value: Any) -> bool:
    return isinstance(value, str) and "://" in value


def _host(url: Any) -> str | None:
    if not isinstance(url, str):
        return None
    return urllib.parse.urlsplit(url).hostname


def _host_port(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        return ""
    return f"{parts.hostname}:{port}" if port is not None else ""


def cacert_refusal(pem: str) -> str | None:
    """Why the Secret's ``cacert`` cannot be a CA bundle, or None."""
    if "-----BEGIN CERTIFICATE-----" not in pem:
        return f"the Secret's key {CACERT_KEY!r} holds no PEM certificate"
    return None


def write_cacert(pem: str) -> str:
    """Write ``pem`` to a 0600 file in a new 0700 directory under the temp dir; its path.

    The file lives as long as the connection using it (TLS reads it at every new
    connection to the cloud): :func:`remove_cacert` when that connection goes.
    """
    directory = tempfile.mkdtemp(prefix="kumo-ca-")  # 0700, a name no one else holds
    path = os.path.join(directory, "cacert.pem")
    try:
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as handle:
            handle.write(pem)
    except BaseException:
        remove_cacert(path)
        raise
    return path


def remove_cacert(path: str) -> None:
    """Remove a file :func:`write_cacert` wrote, and its directory."""
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)

"""Text a kind reads from a ConfigMap or Secret key in its object's own namespace (a
VirtualMachine's initScript, a KeyPair's public key), with the errors that name the
field and never the value.

The references themselves are declared in :mod:`kumo.kinds.references`, so a changed
ConfigMap (watched) or Secret (at the resync) re-queues the objects that read it.
"""

from __future__ import annotations

import base64
import binascii

from kumo.engine.errors import TerminalError
from kumo.engine.objects import Context


async def from_config_map(ctx: Context, namespace: str, name: str, key: str, field: str) -> str:
    config_map = await ctx.kube.get_config_map(namespace, name)
    if config_map is None:
        raise TerminalError("ConfigMapNotFound", f"ConfigMap {name!r} not found", field=field)
    data = config_map.get("data") or {}
    if key not in data:
        raise TerminalError(
            "ConfigMapKeyNotFound", f"key {key!r} not in ConfigMap {name!r}", field=field
        )
    return str(data[key])


async def from_secret(ctx: Context, namespace: str, name: str, key: str, field: str) -> str:
    """A Secret's key as text. Messages name the Secret and key, never the value."""
    try:
        secret = await ctx.kube.get_secret(namespace, name)
    except TerminalError as error:
        if error.reason != "KubernetesForbidden":
            raise
        raise TerminalError(
            "SecretForbidden",
            f"Kumo may not read Secret {name!r} here: boot Secrets are opt-in per namespace "
            "(kubectl create rolebinding kumo-boot-secrets --clusterrole=kumo-boot-secrets "
            "--serviceaccount=kumo-system:kumo)",
            field=field,
        ) from None
    if secret is None:
        raise TerminalError("SecretNotFound", f"Secret {name!r} not found", field=field)
    data = secret.get("data") or {}
    if key not in data:
        raise TerminalError("SecretKeyNotFound", f"key {key!r} not in Secret {name!r}", field=field)
    try:
        return base64.b64decode(data[key], validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise TerminalError(
            "SecretKeyNotText", f"key {key!r} of Secret {name!r} is not UTF-8 text", field=field
        ) from None

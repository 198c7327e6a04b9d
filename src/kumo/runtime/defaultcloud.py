"""`kumo run`'s default cloud — ``--credentials-secret`` (deploy/default-cloud's Secret)
or ``--clouds-yaml`` — read at startup and again every :data:`REREAD_SECONDS`, so that
rotating the Secret (or the file a mounted Secret fills) needs no restart.

When what is read differs from the cloud in use, the operator logs ``the default cloud
changed`` (INFO), the registry takes the new credentials, and every object of a
namespace without its own Secret is looked at again at once (one held on
``CredentialsInvalid`` too). A read that fails (the API server away, the file being
replaced) keeps the cloud in use. Called by :mod:`kumo.runtime.operator`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from kumo.cloud import tenancy
from kumo.cloud.credentials import CloudRegistry, CloudSource, SecretReader

log = logging.getLogger("kumo.defaultcloud")

#: How often the default cloud is read again (a namespace's Secret: SECRET_TTL, the same).
REREAD_SECONDS = 30.0


async def read(
    credentials_secret: str | None, clouds_yaml: str | None, cloud: str, read_secret: SecretReader
) -> CloudSource | None:
    """The default cloud as given now: the Secret's ``clouds.yaml`` (its cloud: the
    Secret's key ``cloud``, else ``cloud``), else the file's; None without either, or
    while the Secret is empty (deploy/ ships it empty)."""
    if credentials_secret:
        namespace, _, name = credentials_secret.partition("/")
        data = await read_secret(namespace, name)
        if not data or "clouds.yaml" not in data:
            return None
        origin = f"default Secret {credentials_secret}"
        return CloudSource(
            data["clouds.yaml"],
            data.get("cloud", cloud),
            origin,
            cacert=data.get(tenancy.CACERT_KEY),
            rules=None,  # the operator's own: not held to the namespaces' rules
        )
    if clouds_yaml:
        text = await asyncio.to_thread(Path(clouds_yaml).read_text)
        return CloudSource(text, cloud, f"--clouds-yaml {clouds_yaml}", rules=None)
    return None


def describe(source: CloudSource | None, given: str | None) -> str:
    """The default cloud for a log line (never a value from its clouds.yaml)."""
    if source is None:
        return f"none ({given} has no key clouds.yaml)" if given else "none"
    return f"cloud {source.cloud!r} of {source.origin}"


class DefaultCloudFollower:
    """Reads the default cloud again every ``interval`` and hands a changed one over."""

    def __init__(
        self,
        reader: Callable[[], Awaitable[CloudSource | None]],
        clouds: CloudRegistry,
        changed: Callable[[], None],
        given: str | None = None,
        interval: float = REREAD_SECONDS,
    ) -> None:
        self._read = reader
        self._clouds = clouds
        self._changed = changed
        self._given = given
        self.interval = interval
        self._failing = False

    async def check(self) -> bool:
        """Read once; True when the default cloud changed (and was handed over)."""
        try:
            source = await self._read()
        except Exception as error:
            if not self._failing:  # once per outage, not every interval
                log.warning(
                    "the default cloud could not be read again (%s); keeping the one in use",
                    type(error).__name__,
                )
            self._failing = True
            return False
        self._failing = False
        if not self._clouds.set_default(source):
            return False
        log.info("the default cloud changed: now %s", describe(source, self._given))
        self._changed()
        return True

    async def run(self) -> None:
        """Check every ``interval`` until cancelled."""
        while True:
            await asyncio.sleep(self.interval)
            await self.check()

"""An in-memory Nova keypair API with the manners that matter to Kumo (checked on the lab's
Nova, Zed: tests/integration/test_keypairs.py).

* Keypairs are addressed by name; a second one of a name is refused (Nova's 409).
* The public key is stored exactly as given, comment and all, and shown back in every
  listing; the fingerprint is the MD5 of the key data. There is no update.
* A deleted keypair is gone at once.
"""

from __future__ import annotations

import base64
import hashlib

from kumo.cloud import model
from kumo.engine.errors import TerminalError, TransientError
from kumo.ports import KeyPairsPort

#: A real ed25519 key (its private half is thrown away) and Nova's fingerprint of it.
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIuJHkoy6WhJgIhZA/DE9yltqIlYP/KEgvPeU+Y7AcUe"
KEY_FINGERPRINT = "c3:84:19:7a:8d:87:23:67:8f:28:73:cc:50:c9:6e:cb"
OTHER_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOB3slJYeddLBNCsRNN1u+i93N9IfvaCXzbCIZAN+DsC"
ECDSA_KEY = (
    "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBC75fOIv8aVm8R/aJI4L"
    "WzZxheqqm/0KZDUb61To7mmRUSmt9V73xGRNbIhoMyEaIOZB6kscVh7J/2liZCKB69g="
)


def fingerprint(public_key: str) -> str:
    digest = hashlib.md5(base64.b64decode(public_key.split(" ")[1])).hexdigest()
    return ":".join(digest[i : i + 2] for i in range(0, 32, 2))


class FakeKeyPairs(KeyPairsPort):
    region: str | None = "tokyo1"

    async def project_id(self) -> str | None:
        return "project-tokyo1"

    def __init__(self) -> None:
        self.keypairs: dict[str, model.KeyPair] = {}
        self.calls: list[str] = []

    # -- helpers for tests ----------------------------------------------------------------

    def add(self, name: str, public_key: str) -> model.KeyPair:
        """Out of band: a keypair someone (or a crashed Kumo) made."""
        keypair = model.KeyPair(name, public_key, fingerprint(public_key), "ssh")
        self.keypairs[name] = keypair
        return keypair

    def delete_out_of_band(self, name: str) -> None:
        del self.keypairs[name]

    # -- the API --------------------------------------------------------------------------

    async def fetch_keypairs(self) -> list[model.KeyPair]:
        self.calls.append("fetch_keypairs")
        return list(self.keypairs.values())

    async def get_keypair(self, name: str) -> model.KeyPair | None:
        self.calls.append("get_keypair")
        return self.keypairs.get(name)

    async def list_owned_keypairs(self, uid: str) -> list[model.KeyPair]:
        self.calls.append("list_owned_keypairs")
        return [k for k in self.keypairs.values() if model.keypair_owner(k.public_key) == uid]

    async def create_keypair(self, name: str, public_key: str) -> model.KeyPair:
        self.calls.append("create_keypair")
        if name in self.keypairs:
            raise TransientError("CloudBusy", f"create keypair: Key pair {name!r} already exists.")
        try:
            return self.add(name, public_key)
        except (IndexError, ValueError):
            raise TerminalError(
                "CloudRejected", "create keypair: Keypair data is invalid", field="spec.publicKey"
            ) from None

    async def delete_keypair(self, name: str) -> None:
        self.calls.append("delete_keypair")
        self.keypairs.pop(name, None)

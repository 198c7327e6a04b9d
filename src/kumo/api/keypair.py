"""KeyPair (short name `kp`): one Nova keypair, whose public key is inline or read from a
ConfigMap or Secret key.

Nova keypairs have no tags, metadata or description, and cannot be changed once made:
Kumo's ownership marker is the last word of the public key's comment
(``ssh-ed25519 AAAA… you@laptop kumo-owner=<uid>``), which Nova stores as given and
shows back (docs/resources.md, "KeyPair", says why).
"""

from __future__ import annotations

from pydantic import ConfigDict, Field

from kumo.api.common import (
    ConfigMapKeyRef,
    ImportableSpec,
    KumoModel,
    ManagedSpec,
    ManagedStatus,
    Rule,
    SecretKeyRef,
    exactly_one_of,
)

#: The key types Kumo accepts (what Nova's fingerprinting, pyca/cryptography, loads and
#: OpenSSH calls them).
KEY_TYPES = (
    "ssh-rsa",
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
)
#: An OpenSSH 16384-bit RSA key is about 2,800 characters; the comment gets the rest.
PUBLIC_KEY_MAX = 16_384
#: Nova's limit on a keypair name.
NAME_MAX = 255
#: One OpenSSH public key line: type, base64 key, optional comment (RE2, for CEL).
PUBLIC_KEY_PATTERN = r"^\s*(" + "|".join(KEY_TYPES) + r") +[A-Za-z0-9+/]+={0,3}([ \t][^\n]*)?\s*$"
#: What Nova takes as a keypair name before microversion 2.92 (2.92 adds ``@`` and ``.``):
#: letters, digits, ``_``, ``-`` and inner spaces.
NAME_PATTERN = r"^[a-zA-Z0-9_-]([a-zA-Z0-9_ -]*[a-zA-Z0-9_-])?$"


class PublicKeyFrom(KumoModel):
    """Where to read the public key. Give exactly one; the key is read in the object's own
    namespace, and a change of it replaces the keypair."""

    model_config = ConfigDict(json_schema_extra=exactly_one_of("configMapRef", "secretRef"))

    config_map_ref: ConfigMapKeyRef | None = None
    """A ConfigMap key holding the public key (a change is noticed at once: ConfigMaps
    are watched)."""
    secret_ref: SecretKeyRef | None = None
    """A Secret key holding the public key (noticed at the next resync; the namespace must
    opt in to Kumo reading its Secrets: RoleBinding to `kumo-boot-secrets`)."""


class KeyPairSpec(ManagedSpec, ImportableSpec):
    """Desired state of a KeyPair. Give exactly one of `publicKey` and `publicKeyFrom`."""

    model_config = ConfigDict(json_schema_extra=exactly_one_of("publicKey", "publicKeyFrom"))

    cel_rules = (
        Rule(
            f"!has(self.publicKey) || self.publicKey.matches(r'{PUBLIC_KEY_PATTERN}')",
            "spec.publicKey must be one OpenSSH public key line: its type (ssh-rsa, "
            "ssh-ed25519, ecdsa-sha2-nistp256/384/521), the base64 key, an optional comment",
        ),
    )

    name: str | None = Field(default=None, min_length=1, max_length=NAME_MAX, pattern=NAME_PATTERN)
    """The Nova keypair's name, what servers are booted with (`key_name`): letters, digits,
    `_`, `-` and inner spaces. Default: `<namespace>-<metadata.name>`, each `.` as `_`
    (keypairs belong to the cloud user, which namespaces may share). A VirtualMachine's
    `keyName` names this object, not the Nova keypair. Changing it replaces the keypair."""
    public_key: str | None = Field(default=None, min_length=1, max_length=PUBLIC_KEY_MAX)
    """The OpenSSH public key, inline (`ssh-ed25519 AAAA… comment`). Nova cannot change a
    keypair: a different key replaces it (servers already booted keep the old key)."""
    public_key_from: PublicKeyFrom | None = None
    """Read the public key from a ConfigMap or Secret key (same namespace)."""


class KeyPairStatus(ManagedStatus):
    """Observed state of a KeyPair. `id` is the Nova keypair's name (Nova addresses
    keypairs by name)."""

    key_name: str | None = None
    """The Nova keypair's name: what a VirtualMachine naming this KeyPair boots with."""
    fingerprint: str | None = None
    """Nova's fingerprint of the key (MD5 of the key, as `ssh-keygen -l -E md5` shows)."""
    key_type: str | None = None
    """The key's type, e.g. `ssh-ed25519`."""
    releasing: str | None = None
    """Only while an Orphan deletion re-creates the keypair with the orphan mark: the
    public key being put back (so a crash between Nova's delete and create loses
    nothing)."""

"""KeyPair decisions, free of I/O: the Nova name, the public key checked and marked,
whether the keypair Nova holds is the one the spec asks for.

Nova keypairs have no tags, metadata or description and cannot be changed. Kumo's
ownership marker is the last word of the public key's comment: the key Kumo sends is
``<type> <base64> [the user's comment] kumo-owner=<uid>@<cluster>`` (kumo.ports.markers). Nova stores the key as given
and shows it back in every listing; the comment is not part of the key (the
fingerprint and what a server accepts are the same), and no one can edit it out without
deleting the keypair. ``deletionPolicy: Orphan`` makes the keypair again with
``kumo-orphan=<uid>`` in the marker's place.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from dataclasses import dataclass

from kumo.api.keypair import KEY_TYPES, KeyPairSpec
from kumo.engine.dryrun import Change
from kumo.engine.errors import TerminalError
from kumo.ports.model import (
    ORPHAN_PREFIX,
    OWNER_PREFIX,
    KeyPair,
    keypair_owner,
    owner_word,
    released_words,
)

#: Kumo's own words in a comment: never taken from the user's key, never compared.
KUMO_WORDS = (OWNER_PREFIX, ORPHAN_PREFIX)


@dataclass(frozen=True)
class PublicKey:
    """One OpenSSH public key: its type, its base64 data and the comment's words."""

    type: str
    data: str
    comment: tuple[str, ...] = ()

    @property
    def fingerprint(self) -> str:
        """Nova's fingerprint: the MD5 of the key data, as colon-separated hex."""
        digest = hashlib.md5(base64.b64decode(self.data), usedforsecurity=False).hexdigest()
        return ":".join(digest[i : i + 2] for i in range(0, len(digest), 2))

    def text(self, *extra: str) -> str:
        return " ".join([self.type, self.data, *self.comment, *extra])


def nova_name(spec: KeyPairSpec, namespace: str, name: str) -> str:
    """``spec.name``, else ``<namespace>-<name>``: keypairs belong to the cloud user, and
    namespaces sharing credentials must not take each other's names. Nova refuses a
    ``.`` in a name (before microversion 2.92); Kubernetes names have no ``_``, so ``.``
    becomes ``_`` without two objects ever meeting on one name."""
    return spec.name or f"{namespace}-{name}".replace(".", "_")


def parse(text: str, field: str) -> PublicKey:
    """The key in ``text`` (one OpenSSH public key line), or ``InvalidPublicKey`` naming
    ``field`` and what is wrong. Kumo's own marker words in the comment are dropped."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines:
        raise _invalid("is empty: give one OpenSSH public key", field)
    if len(lines) != 1:
        raise _invalid(f"holds {len(lines)} lines: give exactly one public key", field)
    words = lines[0].split()
    if len(words) < 2 or words[0] not in KEY_TYPES:
        given = repr(words[0][:24])
        raise _invalid(
            f"starts with {given}: expected an OpenSSH public key, '<type> <base64 key> "
            f"[comment]' with type one of {', '.join(KEY_TYPES)}",
            field,
        )
    kind, data = words[0], words[1]
    try:
        blob = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise _invalid(f"the {kind} key is not valid base64", field) from None
    inner = _embedded_type(blob)
    if inner != kind:
        what = f"says it is {inner!r}" if inner else "is not a key"
        raise _invalid(f"the key data {what}, not {kind!r} (truncated or mixed up?)", field)
    comment = tuple(w for w in words[2:] if not w.startswith(KUMO_WORDS))
    return PublicKey(kind, data, comment)


def _embedded_type(blob: bytes) -> str | None:
    """The key type an OpenSSH key blob starts with (a length-prefixed string)."""
    if len(blob) < 4:
        return None
    (length,) = struct.unpack(">I", blob[:4])
    if length > 64 or len(blob) < 4 + length:
        return None
    try:
        return blob[4 : 4 + length].decode("ascii")
    except UnicodeDecodeError:
        return None


def _invalid(problem: str, field: str) -> TerminalError:
    return TerminalError("InvalidPublicKey", problem, field=field)


def marked(key: PublicKey, uid: str) -> str:
    """The public key Kumo gives Nova: the user's key and comment, then the marker."""
    return key.text(owner_word(uid))


def released(public_key: str, uid: str) -> str:
    """A keypair's public key with ``uid``'s marker replaced by its orphan mark."""
    return released_words(public_key, uid)


def owner(keypair: KeyPair) -> str | None:
    return keypair_owner(keypair.public_key)


def material(public_key: str) -> tuple[str, ...]:
    """What makes a key the key: its type and data (the comment is not part of it)."""
    return tuple(public_key.split()[:2])


def fingerprint_of(public_key: str) -> str:
    """Nova's fingerprint of a stored key, for messages (its type and data, else '?')."""
    words = public_key.split()
    try:
        return PublicKey(words[0], words[1]).fingerprint
    except (IndexError, binascii.Error, ValueError):
        return "?"


def label(public_key: str) -> str:
    """A stored key as messages and drift show it: its fingerprint and its comment, without
    Kumo's own words (never the key itself)."""
    return " ".join([fingerprint_of(public_key), *_comment(public_key)])


def _comment(public_key: str) -> list[str]:
    return [w for w in public_key.split()[2:] if not w.startswith(KUMO_WORDS)]


def replacement(keypair: KeyPair, name: str, public_key: str) -> tuple[str, Change] | None:
    """Why the keypair Nova holds must be made again (Nova cannot change one), with the
    spec field that changed; None when it is the one the spec asks for. The comment
    counts (Nova shows it to everyone who reads the keypair); whitespace and Kumo's own
    words do not (an imported keypair only observed has no marker)."""
    if keypair.name != name:
        return f"spec.name is {name!r}", Change("spec.name", keypair.name, name)
    if material(keypair.public_key) != material(public_key):
        why = "a different key"
    elif _comment(keypair.public_key) != _comment(public_key):
        why = "a different comment"
    else:
        return None
    change = Change("spec.publicKey", label(keypair.public_key), label(public_key))
    return f"the spec holds {why} (Nova cannot change a keypair)", change


def import_mismatches(keypair: KeyPair, name: str, key: PublicKey, field: str) -> list[Change]:
    """What an existing keypair to import has that the spec does not ask for (old = the
    keypair's): its name, and its key (compared by type and data, shown by fingerprint;
    the comment may differ, the marker is added to the spec's)."""
    found = []
    if keypair.name != name:
        found.append(Change("spec.name", keypair.name, name))
    if material(keypair.public_key) != (key.type, key.data):
        found.append(Change(field, fingerprint_of(keypair.public_key), key.fingerprint))
    return found


def status(keypair: KeyPair) -> dict[str, object]:
    words = keypair.public_key.split()
    return {
        "id": keypair.name,
        "keyName": keypair.name,
        "fingerprint": keypair.fingerprint or fingerprint_of(keypair.public_key),
        "keyType": words[0] if words else None,
    }

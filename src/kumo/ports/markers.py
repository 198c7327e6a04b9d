"""Kumo's ownership marker: what Kumo writes on a cloud resource to say "this object of
this cluster owns it", and how it reads one back. Everything that writes or reads a
marker comes here (the kinds, the adapter, the cloud watch), so the format lives in
one place; :mod:`kumo.ports.model` re-exports it.

Where a resource can hold it:

* **tags** (Nova servers, Octavia load balancers and their children, Neutron networks,
  routers, security groups and floating IPs): ``kumo``, ``kumo-owner=<uid>`` and
  ``kumo-cluster=<cluster>``;
* **metadata** (Cinder volumes and snapshots, Manila shares): ``kumo: managed``,
  ``kumo-owner: <uid>`` and ``kumo-cluster: <cluster>``;
* **text** (Designate recordset descriptions, floating IP descriptions, Nova server
  group names, a keypair's public-key comment): the single word
  ``kumo-owner=<uid>@<cluster>``.

``<cluster>`` is this Kubernetes cluster's identity (:func:`cluster`): set once at
startup by :mod:`kumo.runtime.cluster` (the ``kube-system`` namespace's UID, or
``--cluster-id``). Several clusters may share one OpenStack project or user; each
reads the others' markers as foreign.

Reading a marker (:func:`owner_of`, :func:`metadata_owner`, :func:`text_owner`) gives:

* the object's UID for this cluster's marker;
* the object's UID for a **legacy** marker (one written before markers named the
  cluster): only the object with that UID takes it over, and re-marks it (the engine's
  ownership routine); the watch never lists it for the orphan sweep;
* ``<uid>@<cluster>`` for another cluster's marker: equal to no object's UID, so
  ``owner_of(r) == obj.uid`` stays the one test of ownership, and the cloud watch
  indexes such a resource apart from this cluster's.

``deletionPolicy: Orphan`` releases what it leaves: the marker (cluster included) is
replaced by ``kumo-orphan=<uid>`` (tag, description word or metadata key). A released
resource has no owner, so the orphan sweep leaves it alone and ``spec.import`` may take it
over; the mark says where it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kumo.api.common import CLUSTER_ID_MAX

__all__ = [
    "CLUSTER_KEY",
    "CLUSTER_PREFIX",
    "MANAGED_TAG",
    "ORPHAN_PREFIX",
    "OWNER_PREFIX",
    "SHARE_MANAGED_KEY",
    "SHARE_MANAGED_VALUE",
    "SHARE_ORPHAN_KEY",
    "SHARE_OWNER_KEY",
    "Marker",
    "check_cluster_id",
    "cluster",
    "cluster_from_uid",
    "cluster_tag",
    "is_legacy",
    "legacy_metadata",
    "legacy_tags",
    "marked_metadata",
    "marked_tags",
    "marker_metadata",
    "marker_of",
    "marker_tags",
    "metadata_marker",
    "metadata_owner",
    "of_this_cluster",
    "owner_of",
    "owner_tag",
    "owner_word",
    "released_metadata",
    "released_tags",
    "released_words",
    "set_cluster",
    "text_marker",
    "text_owner",
    "unreleased",
    "user_text",
    "with_word",
]

MANAGED_TAG = "kumo"
OWNER_PREFIX = "kumo-owner="
CLUSTER_PREFIX = "kumo-cluster="
ORPHAN_PREFIX = "kumo-orphan="

#: Metadata keys of the marker (Cinder volumes and snapshots, Manila shares and access
#: rules): ``kumo: managed`` (for the fleet listing), ``kumo-owner: <uid>`` (the owning
#: object), ``kumo-cluster: <cluster>`` (its cluster).
SHARE_MANAGED_KEY = "kumo"
SHARE_MANAGED_VALUE = "managed"
SHARE_OWNER_KEY = "kumo-owner"
CLUSTER_KEY = "kumo-cluster"
SHARE_ORPHAN_KEY = "kumo-orphan"

# -- the cluster's identity ---------------------------------------------------------------------

#: A cluster ID: lower-case letters, digits and dashes, at most 12 (the marker word's room
#: in a description is counted for 12: kumo.api.common.MARKER_WORD_MAX).
_CLUSTER_ID = re.compile(rf"^[a-z0-9]([-a-z0-9]{{0,{CLUSTER_ID_MAX - 1}}})$")

_cluster: str | None = None


def cluster_from_uid(namespace_uid: str) -> str:
    """A cluster's ID from its ``kube-system`` namespace's UID: its first 12 hex digits."""
    return namespace_uid.replace("-", "").lower()[:CLUSTER_ID_MAX]


def check_cluster_id(value: str) -> str:
    """``value`` if it can be a cluster ID, else ValueError saying what one looks like."""
    if not _CLUSTER_ID.match(value):
        raise ValueError(
            f"cluster ID {value!r}: expected 1 to {CLUSTER_ID_MAX} lower-case letters, "
            "digits or dashes (as derived: the first 12 hex digits of the kube-system "
            "namespace's UID)"
        )
    return value


def set_cluster(cluster_id: str | None) -> None:
    """Set this process's cluster ID (once, at startup; None unsets it, for tests)."""
    global _cluster
    _cluster = check_cluster_id(cluster_id) if cluster_id is not None else None


def cluster() -> str:
    """This process's cluster ID. Unset, Kumo can tell neither its own markers nor write
    one: that is a bug of the caller (``kumo run`` sets it before anything else)."""
    if _cluster is None:
        raise RuntimeError("Kumo's cluster ID is not set (kumo.runtime.cluster sets it at start)")
    return _cluster


# -- writing --------------------------------------------------------------------------------------


def owner_tag(uid: str) -> str:
    return f"{OWNER_PREFIX}{uid}"


def cluster_tag() -> str:
    return f"{CLUSTER_PREFIX}{cluster()}"


def marker_tags(uid: str) -> list[str]:
    return [MANAGED_TAG, owner_tag(uid), cluster_tag()]


def marker_metadata(uid: str) -> dict[str, str]:
    return {SHARE_MANAGED_KEY: SHARE_MANAGED_VALUE, SHARE_OWNER_KEY: uid, CLUSTER_KEY: cluster()}


def owner_word(uid: str) -> str:
    """The marker as one word of a name or description: ``kumo-owner=<uid>@<cluster>``."""
    return f"{OWNER_PREFIX}{uid}@{cluster()}"


def with_word(text: str | None, word: str, limit: int) -> str:
    """``text`` then ``word``, ``text`` cut short so that the whole fits ``limit``
    characters (a server group's name: Nova allows 255)."""
    room = limit - len(word) - 1
    head = (text or "")[: max(room, 0)].rstrip()
    return f"{head} {word}" if head else word


def _kumo_tag(tag: str) -> bool:
    return tag == MANAGED_TAG or tag.startswith((OWNER_PREFIX, CLUSTER_PREFIX, ORPHAN_PREFIX))


def marked_tags(tags: list[str], uid: str) -> list[str]:
    """``tags`` carrying ``uid``'s marker of this cluster, and no other marker or orphan
    mark (an import takes a released resource over; a legacy marker is re-marked)."""
    return [*(t for t in tags if not _kumo_tag(t)), *marker_tags(uid)]


def marked_metadata(metadata: dict[str, str], uid: str) -> dict[str, str]:
    """``metadata`` carrying ``uid``'s marker of this cluster, without an orphan mark."""
    kept = {k: v for k, v in metadata.items() if k != SHARE_ORPHAN_KEY}
    return {**kept, **marker_metadata(uid)}


# -- releasing (deletionPolicy: Orphan) -----------------------------------------------------------


def released_tags(tags: list[str], uid: str) -> list[str]:
    """``tags`` with ``uid``'s marker (cluster tag included: a released resource has no
    owner) replaced by its orphan mark."""
    kept = [
        t
        for t in tags
        if t not in (owner_tag(uid), MANAGED_TAG) and not t.startswith(CLUSTER_PREFIX)
    ]
    orphan = f"{ORPHAN_PREFIX}{uid}"
    return kept if orphan in kept else [*kept, orphan]


def released_metadata(metadata: dict[str, str], uid: str) -> dict[str, str]:
    """Metadata with ``uid``'s marker (cluster key included) replaced by the orphan mark."""
    marker_keys = (SHARE_MANAGED_KEY, SHARE_OWNER_KEY, CLUSTER_KEY)
    kept = {k: v for k, v in metadata.items() if k not in marker_keys}
    return {**kept, SHARE_ORPHAN_KEY: uid}


def _is_owner_word(word: str, uid: str) -> bool:
    """``uid``'s marker word of this cluster, or its legacy one."""
    return word == owner_tag(uid) or word == owner_word(uid)


def released_words(text: str, uid: str, limit: int | None = None) -> str:
    """A name or description with ``uid``'s marker word replaced by the orphan mark, or
    only removed when the mark would not fit in ``limit`` characters (released already:
    kept as it is)."""
    words = [w for w in text.split() if not _is_owner_word(w, uid)]
    if f"{ORPHAN_PREFIX}{uid}" in words:
        return " ".join(words)
    marked = " ".join([*words, f"{ORPHAN_PREFIX}{uid}"])
    return marked if limit is None or len(marked) <= limit else " ".join(words)


def user_text(text: str | None) -> str:
    """A name or description without Kumo's marker and orphan words: what the user wrote
    (a re-marked description differs in Kumo's bookkeeping only, not from the spec)."""
    return " ".join(
        w for w in (text or "").split() if not w.startswith((OWNER_PREFIX, ORPHAN_PREFIX))
    )


def unreleased(tags: list[str]) -> list[str]:
    """Tags without any orphan mark (an import takes over a released resource)."""
    return [t for t in tags if not t.startswith(ORPHAN_PREFIX)]


# -- reading --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Marker:
    """A marker as read from a resource: the owning object's UID and its cluster (None:
    a legacy marker, written before markers named the cluster)."""

    uid: str
    cluster: str | None = None

    @property
    def owner(self) -> str:
        """What :func:`owner_of` answers: the UID, or ``<uid>@<cluster>`` when the
        marker is another cluster's (no object's UID)."""
        if self.cluster is None or self.cluster == cluster():
            return self.uid
        return f"{self.uid}@{self.cluster}"

    @property
    def current(self) -> bool:
        """This cluster's marker as Kumo writes it now (what the orphan sweep may act on)."""
        return self.cluster == cluster()


def marker_of(tags: list[str] | None) -> Marker | None:
    """The marker in a resource's tags, or in the words of a name or description (a
    ``kumo-owner=<uid>@<cluster>`` word, or ``kumo-owner=<uid>`` with a
    ``kumo-cluster=<cluster>`` tag beside it, or alone: legacy)."""
    found: str | None = None
    where: str | None = None
    for tag in tags or []:
        if found is None and tag.startswith(OWNER_PREFIX):
            found = tag[len(OWNER_PREFIX) :]
        elif where is None and tag.startswith(CLUSTER_PREFIX):
            where = tag[len(CLUSTER_PREFIX) :]
    if not found:
        return None
    uid, at, word_cluster = found.partition("@")
    if at:
        return Marker(uid, word_cluster or None) if uid else None
    return Marker(uid, where or None)


def text_marker(text: str | None) -> Marker | None:
    """The marker word in a name, a description or a public key's comment."""
    return marker_of((text or "").split())


def metadata_marker(metadata: dict[str, str] | None) -> Marker | None:
    """The marker in a volume's, snapshot's, share's or access rule's metadata."""
    uid = (metadata or {}).get(SHARE_OWNER_KEY)
    if not uid:
        return None
    return Marker(uid, (metadata or {}).get(CLUSTER_KEY) or None)


def is_legacy(marker: Marker | None) -> bool:
    """A marker from before markers named the cluster: its object re-marks it."""
    return marker is not None and marker.cluster is None


def of_this_cluster(owner: str | None) -> bool:
    """Is ``owner`` (as :func:`owner_of` answers) an object of this cluster's?"""
    return owner is not None and "@" not in owner


def legacy_tags(tags: list[str] | None) -> bool:
    """Do the tags carry a legacy marker (the owner's, no cluster tag)?"""
    return is_legacy(marker_of(tags))


def legacy_metadata(metadata: dict[str, str] | None) -> bool:
    """Does the metadata carry a legacy marker (the owner's key, no cluster key)?"""
    return is_legacy(metadata_marker(metadata))


def _owner(marker: Marker | None) -> str | None:
    return marker.owner if marker is not None else None


def owner_of(tags: list[str] | None) -> str | None:
    """The owner in a resource's tags (or a text's words): see the module docstring."""
    return _owner(marker_of(tags))


def text_owner(text: str | None) -> str | None:
    """The owner in a name, a description or a public key's comment."""
    return _owner(text_marker(text))


def metadata_owner(metadata: dict[str, str] | None) -> str | None:
    """The owner in a volume's, snapshot's, share's or access rule's metadata."""
    return _owner(metadata_marker(metadata))

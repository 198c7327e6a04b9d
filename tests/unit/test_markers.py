"""Kumo's ownership marker (kumo.ports.markers): what it writes, what it reads back for
this cluster's, a legacy and another cluster's marker, what releasing leaves, and that
the room the API keeps for the marker word is enough."""

from __future__ import annotations

import pytest

from kumo.api.common import MARKER_ROOM, MARKER_WORD_MAX
from kumo.api.dnsrecord import DNS_DESCRIPTION_MAX
from kumo.api.floatingip import FIP_DESCRIPTION_MAX
from kumo.ports import markers, model

UID = "6f1c0c8e-0000-4000-8000-00000000000a"
OTHER = "0123456789ab"


def test_tags_round_trip_and_name_the_cluster(cluster_id: str) -> None:
    tags = markers.marker_tags(UID)
    assert tags == ["kumo", f"kumo-owner={UID}", f"kumo-cluster={cluster_id}"]
    assert markers.owner_of(tags) == UID
    assert markers.marker_of(tags) == markers.Marker(UID, cluster_id)
    assert markers.marker_of(tags).current  # type: ignore[union-attr]
    assert markers.owner_of(["team-a", *tags]) == UID, "other tags do not matter"
    assert markers.owner_of(["kumo"]) is None and markers.owner_of(None) is None


def test_metadata_round_trip_and_name_the_cluster(cluster_id: str) -> None:
    metadata = markers.marker_metadata(UID)
    assert metadata == {"kumo": "managed", "kumo-owner": UID, "kumo-cluster": cluster_id}
    assert markers.metadata_owner({"team": "db", **metadata}) == UID
    assert markers.metadata_owner({"kumo": "managed"}) is None
    assert markers.metadata_owner(None) is None


def test_the_text_marker_is_one_word_naming_the_cluster(cluster_id: str) -> None:
    word = markers.owner_word(UID)
    assert word == f"kumo-owner={UID}@{cluster_id}" and len(word.split()) == 1
    assert markers.text_owner(f"web tier {word}") == UID
    assert markers.text_owner("not-kumo-owner=x by hand") is None, "a word, not a substring"
    assert markers.text_owner(None) is None and markers.text_owner("") is None
    key = f"ssh-ed25519 AAAAC3Nza me@laptop {word}"
    assert model.keypair_owner(key) == UID
    assert model.keypair_owner(f"kumo-owner={UID} AAAA") is None, "the key data is no marker"


def test_another_clusters_marker_is_no_objects_uid() -> None:
    tags = ["kumo", f"kumo-owner={UID}", f"kumo-cluster={OTHER}"]
    text = f"web kumo-owner={UID}@{OTHER}"
    metadata = {"kumo": "managed", "kumo-owner": UID, "kumo-cluster": OTHER}
    for owner in (
        markers.owner_of(tags),
        markers.text_owner(text),
        markers.metadata_owner(metadata),
    ):
        assert owner == f"{UID}@{OTHER}"
        assert owner != UID and not markers.of_this_cluster(owner)
    for marker in (
        markers.marker_of(tags),
        markers.text_marker(text),
        markers.metadata_marker(metadata),
    ):
        assert marker is not None and not marker.current and not markers.is_legacy(marker)
    fip = model.FloatingIP("f-1", "203.0.113.5", "pub", "DOWN", tags=[], description=text)
    assert model.floating_ip_owner(fip) == f"{UID}@{OTHER}"


def test_a_legacy_marker_is_its_uid_but_not_current() -> None:
    """Written before markers named the cluster: the object with that UID takes it over
    (and re-marks it); the orphan sweep never sees it (``current`` is False)."""
    tags = ["kumo", f"kumo-owner={UID}"]
    text = f"web kumo-owner={UID}"
    metadata = {"kumo": "managed", "kumo-owner": UID}
    assert markers.owner_of(tags) == markers.text_owner(text) == UID
    assert markers.metadata_owner(metadata) == UID
    assert markers.of_this_cluster(UID)
    for marker in (
        markers.marker_of(tags),
        markers.text_marker(text),
        markers.metadata_marker(metadata),
    ):
        assert markers.is_legacy(marker) and not marker.current  # type: ignore[union-attr]
    assert markers.legacy_tags(tags) and markers.legacy_metadata(metadata)
    assert not markers.legacy_tags(markers.marker_tags(UID))
    assert not markers.legacy_metadata(markers.marker_metadata(UID))
    assert not markers.is_legacy(None)


def test_marking_replaces_a_legacy_marker_and_an_orphan_mark_keeping_the_rest() -> None:
    legacy = ["team-a", "kumo", f"kumo-owner={UID}"]
    assert markers.marked_tags(legacy, UID) == ["team-a", *markers.marker_tags(UID)]
    released = ["team-a", f"kumo-orphan={UID}"]
    assert markers.marked_tags(released, UID) == ["team-a", *markers.marker_tags(UID)]
    once = markers.marked_tags(legacy, UID)
    assert markers.marked_tags(once, UID) == once, "marking twice changes nothing"
    metadata = {"team": "db", "kumo-owner": UID, "kumo-orphan": "x"}
    assert markers.marked_metadata(metadata, UID) == {"team": "db", **markers.marker_metadata(UID)}


def test_releasing_removes_the_cluster_too() -> None:
    tags = ["team-a", *markers.marker_tags(UID)]
    released = markers.released_tags(tags, UID)
    assert released == ["team-a", f"kumo-orphan={UID}"]
    assert markers.owner_of(released) is None
    assert markers.released_tags(released, UID) == released, "releasing twice changes nothing"
    assert markers.released_tags(["kumo", f"kumo-owner={UID}"], UID) == [f"kumo-orphan={UID}"]

    metadata = {"team": "db", **markers.marker_metadata(UID)}
    assert markers.released_metadata(metadata, UID) == {"team": "db", "kumo-orphan": UID}

    for word in (markers.owner_word(UID), f"kumo-owner={UID}"):  # this cluster's, legacy
        text = markers.released_words(f"web {word}", UID)
        assert text == f"web kumo-orphan={UID}"
        assert markers.text_owner(text) is None
        assert markers.released_words(text, UID) == text
    assert markers.released_words(f"{'x' * 150} {markers.owner_word(UID)}", UID, 160) == "x" * 150


def test_the_api_keeps_room_for_the_longest_marker_word() -> None:
    longest = f"kumo-owner={'f' * 36}@{'f' * 12}"
    assert len(longest) == MARKER_WORD_MAX == 60 and MARKER_ROOM == 61
    assert DNS_DESCRIPTION_MAX == 160 - MARKER_ROOM
    assert FIP_DESCRIPTION_MAX == 255 - MARKER_ROOM
    markers.set_cluster("f" * 12)
    assert len(f"{'x' * DNS_DESCRIPTION_MAX} {markers.owner_word('f' * 36)}") == 160


def test_a_name_is_cut_short_so_the_marker_word_fits() -> None:
    word = markers.owner_word(UID)
    name = markers.with_word("n" * 300, word, 255)
    assert len(name) == 255 and name.endswith(f" {word}")
    assert markers.text_owner(name) == UID
    assert (
        markers.with_word("team-a-web-anti-affinity", word, 255)
        == f"team-a-web-anti-affinity {word}"
    )
    assert markers.with_word("", word, 255) == word


def test_the_cluster_id_comes_from_kube_systems_uid_or_is_checked() -> None:
    uid = "3F2A9C1B-7D4E-4A1B-9C3D-5E6F7A8B9C0D"
    assert markers.cluster_from_uid(uid) == "3f2a9c1b7d4e"
    for good in ("3f2a9c1b7d4e", "prod", "a", "old-cluster1"):
        assert markers.check_cluster_id(good) == good
    for bad in ("", "Prod", "a@b", "a b", "-lead", "x" * 13, "kumo=1"):
        with pytest.raises(ValueError, match="cluster ID"):
            markers.check_cluster_id(bad)


def test_without_a_cluster_id_kumo_neither_writes_nor_reads_a_marker() -> None:
    markers.set_cluster(None)
    with pytest.raises(RuntimeError, match="cluster ID is not set"):
        markers.marker_tags(UID)
    with pytest.raises(RuntimeError, match="cluster ID is not set"):
        markers.owner_of(["kumo", f"kumo-owner={UID}", "kumo-cluster=abc"])

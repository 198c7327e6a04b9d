"""The marker in a Neutron description (kinds/described.py), shared by FloatingIP,
Network and SecurityGroup: written with the user's text, read back without Kumo's words,
an owner even before the tags come, released once. Spelled through kumo.ports.markers'
functions only, so the marker's format lives there."""

from __future__ import annotations

from typing import Any

import pytest

from kumo.api.common import MARKED_DESCRIPTION_MAX, MARKER_ROOM
from kumo.cloud import model
from kumo.engine.errors import TerminalError
from kumo.kinds import described

UID = "8d6b1f3e-5a4c-4e2b-9f17-0c3d2a1b4e5f"
MARKER = model.owner_word(UID)
ORPHAN = f"{model.ORPHAN_PREFIX}{UID}"


def network(**fields: Any) -> model.Network:
    return model.Network(**({"id": "net-1", "name": "default-app"} | fields))


def test_the_description_carries_the_marker_after_the_user_s_text() -> None:
    assert described.text(None, UID) == MARKER
    assert described.text("", UID) == MARKER
    assert described.text("web tier", UID) == f"web tier {MARKER}"


def test_the_api_leaves_room_for_the_marker_word() -> None:
    """The CRDs' maxLength (kumo.api.common) holds a UID's marker word as the markers
    module spells it: a longest user description still fits Neutron's 255 characters."""
    assert len(" " + MARKER) <= MARKER_ROOM
    longest = "x" * MARKED_DESCRIPTION_MAX
    assert len(described.text(longest, UID)) <= described.DESCRIPTION_MAX
    with pytest.raises(TerminalError) as caught:
        described.text("x" * 250, UID)
    assert (caught.value.reason, caught.value.field) == ("DescriptionTooLong", "spec.description")


def test_the_owner_is_the_tag_else_the_description_word() -> None:
    assert described.owner(network(tags=model.marker_tags(UID))) == UID
    assert described.owner(network(description=f"app {MARKER}")) == UID, "tags not set yet"
    assert described.owner(model.Router("r-1", "x", description=MARKER)) == UID
    assert described.owner(network(description="made by hand")) is None
    assert described.owner(network(description=f"app {ORPHAN}")) is None, "released"
    legacy = network(description=f"app {model.owner_tag(UID)}")
    assert described.owner(legacy) == UID and described.legacy(legacy), "re-marked"
    assert not described.legacy(network(description=f"app {MARKER}"))


def test_wanted_keeps_the_user_s_text_and_puts_the_marker_back() -> None:
    assert described.wanted("new", f"old {MARKER}", UID) == f"new {MARKER}"
    assert described.wanted(None, f"old {MARKER}", UID) == f"old {MARKER}", "None: as it is"
    assert described.wanted(None, "marker removed by hand", UID) == (
        f"marker removed by hand {MARKER}"
    )
    assert described.wanted("", MARKER, UID) == MARKER
    assert described.wanted(None, f"a b {ORPHAN} {MARKER}", UID) == f"a b {MARKER}"


def test_marker_tags_are_put_back_keeping_foreign_tags() -> None:
    assert described.needs_tags([], UID), "the tag call never came"
    assert described.needs_tags([MARKER], UID), "the kumo tag removed by hand"
    assert not described.needs_tags(["team-a", *model.marker_tags(UID)], UID)
    assert described.marked_tags(["team-a", ORPHAN], UID) == ["team-a", *model.marker_tags(UID)]


def test_released_swaps_both_markers_for_the_orphan_mark_once() -> None:
    tags, text = described.released(["team-a", *model.marker_tags(UID)], f"web {MARKER}", UID)
    assert tags == ["team-a", ORPHAN]
    assert text == f"web {ORPHAN}"
    # crashed between the description and the tags: the description stays as it is
    assert described.released(model.marker_tags(UID), text, UID) == ([ORPHAN], text)
    assert described.owner(network(tags=tags, description=text)) is None
